/*
 * backup-1: a primary acknowledges a write before its backup has applied
 * it; a client that reads its own write back from the backup misses it.
 *
 *   backup1 primary PORT BACKUP [--fixed]  takes writes, replicates them
 *   backup1 backup PORT                     a read replica, under a lease
 *   backup1 client PRIMARY BACKUP ROUNDS    writes a key, reads it back
 *
 * The primary dials the backup and keeps one connection to it: REPL idx k v
 * for every write, HB (heartbeat) every HB_MS both ways, ACK idx back. The
 * backup serves reads only while its lease is fresh (a message from the
 * primary within LEASE_MS), so that a backup cut off from its primary
 * answers RETRY instead of old data. The designers took a fresh lease for
 * an up-to-date backup: the primary answers OK as soon as it has sent
 * REPL (asynchronous replication). A client that then reads the key from
 * the backup expects its own write (read-your-writes); if its GET reaches
 * the backup before the primary's REPL does, the backup answers NONE.
 *
 * --fixed (primary): synchronous replication. OK is sent when the backup's
 * ACK for the write arrives, so the backup has applied every write its
 * client has seen acknowledged, whatever the order of deliveries.
 *
 * Every message of every mode leaves through send_msg, one function: the
 * heartbeats, the replication stream and the answers alike.
 */
#include "../common/bugnet.h"

#include <errno.h>
#include <signal.h>

#define HB_MS 10    /* heartbeat period, both ways */
#define LEASE_MS 100 /* the backup serves reads this long after the primary's last message */
#define THINK_MS 30  /* the client's pause between rounds */
#define RETRY_MS 10  /* the client's pause after RETRY */
#define MAXK 64

static const char *me; /* this process's name, in its output */

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void sleep_ms(long long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
  }
}

/*
 * send_msg formats, logs and writes one message: every message of every
 * mode goes through here. Variadic, so never inlined: one place writes.
 * A peer that went away is logged, not fatal (SIGPIPE is ignored).
 */
static void send_msg(int fd, const char *fmt, ...) {
  char b[BN_BUF];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b, sizeof b - 1, fmt, ap);
  va_end(ap);
  printf("%s: send %s\n", me, b);
  b[n++] = '\n';
  if (write(fd, b, n) != n) printf("%s: write: %s\n", me, strerror(errno));
}

/* The table both servers keep: k1..kN and their values. */
static struct {
  char k[MAXK][32], v[MAXK][32];
  int n;
} tbl;

static void tbl_set(const char *k, const char *v) {
  int i;
  for (i = 0; i < tbl.n && strcmp(tbl.k[i], k) != 0; i++) {
  }
  if (i == MAXK) {
    fprintf(stderr, "%s: table full\n", me);
    exit(2);
  }
  if (i == tbl.n) snprintf(tbl.k[tbl.n++], sizeof tbl.k[0], "%s", k);
  snprintf(tbl.v[i], sizeof tbl.v[0], "%s", v);
}

static const char *tbl_get(const char *k) {
  for (int i = 0; i < tbl.n; i++)
    if (strcmp(tbl.k[i], k) == 0) return tbl.v[i];
  return NULL;
}

/*
 * serve is the servers' loop: bn_handle over lp, whose first entry is the
 * listener l, with a heartbeat every HB_MS as the poll timeout.
 */
static void serve(struct bn_loop *lp, int l, void (*heartbeat)(void), void (*on_line)(int, char *),
                  void (*on_close)(int)) {
  long long next = now_ms() + HB_MS;
  for (;;) {
    long long left = next - now_ms();
    if (poll(lp->fds, lp->n, left > 0 ? (int)left : 0) < 0 && errno != EINTR) bn_die("poll");
    if (now_ms() >= next) {
      heartbeat();
      next = now_ms() + HB_MS;
    }
    bn_handle(lp, l, on_line, on_close);
  }
}

/* primary */

static struct {
  int fixed;
  int backup;           /* fd of the connection to the backup */
  int idx;              /* writes applied */
  int acked;            /* the backup's last ACK */
  int waiting[MAXK];    /* --fixed: client fd per write index awaiting the ACK */
} pr;

static void primary_hb(void) { send_msg(pr.backup, "HB primary %d", pr.idx); }

static void primary_line(int fd, char *line) {
  char k[32], v[32];
  int i;
  printf("primary: got %s\n", line);
  if (sscanf(line, "PUT %31s %31s", k, v) == 2) {
    if (pr.idx + 1 >= MAXK) {
      fprintf(stderr, "primary: too many writes\n");
      exit(2);
    }
    tbl_set(k, v);
    pr.idx++;
    send_msg(pr.backup, "REPL %d %s %s", pr.idx, k, v);
    if (pr.fixed) pr.waiting[pr.idx] = fd;
    else send_msg(fd, "OK %d", pr.idx); /* the bug: the backup may not have it yet */
  } else if (sscanf(line, "ACK %d", &i) == 1) {
    pr.acked = i;
    if (pr.fixed && i > 0 && i < MAXK && pr.waiting[i] > 0) {
      send_msg(pr.waiting[i], "OK %d", i);
      pr.waiting[i] = 0;
    }
  } else if (sscanf(line, "HB backup %d", &i) == 1) {
    if (i < pr.idx) printf("primary: backup lags: %d of %d applied\n", i, pr.idx);
  }
}

