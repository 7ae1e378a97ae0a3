/*
 * corrupt-1: a backup replica trusts its log file. A flipped bit or a cut
 * tail in the log it reads back after a restart becomes a wrong key, a
 * wrong value or a wrong sequence number, which it serves, and from which
 * it asks its primary to resend only what follows: an acknowledged write
 * is read back wrong, or not at all.
 *
 *   corrupt1 primary PORT DIR [--fixed]          the primary; its log is DIR/log
 *   corrupt1 backup PORT PRIMARY DIR [--fixed]   the backup; its log is DIR/log
 *   corrupt1 client PRIMARY BACKUP K CHECK_MS    writes K keys, reads them back
 *
 * Both replicas keep a table in memory and a log of "seq key value" records
 * on disk, one a line, each written and fsynced before it is acknowledged.
 * The primary takes PUTs from clients: it logs the record, sends it to the
 * backup ("REC seq key value") if one is connected, waits for the backup's
 * "ACK seq" (or for its connection to end: a backup that is down is caught
 * up later), and answers OK. The backup, when it starts, replays its log,
 * dials the primary, says "HELLO last-seq" and appends what the primary
 * resends ("REC ..." up to "CAUGHTUP"); then it listens for clients' GETs
 * and logs and acknowledges each new record. Reads are served by both.
 *
 * The client writes k1..kK through the primary, one every GAP_MS, retrying
 * a write until it is answered OK. Then it sleeps until CHECK_MS after its
 * start (past the faults' quiet period, when a failed backup has been
 * restarted and has caught up) and reads every key from both replicas; a
 * key that is missing or different is a lost acknowledged write: exit 1.
 *
 * --fixed: every record carries a CRC-32 of its text, and a replica reading
 * its log stops at the first record whose checksum or sequence number is
 * wrong (or which has no newline), cuts the log there and fsyncs it; the
 * backup then fetches everything after the last good record from the
 * primary. A damaged log costs a resend, never a wrong answer.
 */
#include "../common/bugkv.h"

#include <stdint.h>


/* crc32 is the IEEE 802.3 CRC-32 (zlib's), bit by bit: records are short. */
static uint32_t crc32(const char *p, size_t n) {
  uint32_t c = 0xffffffffu;
  while (n--) {
    c ^= (unsigned char)*p++;
    for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
  }
  return ~c;
}

/* The replicated store, the same in both replicas. */

#define MAXR 256

static struct {
  int fixed;
  int log;                    /* fd of DIR/log, opened for appending */
  /* every record, by sequence number (1..seq), for the primary's resends */
  char rk[MAXR + 1][64], rv[MAXR + 1][64];
  int seq;
} st;

/* st_apply records record seq in memory. */
static void st_apply(int seq, const char *k, const char *v) {
  kv_set(k, v);
  if (seq >= 1 && seq <= MAXR) { /* only the primary resends, and only what it wrote */
    snprintf(st.rk[seq], sizeof st.rk[seq], "%s", k);
    snprintf(st.rv[seq], sizeof st.rv[seq], "%s", v);
  }
  if (seq > st.seq) st.seq = seq;
}

/* st_append logs record seq and fsyncs the log: durable before acknowledged. */
static void st_append(int seq, const char *k, const char *v) {
  char rec[256];
  int n = snprintf(rec, sizeof rec, "%d %s %s", seq, k, v);
  if (st.fixed) n += snprintf(rec + n, sizeof rec - n, " %08x", crc32(rec, n));
  rec[n++] = '\n';
  if (write(st.log, rec, n) != n || fsync(st.log) < 0) bn_die("log");
  st_apply(seq, k, v);
}

/*
 * st_check parses one record of the fixed format, "seq key value crc", and
 * says whether it is whole: its checksum matches its text and it follows
 * the previous record.
 */
static int st_check(char *line, int *seq, char *k, char *v) {
  char *sp = strrchr(line, ' ');
  unsigned crc;
  if (!sp || sscanf(sp + 1, "%8x", &crc) != 1 || strlen(sp + 1) != 8) return 0;
  if (crc32(line, sp - line) != crc) return 0;
  *sp = 0;
  int ok = sscanf(line, "%d %63s %63s", seq, k, v) == 3 && *seq == st.seq + 1;
  *sp = ' ';
  return ok;
}

/*
 * st_load replays DIR/log (creating it durably at the first start). The
 * buggy replica takes every line that parses as "seq key value" at its
 * word; the fixed one keeps the records up to the first damaged one and
 * cuts the log there.
 */
