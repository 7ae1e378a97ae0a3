/*
 * power-1: a key-value server writes each record to its journal before it
 * acknowledges it, but makes the journal durable (fsync) only once a
 * second, as Redis's "appendfsync everysec" does. A process crash loses
 * nothing (the page cache keeps every written byte); a power loss between
 * an acknowledgement and the next fsync loses an acknowledged write.
 *
 *   power1 kvd PORT DIR [--fixed]   the server; its journal is DIR/journal
 *   power1 client SERVER K CHECK_MS writes K keys, then reads them back
 *
 * kvd keeps its table in memory and a journal of "key value" lines on
 * disk, which it replays when it starts. A PUT is applied to the table,
 * appended to the journal with write(2) and answered OK; a timer fsyncs
 * the journal every SYNC_MS if anything was written since the last fsync.
 * The journal file itself is created durably (the file and its directory
 * are fsynced), and a torn last line left by a power loss is cut off at
 * start, so the only mistake is the acknowledgement before the fsync.
 *
 * The client writes k1..kK, one every GAP_MS, retrying a write (on a new
 * connection) until it is answered OK: a server that is down is not an
 * error. Then it sleeps until CHECK_MS after its start (past the faults'
 * quiet period, when a failed server has been restarted) and reads every
 * key back; a key that is missing or old is a lost acknowledged write:
 * exit 1.
 *
 * --fixed (kvd): the journal is fsynced before each OK.
 */
#include "../common/bugkv.h"

#define SYNC_MS 1000 /* the journal is fsynced this often, if written to */

/* kvd */

static struct {
  int fixed;
  int journal;                /* fd of DIR/journal, opened for appending */
  int unsynced;               /* records written since the last fsync */
  long long sync_at;          /* the next tick of the fsync timer */
} kv;

static void kv_sync(void) {
  if (kv.unsynced == 0) return;
  if (fsync(kv.journal) < 0) bn_die("fsync journal");
  printf("kvd: fsynced %d record(s)\n", kv.unsynced);
  kv.unsynced = 0;
}

/*
 * kv_load replays DIR/journal, creating it durably if it does not exist.
 * A last line without its newline is a record torn by a power loss, never
 * acknowledged by the fixed server: it is cut off, so that the next record
 * does not run into it.
 */
static void kv_load(const char *dir) {
  char path[512], k[64], v[64];
  snprintf(path, sizeof path, "%s/journal", dir);
  kv.journal = open(path, O_RDWR | O_APPEND);
  if (kv.journal < 0) {
    if (errno != ENOENT) bn_die(path);
    kv.journal = open(path, O_RDWR | O_APPEND | O_CREAT, 0644);
    if (kv.journal < 0 || fsync(kv.journal) < 0) bn_die(path);
    fsync_dir(dir);
    printf("kvd: created the journal\n");
    return;
  }
  static char data[1 << 16];
  ssize_t len = read(kv.journal, data, sizeof data - 1);
  if (len < 0) bn_die(path);
  data[len] = 0;
  int n = 0;
  char *p = data, *nl;
  while ((nl = memchr(p, '\n', data + len - p)) != NULL) {
    *nl = 0;
    if (sscanf(p, "%63s %63s", k, v) == 2) kv_set(k, v), n++;
    p = nl + 1;
  }
  if (p < data + len) {
    printf("kvd: cut off a torn record of %zd byte(s)\n", data + len - p);
    if (ftruncate(kv.journal, p - data) < 0 || fsync(kv.journal) < 0) bn_die(path);
  }
  printf("kvd: replayed %d record(s) from the journal\n", n);
}

static void kvd_line(int fd, char *line) {
  char k[64], v[64], rec[160];
  printf("kvd: %s\n", line);
  if (sscanf(line, "PUT %63s %63s", k, v) == 2) {
    int n = snprintf(rec, sizeof rec, "%s %s\n", k, v);
    if (write(kv.journal, rec, n) != n) bn_die("journal");
    kv.unsynced++;
    kv_set(k, v);
    if (kv.fixed) kv_sync(); /* durable first, then acknowledged */
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
  kv.sync_at = now_ms() + SYNC_MS;
  for (;;) {
    long long left = kv.sync_at - now_ms();
    if (poll(lp.fds, lp.n, left > 0 ? (int)left : 0) < 0) bn_die("poll");
    if (now_ms() >= kv.sync_at) {
      kv_sync();
      kv.sync_at += SYNC_MS;
    }
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
    kv_client(argv[2], atoi(argv[3]), atoi(argv[4]), 0);
  fprintf(stderr, "usage: power1 kvd PORT DIR [--fixed] | power1 client SERVER K CHECK_MS\n");
  return 2;
}
