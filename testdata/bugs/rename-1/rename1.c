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
#include "../common/bugnet.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>

#define GAP_MS 100   /* the client's pace: one write every GAP_MS */
#define RETRY_MS 100 /* a client's pause before it tries again */
#define ATTEMPTS 50  /* tries per request: 5 s of retries, beyond any outage */

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void sleep_ms(long long ms) {
  if (ms <= 0) return;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
  }
}

/* kvd */

#define MAXK 64

static struct {
  int fsync_file, fsync_dir;  /* what the server makes durable before its OK */
  const char *dir;
  char keys[MAXK][64], vals[MAXK][64];
  int n;
} kv;

static void kv_set(const char *k, const char *v) {
  int i;
  for (i = 0; i < kv.n && strcmp(kv.keys[i], k) != 0; i++) {
  }
  if (i == kv.n) {
    if (kv.n == MAXK) {
      fprintf(stderr, "kvd: table full\n");
      exit(2);
    }
    kv.n++;
    snprintf(kv.keys[i], sizeof kv.keys[i], "%s", k);
  }
  snprintf(kv.vals[i], sizeof kv.vals[i], "%s", v);
}

static const char *kv_get(const char *k) {
  for (int i = 0; i < kv.n; i++)
    if (strcmp(kv.keys[i], k) == 0) return kv.vals[i];
  return NULL;
}

static void fsync_dir(const char *dir) {
  int d = open(dir, O_RDONLY | O_DIRECTORY);
  if (d < 0 || fsync(d) < 0) bn_die(dir);
  close(d);
}

/* kv_save replaces DIR/table with the table in memory. */
static void kv_save(void) {
  char tmp[512], path[512], b[160];
  snprintf(tmp, sizeof tmp, "%s/table.tmp", kv.dir);
  snprintf(path, sizeof path, "%s/table", kv.dir);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) bn_die(tmp);
  for (int i = 0; i < kv.n; i++) {
    int n = snprintf(b, sizeof b, "%s %s\n", kv.keys[i], kv.vals[i]);
    if (write(fd, b, n) != n) bn_die(tmp);
  }
  if (kv.fsync_file && fsync(fd) < 0) bn_die(tmp);
  if (close(fd) < 0) bn_die(tmp);
  if (rename(tmp, path) < 0) bn_die(path);
  if (kv.fsync_dir) fsync_dir(kv.dir);
  printf("kvd: saved %d key(s)%s%s\n", kv.n, kv.fsync_file ? ", file fsynced" : "",
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

/* reply answers a client; a client that went away is not the server's error. */
static void reply(int fd, const char *fmt, const char *arg) {
  char b[160];
  int n = snprintf(b, sizeof b - 1, fmt, arg);
  b[n++] = '\n';
  if (write(fd, b, n) != n) printf("kvd: reply: %s\n", strerror(errno));
}

static void kvd_line(int fd, char *line) {
  char k[64], v[64];
  printf("kvd: %s\n", line);
  if (sscanf(line, "PUT %63s %63s", k, v) == 2) {
    kv_set(k, v);
    kv_save();
    reply(fd, "OK%s", "");
  } else if (sscanf(line, "GET %63s", k) == 1) {
    const char *val = kv_get(k);
    if (val) reply(fd, "VAL %s", val);
    else reply(fd, "NONE%s", "");
  } else {
    reply(fd, "ERR%s", "");
  }
}

static void kvd(int port, const char *dir) {
  static struct bn_loop lp;
  kv_load(dir);
  bn_serve(&lp, bn_listen(port), kvd_line, NULL);
}

/* client */

static struct addrinfo *server;
static struct bn_conn conn = {.fd = -1};

static void hangup(void) {
  if (conn.fd >= 0) close(conn.fd);
  conn = (struct bn_conn){.fd = -1};
}

/*
 * call sends one request and reads its one-line answer, on the current
 * connection or a new one; 0 when the server is unreachable or the
 * connection ends first (the request may or may not have been applied).
 */
static int call(const char *req, char *reply, size_t cap) {
  if (conn.fd < 0) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(s, server->ai_addr, server->ai_addrlen) < 0) {
      printf("client: connect: %s\n", strerror(errno));
      close(s);
      return 0;
    }
    bn_nodelay(s);
    conn.fd = s;
  }
  char b[128];
  int n = snprintf(b, sizeof b, "%s\n", req);
  if (write(conn.fd, b, n) != n) {
    printf("client: send %s: %s\n", req, strerror(errno));
    hangup();
    return 0;
  }
  printf("client: sent %s\n", req);
  if (!bn_line(&conn, reply, cap)) {
    printf("client: connection ended before the answer to %s\n", req);
    hangup();
    return 0;
  }
  printf("client: got %s\n", reply);
  return 1;
}

/* request retries call until it gets an answer, or gives up (exit 2). */
static void request(const char *req, char *reply, size_t cap) {
  for (int a = 1; a <= ATTEMPTS; a++) {
    if (call(req, reply, cap)) return;
    sleep_ms(RETRY_MS);
  }
  fprintf(stderr, "client: no answer to %s after %d attempts\n", req, ATTEMPTS);
  exit(2);
}

static void client(const char *hostport, int k, int check_ms) {
  char host[128], req[128], reply[BN_BUF];
  const char *colon = strrchr(hostport, ':');
  if (!colon || (size_t)(colon - hostport) >= sizeof host) {
    fprintf(stderr, "bad address %s\n", hostport);
    exit(2);
  }
  memcpy(host, hostport, colon - hostport);
  host[colon - hostport] = 0;
  struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
  if (getaddrinfo(host, colon + 1, &hints, &server) != 0) {
    fprintf(stderr, "cannot resolve %s\n", host);
    exit(2);
  }
  long long start = now_ms();
  for (int i = 1; i <= k; i++) {
    sleep_ms(start + i * GAP_MS - now_ms());
    snprintf(req, sizeof req, "PUT k%d v%d", i, i);
    request(req, reply, sizeof reply);
    if (strcmp(reply, "OK") != 0) {
      fprintf(stderr, "client: unexpected %s\n", reply);
      exit(2);
    }
    printf("client: k%d=v%d acknowledged\n", i, i);
  }
  sleep_ms(start + check_ms - now_ms());
  for (int i = 1; i <= k; i++) {
    char want[64];
    snprintf(req, sizeof req, "GET k%d", i);
    snprintf(want, sizeof want, "VAL v%d", i);
    request(req, reply, sizeof reply);
    if (strcmp(reply, want) != 0) {
      fprintf(stderr, "client: lost acknowledged write: k%d=v%d was acknowledged, now %s\n", i, i, reply);
      exit(1);
    }
  }
  printf("client: all %d acknowledged writes read back\n", k);
  exit(0);
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
    client(argv[2], atoi(argv[3]), atoi(argv[4]));
  fprintf(stderr, "usage: rename1 kvd PORT DIR [--fixed|--fsync-file] | rename1 client SERVER K CHECK_MS\n");
  return 2;
}