static void primary(int port, const char *backup, int fixed) {
  static struct bn_loop lp;
  pr.fixed = fixed;
  /* Dial the backup before listening: no client write comes before the
   * replication stream exists. */
  pr.backup = bn_dial(backup);
  send_msg(pr.backup, "HELLO primary");
  int l = bn_listen(port);
  bn_add(&lp, l);
  bn_add(&lp, pr.backup);
  printf("primary: listening on %d, backup %s, %s replication\n", port, backup,
         fixed ? "synchronous" : "asynchronous");
  serve(&lp, l, primary_hb, primary_line, NULL);
}

/* backup */

static struct {
  int primary;      /* fd of the primary's connection, -1 until HELLO */
  int applied;      /* the last REPL applied */
  long long heard;  /* when the primary's last message came: the lease */
} bk = {.primary = -1};

static void backup_hb(void) {
  if (bk.primary >= 0) send_msg(bk.primary, "HB backup %d", bk.applied);
}

static void backup_line(int fd, char *line) {
  char k[32], v[32];
  int i;
  printf("backup: got %s\n", line);
  if (fd == bk.primary || strcmp(line, "HELLO primary") == 0) {
    bk.primary = fd;
    bk.heard = now_ms();
  }
  if (sscanf(line, "REPL %d %31s %31s", &i, k, v) == 3) {
    tbl_set(k, v);
    bk.applied = i;
    send_msg(fd, "ACK %d", i);
  } else if (sscanf(line, "GET %31s", k) == 1) {
    /* A fresh lease says the primary is there, not that its last write is. */
    if (bk.primary < 0 || now_ms() - bk.heard > LEASE_MS) {
      send_msg(fd, "RETRY");
      return;
    }
    const char *val = tbl_get(k);
    if (val) send_msg(fd, "VAL %s", val);
    else send_msg(fd, "NONE");
  }
}

static void backup_closed(int fd) {
  if (fd == bk.primary) bk.primary = -1;
}

static void backup(int port) {
  static struct bn_loop lp;
  int l = bn_listen(port);
  bn_add(&lp, l);
  printf("backup: listening on %d\n", port);
  serve(&lp, l, backup_hb, backup_line, backup_closed);
}

/* client */

static void expect(struct bn_conn *c, const char *peer, char *line, size_t cap) {
  if (!bn_line(c, line, cap)) {
    fprintf(stderr, "client: %s closed the connection\n", peer);
    exit(2);
  }
  printf("client: got %s from %s\n", line, peer);
}

static void client(const char *primary, const char *backup, int rounds) {
  struct bn_conn p = {.fd = bn_dial(primary)}, b = {.fd = bn_dial(backup)};
  char line[BN_BUF], want[64];
  for (int r = 1; r <= rounds; r++) {
    sleep_ms(THINK_MS);
    send_msg(p.fd, "PUT k%d v%d", r, r);
    expect(&p, "primary", line, sizeof line);
    if (strncmp(line, "OK ", 3) != 0) {
      fprintf(stderr, "client: unexpected %s\n", line);
      exit(2);
    }
    snprintf(want, sizeof want, "VAL v%d", r);
    for (int a = 0;; a++) {
      send_msg(b.fd, "GET k%d", r);
      expect(&b, "backup", line, sizeof line);
      if (strcmp(line, "RETRY") != 0) break;
      if (a == 100) {
        fprintf(stderr, "client: the backup answered RETRY 100 times\n");
        exit(2);
      }
      sleep_ms(RETRY_MS);
    }
    if (strcmp(line, want) != 0) {
      fprintf(stderr, "client: read-your-writes violated: k%d=v%d was acknowledged, the backup answers %s\n",
              r, r, line);
      exit(1);
    }
  }
  printf("client: read all %d writes back from the backup\n", rounds);
  exit(0);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  me = argc > 1 ? argv[1] : "backup1";
  if ((argc == 4 || argc == 5) && strcmp(argv[1], "primary") == 0)
    primary(atoi(argv[2]), argv[3], argc == 5 && strcmp(argv[4], "--fixed") == 0);
  if (argc == 3 && strcmp(argv[1], "backup") == 0) backup(atoi(argv[2]));
  if (argc == 5 && strcmp(argv[1], "client") == 0 && atoi(argv[4]) > 0) client(argv[2], argv[3], atoi(argv[4]));
  fprintf(stderr, "usage: backup1 primary PORT BACKUP [--fixed] | backup1 backup PORT | "
                  "backup1 client PRIMARY BACKUP ROUNDS\n");
  return 2;
}
