/*
 * bugkv.h: what the key-value bugs of the suite (crash-1, power-1, rename-1,
 * corrupt-1) share on top of bugnet.h: a millisecond clock and sleep, the
 * server's table in memory and its answers, fsync of a directory, and the
 * client that writes k1..kK, retrying each write until it is acknowledged,
 * then reads every key back. Header-only like bugnet.h: each bug is one .c
 * file plus these; the bug's own part is how its server stores the table.
 */
#ifndef BUGKV_H
#define BUGKV_H

#include "bugnet.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>

#define GAP_MS 100   /* the client's pace: one write every GAP_MS */
#define RETRY_MS 100 /* a client's pause before it tries again */
#define ATTEMPTS 50  /* tries per request: 5 s of retries, beyond any outage */
#define MAXK 64      /* keys in a server's table */

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

static void fsync_dir(const char *dir) {
  int d = open(dir, O_RDONLY | O_DIRECTORY);
  if (d < 0 || fsync(d) < 0) bn_die(dir);
  close(d);
}

/* server */

static const char *kv_who = "kvd"; /* the server's name in its output */

/* The server's table in memory; how it is made durable is each bug's own. */
static struct {
  char keys[MAXK][64], vals[MAXK][64];
  int n;
} kvt;

static void kv_set(const char *k, const char *v) {
  int i;
  for (i = 0; i < kvt.n && strcmp(kvt.keys[i], k) != 0; i++) {
  }
  if (i == kvt.n) {
    if (kvt.n == MAXK) {
      fprintf(stderr, "%s: table full\n", kv_who);
      exit(2);
    }
    kvt.n++;
    snprintf(kvt.keys[i], sizeof kvt.keys[i], "%s", k);
  }
  snprintf(kvt.vals[i], sizeof kvt.vals[i], "%s", v);
}

static const char *kv_get(const char *k) {
  for (int i = 0; i < kvt.n; i++)
    if (strcmp(kvt.keys[i], k) == 0) return kvt.vals[i];
  return NULL;
}

/* reply answers a client; a client that went away is not the server's error. */
static void reply(int fd, const char *fmt, const char *arg) {
  char b[160];
  int n = snprintf(b, sizeof b - 1, fmt, arg);
  b[n++] = '\n';
  if (write(fd, b, n) != n) printf("%s: reply: %s\n", kv_who, strerror(errno));
}

/* reply_get answers GET k: "VAL v" or "NONE". */
static void reply_get(int fd, const char *k) {
  const char *val = kv_get(k);
  if (val) reply(fd, "VAL %s", val);
  else reply(fd, "NONE%s", "");
}

/* client */

/* A server the client talks to, over one connection at a time. */
struct peer {
  const char *name;
  struct addrinfo *ai;
  struct bn_conn conn;
};

static void resolve(struct peer *p, const char *hostport) {
  p->ai = bn_resolve(hostport);
  p->name = hostport;
  p->conn = (struct bn_conn){.fd = -1};
}

static void hangup(struct peer *p) {
  if (p->conn.fd >= 0) close(p->conn.fd);
  p->conn = (struct bn_conn){.fd = -1};
}

/*
 * call sends one request and reads its one-line answer, on the current
 * connection or a new one; 0 when the server is unreachable or the
 * connection ends first (the request may or may not have been applied).
 */
static int call(struct peer *p, const char *req, char *reply, size_t cap) {
  if (p->conn.fd < 0) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(s, p->ai->ai_addr, p->ai->ai_addrlen) < 0) {
      printf("client: connect %s: %s\n", p->name, strerror(errno));
      close(s);
      return 0;
    }
    bn_nodelay(s);
    p->conn.fd = s;
  }
  char b[128];
  int n = snprintf(b, sizeof b, "%s\n", req);
  if (write(p->conn.fd, b, n) != n) {
    printf("client: send %s to %s: %s\n", req, p->name, strerror(errno));
    hangup(p);
    return 0;
  }
  printf("client: sent %s to %s\n", req, p->name);
  if (!bn_line(&p->conn, reply, cap)) {
    printf("client: connection to %s ended before the answer to %s\n", p->name, req);
    hangup(p);
    return 0;
  }
  printf("client: got %s from %s\n", reply, p->name);
  return 1;
}

/* request retries call until it gets an answer, or gives up (exit 2). */
static void request(struct peer *p, const char *req, char *reply, size_t cap) {
  for (int a = 1; a <= ATTEMPTS; a++) {
    if (call(p, req, reply, cap)) return;
    sleep_ms(RETRY_MS);
  }
  fprintf(stderr, "client: no answer to %s from %s after %d attempts\n", req, p->name, ATTEMPTS);
  exit(2);
}

/* value_v is the value the client writes to key i unless the bug says: "vI". */
static const char *value_v(int i) {
  static char v[64];
  snprintf(v, sizeof v, "v%d", i);
  return v;
}

/*
 * put_all writes k1..kK to p, each retried until it is answered OK: a
 * server that is down is not an error. paced: one write every GAP_MS after
 * start; otherwise back to back.
 */
static void put_all(struct peer *p, int k, const char *(*value)(int), long long start, int paced) {
  char req[128], ans[BN_BUF];
  for (int i = 1; i <= k; i++) {
    if (paced) sleep_ms(start + i * GAP_MS - now_ms());
    snprintf(req, sizeof req, "PUT k%d %s", i, value(i));
    request(p, req, ans, sizeof ans);
    if (strcmp(ans, "OK") != 0) {
      fprintf(stderr, "client: unexpected %s\n", ans);
      exit(2);
    }
    printf("client: k%d=%s acknowledged\n", i, value(i));
  }
}

/* check_all reads k1..kK back from p; a key missing or old is a lost acknowledged write: exit 1. */
static void check_all(struct peer *p, int k, const char *(*value)(int)) {
  char req[128], ans[BN_BUF], want[80];
  for (int i = 1; i <= k; i++) {
    snprintf(req, sizeof req, "GET k%d", i);
    snprintf(want, sizeof want, "VAL %s", value(i));
    request(p, req, ans, sizeof ans);
    if (strcmp(ans, want) != 0) {
      fprintf(stderr, "client: lost acknowledged write: k%d=%s was acknowledged, %s now answers %s\n", i,
              value(i), p->name, ans);
      exit(1);
    }
  }
}

/*
 * kv_client is the client of the single-server bugs: it writes k1..kK to the
 * server at addr, then sleeps until check_ms after its start (past the
 * faults' quiet period) and reads every key back: exit 0 when all read
 * back, 1 on a lost acknowledged write. burst: it connects at once, sends
 * the first write GAP_MS later and the others back to back (crash-1);
 * otherwise it writes one key every GAP_MS.
 */
static void kv_client(const char *addr, int k, int check_ms, int burst) {
  static struct peer server;
  resolve(&server, addr);
  long long start = now_ms();
  if (burst) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(s, server.ai->ai_addr, server.ai->ai_addrlen) == 0) bn_nodelay(s), server.conn.fd = s;
    else close(s);
    sleep_ms(GAP_MS);
  }
  put_all(&server, k, value_v, start, !burst);
  sleep_ms(start + check_ms - now_ms());
  check_all(&server, k, value_v);
  printf("client: all %d acknowledged writes read back\n", k);
  exit(0);
}

#endif