static void st_load(const char *dir) {
  char path[512], k[64], v[64];
  snprintf(path, sizeof path, "%s/log", dir);
  st.log = open(path, O_RDWR | O_APPEND);
  if (st.log < 0) {
    if (errno != ENOENT) bn_die(path);
    st.log = open(path, O_RDWR | O_APPEND | O_CREAT, 0644);
    if (st.log < 0 || fsync(st.log) < 0) bn_die(path);
    fsync_dir(dir);
    printf("%s: created the log\n", kv_who);
    return;
  }
  static char data[1 << 16];
  ssize_t len = read(st.log, data, sizeof data - 1);
  if (len < 0) bn_die(path);
  data[len] = 0;
  char *p = data;
  int n = 0, seq;
  while (p < data + len) {
    char *nl = memchr(p, '\n', data + len - p);
    if (st.fixed) {
      if (!nl) {
        printf("%s: record %d has no end\n", kv_who, st.seq + 1);
        break;
      }
      *nl = 0;
      if (!st_check(p, &seq, k, v)) {
        printf("%s: record %d is damaged: %s\n", kv_who, st.seq + 1, p);
        break;
      }
    } else {
      if (nl) *nl = 0;
      if (sscanf(p, "%d %63s %63s", &seq, k, v) != 3) {
        p = nl ? nl + 1 : data + len;
        continue;
      }
    }
    st_apply(seq, k, v);
    n++;
    p = nl ? nl + 1 : data + len;
  }
  if (st.fixed && p < data + len) {
    printf("%s: cut the log after record %d\n", kv_who, st.seq);
    if (ftruncate(st.log, p - data) < 0 || fsync(st.log) < 0) bn_die(path);
  }
  printf("%s: replayed %d record(s) from the log, last %d\n", kv_who, n, st.seq);
}

/* primary */

static struct bn_loop plp;
static int backup = -1; /* index in plp of the backup's connection */

static void drop_backup(const char *why) {
  printf("primary: backup gone (%s)\n", why);
  close(plp.fds[backup].fd);
  plp.fds[backup].fd = -1;
  backup = -1;
}

/* replicate sends record seq to the backup and waits for its ACK. */
static void replicate(int seq) {
  if (backup < 0) {
    printf("primary: no backup for record %d\n", seq);
    return;
  }
  struct bn_conn *c = &plp.conns[backup];
  if (!bn_trysend(c->fd, "REC %d %s %s", seq, st.rk[seq], st.rv[seq])) {
    drop_backup(strerror(errno));
    return;
  }
  char line[BN_BUF], want[32];
  snprintf(want, sizeof want, "ACK %d", seq);
  while (bn_line(c, line, sizeof line))
    if (strcmp(line, want) == 0) {
      printf("primary: backup has record %d\n", seq);
      return;
    }
  drop_backup("connection ended");
}

static void primary_line(int i, char *line) {
  int fd = plp.fds[i].fd, last;
  char k[64], v[64];
  printf("primary: %s\n", line);
  if (sscanf(line, "PUT %63s %63s", k, v) == 2) {
    if (st.seq == MAXR) {
      fprintf(stderr, "primary: log full\n");
      exit(2);
    }
    st_append(st.seq + 1, k, v);
    replicate(st.seq);
    reply(fd, "OK%s", "");
  } else if (sscanf(line, "GET %63s", k) == 1) {
    reply_get(fd, k);
  } else if (sscanf(line, "HELLO %d", &last) == 1) {
    if (backup >= 0 && backup != i) drop_backup("replaced");
    backup = i;
    if (last < 0) last = 0;
    for (int s = last + 1; s <= st.seq; s++)
      if (!bn_trysend(fd, "REC %d %s %s", s, st.rk[s], st.rv[s])) break;
    bn_trysend(fd, "CAUGHTUP");
    printf("primary: backup at %d caught up to %d\n", last, st.seq);
  } else {
    reply(fd, "ERR%s", "");
  }
}

