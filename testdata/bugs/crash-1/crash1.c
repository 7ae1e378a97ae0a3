/*
 * crash-1: a key-value server acknowledges a write before it is durable
 * (a group-commit journal written after the reply); a crash between the
 * acknowledgement and the commit, and a restart from the journal, lose an
 * acknowledged write.
 *
 *   crash1 kvd PORT DIR [--fixed]   the server; its journal is DIR/journal
 *   crash1 client SERVER K CHECK_MS writes K keys, then reads them back
 *
 * kvd keeps its table in memory and a journal of "key value" lines on disk,
 * which it replays when it starts. A PUT is applied to the table, appended
 * to an in-memory commit buffer and answered OK at once; the buffer is
 * written to the journal and fsynced COMMIT_MS after its first record (the
 * timeout of kvd's poll loop), so that the writes of many clients share one
 * fsync: group commit, with the reply sent before the commit instead of
 * after it. A crash in that window loses writes the clients were told are
 * stored.
 *
 * The client writes k1..kK, one every GAP_MS, retrying a write (on a new
 * connection) until it is answered OK: a server that is down is not an
 * error. Then it sleeps until CHECK_MS after its start (past the faults'
 * quiet period, when a crashed server has been restarted) and reads every
 * key back; a key that is missing or old is a lost acknowledged write:
 * exit 1.
 *
 * --fixed (kvd): the record is written and fsynced before the OK.
 */
#include "../common/bugkv.h"

#define COMMIT_MS 1  /* group-commit delay: the journal is written this long after its first record */

/* kvd */

static struct {
  int fixed;
  int journal;                /* fd of DIR/journal, opened for appending */
  char buf[8192];             /* records acknowledged but not yet in the journal */
  size_t len;
  int pending;                /* how many records buf holds */
  long long commit_at;        /* when buf is written, if pending */
} kv;

/* kv_commit writes the commit buffer to the journal and fsyncs it. */
static void kv_commit(void) {
  if (kv.len == 0) return;
  if (write(kv.journal, kv.buf, kv.len) != (ssize_t)kv.len || fsync(kv.journal) < 0) bn_die("journal");
  printf("kvd: committed %d record(s)\n", kv.pending);
  kv.len = 0, kv.pending = 0;
}

static void kv_load(const char *dir) {
  char path[512], line[256], k[64], v[64];
  snprintf(path, sizeof path, "%s/journal", dir);
  FILE *f = fopen(path, "r");
  int n = 0;
  if (f) {
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "%63s %63s", k, v) == 2) kv_set(k, v), n++;
    fclose(f);
  }
  kv.journal = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (kv.journal < 0) bn_die(path);
  printf("kvd: replayed %d record(s) from the journal\n", n);
}

static void kvd_line(int fd, char *line) {
  char k[64], v[64];
  printf("kvd: %s\n", line);
  if (sscanf(line, "PUT %63s %63s", k, v) == 2) {
    kv_set(k, v);
    int n = snprintf(kv.buf + kv.len, sizeof kv.buf - kv.len, "%s %s\n", k, v);
    if (n <= 0 || (size_t)n >= sizeof kv.buf - kv.len) {
      fprintf(stderr, "kvd: commit buffer full\n");
      exit(2);
    }
    kv.len += n;
    if (kv.pending++ == 0) kv.commit_at = now_ms() + COMMIT_MS;
    if (kv.fixed) kv_commit(); /* durable first, then acknowledged */
    reply(fd, "OK%s", "");
  } else if (sscanf(line, "GET %63s", k) == 1) {
    reply_get(fd, k);
  } else {
    reply(fd, "ERR%s", "");
  }
}

static void kvd(int port, const char *dir) {
  static struct bn_loop lp;
  kv_load(dir);
  int l = bn_listen(port);
  bn_add(&lp, l);
  for (;;) {
    int timeout = -1;
    if (kv.pending) {
      long long left = kv.commit_at - now_ms();
      timeout = left > 0 ? (int)left : 0;
    }
    if (poll(lp.fds, lp.n, timeout) < 0) bn_die("poll");
    /* The commit timer first: what was acknowledged before this wake-up. */
    if (kv.pending && now_ms() >= kv.commit_at) kv_commit();
    bn_handle(&lp, l, kvd_line, NULL);
  }
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  if ((argc == 4 || argc == 5) && strcmp(argv[1], "kvd") == 0) {
    kv.fixed = argc == 5 && strcmp(argv[4], "--fixed") == 0;
    kvd(atoi(argv[2]), argv[3]);
  }
  if (argc == 5 && strcmp(argv[1], "client") == 0 && atoi(argv[3]) > 0)
    kv_client(argv[2], atoi(argv[3]), atoi(argv[4]), 1);
  fprintf(stderr, "usage: crash1 kvd PORT DIR [--fixed] | crash1 client SERVER K CHECK_MS\n");
  return 2;
}
