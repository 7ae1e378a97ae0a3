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
#include "../common/bugnet.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>

#define SYNC_MS 1000 /* the journal is fsynced this often, if written to */
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
  int fixed;
  int journal;                /* fd of DIR/journal, opened for appending */
  char keys[MAXK][64], vals[MAXK][64];
  int n;
  int unsynced;               /* records written since the last fsync */
  long long sync_at;          /* the next tick of the fsync timer */
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

static void kv_sync(void) {
  if (kv.unsynced == 0) return;
  if (fsync(kv.journal) < 0) bn_die("fsync journal");
  printf("kvd: fsynced %d record(s)\n", kv.unsynced);
  kv.unsynced = 0;
}

static void fsync_dir(const char *dir) {
  int d = open(dir, O_RDONLY | O_DIRECTORY);
  if (d < 0 || fsync(d) < 0) bn_die(dir);
  close(d);
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

/* reply answers a client; a client that went away is not the server's error. */
static void reply(int fd, const char *fmt, const char *arg) {
  char b[160];
  int n = snprintf(b, sizeof b - 1, fmt, arg);
  b[n++] = '\n';
  if (write(fd, b, n) != n) printf("kvd: reply: %s\n", strerror(errno));
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
    if (lp.fds[0].revents & POLLIN) {
      int c = accept(l, NULL, NULL);
      if (c >= 0) bn_nodelay(c), bn_add(&lp, c);
      continue;
    }
    for (int i = 1; i < lp.n; i++) {
      if (lp.fds[i].fd < 0 || !(lp.fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      struct bn_conn *c = &lp.conns[i];
      int open = bn_fill(c);
      char line[BN_BUF];
      while (bn_take(c, line, sizeof line)) kvd_line(c->fd, line);
      if (!open) {
        close(c->fd);
        lp.fds[i].fd = -1;
      }
    }
  }
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
    kv.fixed = argc == 5 && strcmp(argv[4], "--fixed") == 0;
    kvd(atoi(argv[2]), argv[3]);
  }
  if (argc == 5 && strcmp(argv[1], "client") == 0 && atoi(argv[3]) > 0)
    client(argv[2], atoi(argv[3]), atoi(argv[4]));
  fprintf(stderr, "usage: power1 kvd PORT DIR [--fixed] | power1 client SERVER K CHECK_MS\n");
  return 2;
}