static void primary(int port) {
  int l = bn_listen(port);
  bn_add(&plp, l);
  for (;;) {
    if (poll(plp.fds, plp.n, -1) < 0) bn_die("poll");
    if (plp.fds[0].revents & POLLIN) {
      int c = accept(l, NULL, NULL);
      if (c >= 0) bn_nodelay(c), bn_add(&plp, c);
      continue;
    }
    for (int i = 1; i < plp.n; i++) {
      if (plp.fds[i].fd < 0 || !(plp.fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      struct bn_conn *c = &plp.conns[i];
      int open = bn_fill(c);
      char line[BN_BUF];
      while (plp.fds[i].fd >= 0 && bn_take(c, line, sizeof line)) primary_line(i, line);
      if (!open && plp.fds[i].fd >= 0) {
        if (i == backup) drop_backup("connection ended");
        else close(c->fd), plp.fds[i].fd = -1;
      }
    }
  }
}

/* backup */

/* backup_rec logs a record the primary sent. */
static int backup_rec(const char *line) {
  int seq;
  char k[64], v[64];
  if (sscanf(line, "REC %d %63s %63s", &seq, k, v) != 3) return 0;
  if (seq > st.seq) st_append(seq, k, v);
  return seq;
}

/*
 * backup_lines handles the complete lines read from connection i: records
 * from the primary (connection pi), acknowledged once logged, and clients'
 * reads.
 */
static void backup_lines(struct bn_loop *lp, int i, int pi) {
  struct bn_conn *c = &lp->conns[i];
  char line[BN_BUF], k[64];
  int seq;
  while (bn_take(c, line, sizeof line)) {
    printf("backup: %s\n", line);
    if (i == pi && (seq = backup_rec(line)) > 0) bn_trysend(c->fd, "ACK %d", seq);
    else if (sscanf(line, "GET %63s", k) == 1) reply_get(c->fd, k);
    else reply(c->fd, "ERR%s", "");
  }
}

static void backup_main(int port, const char *primary_addr) {
  static struct bn_loop lp;
  struct bn_conn pc = {.fd = bn_dial(primary_addr)};
  char line[BN_BUF];
  if (!bn_trysend(pc.fd, "HELLO %d", st.seq)) bn_die("hello");
  printf("backup: HELLO %d\n", st.seq);
  for (;;) {
    if (!bn_line(&pc, line, sizeof line)) {
      fprintf(stderr, "backup: the primary went away during the catch-up\n");
      exit(2);
    }
    if (strcmp(line, "CAUGHTUP") == 0) break;
    backup_rec(line);
  }
  printf("backup: caught up to %d\n", st.seq);
  int l = bn_listen(port);
  bn_add(&lp, l);
  int pi = bn_add(&lp, pc.fd);
  lp.conns[pi] = pc; /* with what followed CAUGHTUP in the same read */
  backup_lines(&lp, pi, pi);
  for (;;) {
    if (poll(lp.fds, lp.n, -1) < 0) bn_die("poll");
    if (lp.fds[0].revents & POLLIN) {
      int c = accept(l, NULL, NULL);
      if (c >= 0) bn_nodelay(c), bn_add(&lp, c);
      continue;
    }
    for (int i = 1; i < lp.n; i++) {
      if (lp.fds[i].fd < 0 || !(lp.fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      int open = bn_fill(&lp.conns[i]);
      backup_lines(&lp, i, pi);
      if (!open) {
        if (i == pi) {
          fprintf(stderr, "backup: the primary went away\n");
          exit(2);
        }
        close(lp.fds[i].fd);
        lp.fds[i].fd = -1;
      }
    }
  }
}

/* client */

/*
 * value is what the client writes to key i: "vI-" and ten digits, so that
 * most of a record's bytes are its value, as in a real store.
 */
static const char *value(int i) {
  static char v[64];
  snprintf(v, sizeof v, "v%d-%010d", i, i * 1111);
  return v;
}

static void client(const char *paddr, const char *baddr, int k, int check_ms) {
  static struct peer peers[2];
  resolve(&peers[0], paddr);
  resolve(&peers[1], baddr);
  long long start = now_ms();
  put_all(&peers[0], k, value, start, 1);
  sleep_ms(start + check_ms - now_ms());
  for (int r = 0; r < 2; r++) check_all(&peers[r], k, value);
  printf("client: all %d acknowledged writes read back from both replicas\n", k);
  exit(0);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  const char *last = argv[argc - 1];
  st.fixed = strcmp(last, "--fixed") == 0;
  int args = argc - st.fixed;
  if (args == 4 && strcmp(argv[1], "primary") == 0) {
    kv_who = "primary";
    st_load(argv[3]);
    primary(atoi(argv[2]));
  }
  if (args == 5 && strcmp(argv[1], "backup") == 0) {
    kv_who = "backup";
    st_load(argv[4]);
    backup_main(atoi(argv[2]), argv[3]);
  }
  if (argc == 6 && strcmp(argv[1], "client") == 0 && atoi(argv[4]) > 0)
    client(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]));
  fprintf(stderr,
          "usage: corrupt1 primary PORT DIR [--fixed] | corrupt1 backup PORT PRIMARY DIR [--fixed]\n"
          "       | corrupt1 client PRIMARY BACKUP K CHECK_MS\n");
  return 2;
}
