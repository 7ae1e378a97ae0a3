/*
 * rename-1: a key-value server keeps its whole table in one file and
 * replaces it on every write the way most programs save a file: write the
 * new table to a temporary file, rename it over the old one, acknowledge.
 * Neither the new file nor the directory holding the rename is fsynced. A
 * process crash loses nothing (rename is atomic, and the page cache keeps
 * both the data and the directory entry); after a power loss the name may
 * hold the old table (the rename was not durable), or nothing at all (the
 * rename was, the new file's data was not): an acknowledged write is lost.
 *
 *   rename1 kvd PORT DIR [--fixed|--fsync-file]   the server; its table is DIR/table
 *   rename1 client SERVER K CHECK_MS             writes K keys, then reads them back
 *
 * At its first start kvd creates DIR/table empty and durably (the file and
 * the directory fsynced). A PUT is applied to the table in memory, the
 * table is written to DIR/table.tmp (created, truncated), the file is
 * closed and renamed over DIR/table, and the PUT is answered OK. At start
 * kvd reads DIR/table, and removes a DIR/table.tmp left by a failure.
 *
 * The client writes k1..kK, one every GAP_MS, retrying a write (on a new
 * connection) until it is answered OK: a server that is down is not an
 * error. Then it sleeps until CHECK_MS after its start (past the faults'
 * quiet period, when a failed server has been restarted) and reads every
 * key back; a key that is missing or old is a lost acknowledged write:
 * exit 1.
 *
 * --fixed (kvd): DIR/table.tmp is fsynced before the rename, and DIR after
 * it, before the OK. --fsync-file (kvd): only the file is fsynced (half of
 * the fix: the rename itself can still be lost).
 */
#include "../common/bugkv.h"


/* kvd */

static struct {
  int fsync_file, fsync_dir;  /* what the server makes durable before its OK */
  const char *dir;
} kv;

/* kv_save replaces DIR/table with the table in memory. */
static void kv_save(void) {
  char tmp[512], path[512], b[160];
  snprintf(tmp, sizeof tmp, "%s/table.tmp", kv.dir);
  snprintf(path, sizeof path, "%s/table", kv.dir);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) bn_die(tmp);
  for (int i = 0; i < kvt.n; i++) {
    int n = snprintf(b, sizeof b, "%s %s\n", kvt.keys[i], kvt.vals[i]);
    if (write(fd, b, n) != n) bn_die(tmp);
  }
  if (kv.fsync_file && fsync(fd) < 0) bn_die(tmp);
  if (close(fd) < 0) bn_die(tmp);
  if (rename(tmp, path) < 0) bn_die(path);
  if (kv.fsync_dir) fsync_dir(kv.dir);
  printf("kvd: saved %d key(s)%s%s\n", kvt.n, kv.fsync_file ? ", file fsynced" : "",
         kv.fsync_dir ? ", directory fsynced" : "");
}

/*
 * kv_load reads DIR/table. The first start creates it, empty, and durably:
 * the file and the directory entry are fsynced, so the table always exists.
 */
static void kv_load(const char *dir) {
  char path[512], line[256], k[64], v[64];
  kv.dir = dir;
  snprintf(path, sizeof path, "%s/table.tmp", dir);
  if (unlink(path) == 0) printf("kvd: removed a table.tmp left behind\n");
  snprintf(path, sizeof path, "%s/table", dir);
  FILE *f = fopen(path, "r");
  if (!f) {
    if (errno != ENOENT) bn_die(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0 || fsync(fd) < 0 || close(fd) < 0) bn_die(path);
    fsync_dir(dir);
    printf("kvd: created an empty table\n");
    return;
  }
  int n = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "%63s %63s", k, v) == 2) kv_set(k, v), n++;
  fclose(f);
  printf("kvd: read %d key(s) from the table\n", n);
}

static void kvd_line(int fd, char *line) {
  char k[64], v[64];
  printf("kvd: %s\n", line);
  if (sscanf(line, "PUT %63s %63s", k, v) == 2) {
    kv_set(k, v);
    kv_save();
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
  bn_serve(&lp, bn_listen(port), kvd_line, NULL);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  if ((argc == 4 || argc == 5) && strcmp(argv[1], "kvd") == 0) {
    const char *mode = argc == 5 ? argv[4] : "";
    kv.fsync_file = strcmp(mode, "--fixed") == 0 || strcmp(mode, "--fsync-file") == 0;
    kv.fsync_dir = strcmp(mode, "--fixed") == 0;
    if (argc == 5 && !kv.fsync_file) {
      fprintf(stderr, "rename1: unknown flag %s\n", mode);
      return 2;
    }
    kvd(atoi(argv[2]), argv[3]);
  }
  if (argc == 5 && strcmp(argv[1], "client") == 0 && atoi(argv[3]) > 0)
    kv_client(argv[2], atoi(argv[3]), atoi(argv[4]), 0);
  fprintf(stderr, "usage: rename1 kvd PORT DIR [--fixed|--fsync-file] | rename1 client SERVER K CHECK_MS\n");
  return 2;
}
