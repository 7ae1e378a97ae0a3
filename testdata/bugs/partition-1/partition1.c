/*
 * partition-1: a primary/backup store fails over without terms; after a
 * partition heals both servers believe they are the primary (split brain)
 * and a write acknowledged by one is missing from the other.
 *
 *   partition1 server NAME PORT primary [--fixed]
 *   partition1 server NAME PORT backup PEER [--fixed]
 *   partition1 client NAME MINE OTHER CHECK_MS
 *
 * The primary sends HB to the backup every HB_MS and forwards every write
 * to it (REPL, asynchronous); it answers PUT and GET. The backup applies
 * REPL and answers clients NOTPRIMARY. When the backup has not heard a
 * heartbeat for FAILOVER_MS it takes over: it becomes a primary and starts
 * sending heartbeats itself. The two servers share one connection, which
 * the backup dials at its start.
 *
 * Without terms the takeover is never undone: a primary takes the peer's
 * heartbeats for a backup's noise and ignores them (only a backup follows
 * heartbeats), so when a partition that outlasted FAILOVER_MS heals, the old
 * primary goes on serving beside the new one. A client that writes through
 * one and reads through the other does not read its own write.
 *
 * A client writes a key of its own through its server (MINE, falling back to
 * OTHER on NOTPRIMARY or when MINE does not answer in TIMEOUT_MS), W times,
 * one every GAP_MS; a server that is unreachable or not the primary is not an
 * error. Then it sleeps until CHECK_MS after its start (past the quiet
 * period: every partition healed, the servers settled), writes a final
 * key through MINE and reads it back through OTHER (each falling back to
 * the other server on NOTPRIMARY): a missing or old value is a lost
 * acknowledged write, exit 1.
 *
 * --fixed (servers): terms. A takeover increments the term; heartbeats and
 * REPL carry it; a primary that hears a heartbeat of a higher term steps
 * down to backup, and a server ignores REPL of a lower term. After the heal
 * the old primary steps down at the new one's first heartbeat.
 */
#include "../common/bugnet.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>

#define HB_MS 100        /* heartbeat period */
#define FAILOVER_MS 500  /* a backup takes over after this long without a heartbeat */
#define TIMEOUT_MS 200   /* a client's wait for an answer */
#define RETRY_MS 100     /* a client's pause before it tries again */
#define ATTEMPTS 40      /* tries per request: 12 s at most, beyond any outage */
#define GAP_MS 200       /* a client's pace */
#define WRITES 8

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

/* say writes one line, ignoring a peer that went away. */
static void say(int fd, const char *fmt, ...) {
  char b[BN_BUF];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b, sizeof b - 1, fmt, ap);
  va_end(ap);
  b[n++] = '\n';
  if (fd >= 0 && write(fd, b, n) != n) printf("write: %s\n", strerror(errno));
}

/* server */

#define MAXK 64

static struct {
  const char *name;
  int fixed, primary, term, peer;
  long long last_hb, next_hb;
  char keys[MAXK][64], vals[MAXK][64];
  int n;
} sv = {.peer = -1};

static void kv_set(const char *k, const char *v) {
  int i;
  for (i = 0; i < sv.n && strcmp(sv.keys[i], k) != 0; i++) {
  }
  if (i == sv.n) {
    if (sv.n == MAXK) {
      fprintf(stderr, "%s: table full\n", sv.name);
      exit(2);
    }
    sv.n++;
    snprintf(sv.keys[i], sizeof sv.keys[i], "%s", k);
  }
  snprintf(sv.vals[i], sizeof sv.vals[i], "%s", v);
}

static const char *kv_get(const char *k) {
  for (int i = 0; i < sv.n; i++)
    if (strcmp(sv.keys[i], k) == 0) return sv.vals[i];
  return NULL;
}

static void server_line(int fd, char *line) {
  char k[64], v[64];
  int t;
  printf("%s: %s\n", sv.name, line);
  if (strcmp(line, "PEER") == 0) {
    sv.peer = fd;
  } else if (sscanf(line, "HB %d", &t) == 1) {
    if (!sv.primary) {
      if (!sv.fixed || t >= sv.term) sv.last_hb = now_ms(), sv.term = t > sv.term ? t : sv.term;
    } else if (sv.fixed && t > sv.term) {
      printf("%s: a primary of term %d exists: stepping down from term %d\n", sv.name, t, sv.term);
      sv.primary = 0, sv.term = t, sv.last_hb = now_ms();
    } else {
      printf("%s: primary: heartbeat of term %d ignored\n", sv.name, t);
    }
  } else if (sscanf(line, "REPL %d %63s %63s", &t, k, v) == 3) {
    if (!sv.primary && (!sv.fixed || t >= sv.term)) kv_set(k, v);
    else printf("%s: replication of %s ignored\n", sv.name, k);
  } else if (sscanf(line, "PUT %63s %63s", k, v) == 2) {
    if (!sv.primary) {
      say(fd, "NOTPRIMARY");
      return;
    }
    kv_set(k, v);
    say(sv.peer, "REPL %d %s %s", sv.term, k, v); /* asynchronous: no wait for the backup */
    say(fd, "OK");
  } else if (sscanf(line, "GET %63s", k) == 1) {
    const char *val = kv_get(k);
    if (!sv.primary) say(fd, "NOTPRIMARY");
    else if (val) say(fd, "VAL %s", val);
    else say(fd, "NONE");
  }
}

static void server(int port, const char *peer) {
  static struct bn_loop lp;
  int l = bn_listen(port);
  bn_add(&lp, l);
  if (peer) {
    sv.peer = bn_dial(peer);
    say(sv.peer, "PEER");
    bn_add(&lp, sv.peer);
  }
  sv.last_hb = sv.next_hb = now_ms();
  for (;;) {
    long long now = now_ms(), at = sv.primary ? sv.next_hb : sv.last_hb + FAILOVER_MS;
    if (poll(lp.fds, lp.n, at > now ? (int)(at - now) : 0) < 0) bn_die("poll");
    now = now_ms();
    if (!sv.primary && now - sv.last_hb >= FAILOVER_MS) {
      if (sv.fixed) sv.term++;
      sv.primary = 1, sv.next_hb = now;
      printf("%s: no heartbeat for %d ms: taking over as primary (term %d)\n", sv.name, FAILOVER_MS, sv.term);
    }
    if (sv.primary && now >= sv.next_hb) {
      if (sv.peer >= 0) say(sv.peer, "HB %d", sv.term);
      sv.next_hb = now + HB_MS;
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
      while (bn_take(c, line, sizeof line)) server_line(c->fd, line);
      if (!open) {
        if (c->fd == sv.peer) sv.peer = -1;
        close(c->fd);
        lp.fds[i].fd = -1;
      }
    }
  }
}

/* client */

static const char *me;

struct srv {
  const char *name;
  struct addrinfo *ai;
  struct bn_conn c;
};

static void hangup(struct srv *s) {
  if (s->c.fd >= 0) close(s->c.fd);
  s->c = (struct bn_conn){.fd = -1};
}

/* wait_fd polls one descriptor until ms have passed; 1 when it is ready. */
static int wait_fd(int fd, short ev, int ms) {
  struct pollfd p = {.fd = fd, .events = ev};
  return poll(&p, 1, ms) == 1;
}

/*
 * call sends one request to s and reads its answer within TIMEOUT_MS, on a
 * new connection if needed; 0 when s is unreachable, slow or gone (the
 * connection is then dropped, so that a late answer is never taken for
 * the next request's).
 */
static int call(struct srv *s, const char *req, char *reply, size_t cap) {
  if (s->c.fd < 0) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    int r = connect(fd, s->ai->ai_addr, s->ai->ai_addrlen);
    int err = r == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      socklen_t len = sizeof err;
      err = wait_fd(fd, POLLOUT, TIMEOUT_MS) ? (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len), err) : ETIMEDOUT;
    }
    if (err) {
      printf("%s: connect %s: %s\n", me, s->name, strerror(err));
      close(fd);
      return 0;
    }
    fcntl(fd, F_SETFL, 0);
    bn_nodelay(fd);
    s->c.fd = fd;
  }
  say(s->c.fd, "%s", req);
  printf("%s: sent %s to %s\n", me, req, s->name);
  long long end = now_ms() + TIMEOUT_MS;
  while (!bn_take(&s->c, reply, cap)) {
    long long left = end - now_ms();
    if (left <= 0 || !wait_fd(s->c.fd, POLLIN, (int)left) || !bn_fill(&s->c)) {
      printf("%s: no answer from %s to %s\n", me, s->name, req);
      hangup(s);
      return 0;
    }
  }
  printf("%s: got %s from %s\n", me, reply, s->name);
  return 1;
}

/*
 * request asks first, then second on NOTPRIMARY or no answer, until one
 * primary answers; it gives up (exit 2) after ATTEMPTS rounds.
 */
static void request(struct srv *first, struct srv *second, const char *req, char *reply, size_t cap) {
  for (int a = 1; a <= ATTEMPTS; a++) {
    if (call(first, req, reply, cap) && strcmp(reply, "NOTPRIMARY") != 0) return;
    if (call(second, req, reply, cap) && strcmp(reply, "NOTPRIMARY") != 0) return;
    sleep_ms(RETRY_MS);
  }
  fprintf(stderr, "%s: no primary answered %s after %d attempts\n", me, req, ATTEMPTS);
  exit(2);
}

static void resolve(struct srv *s, const char *hostport) {
  char host[128];
  const char *colon = strrchr(hostport, ':');
  if (!colon || (size_t)(colon - hostport) >= sizeof host) {
    fprintf(stderr, "bad address %s\n", hostport);
    exit(2);
  }
  memcpy(host, hostport, colon - hostport);
  host[colon - hostport] = 0;
  struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
  if (getaddrinfo(host, colon + 1, &hints, &s->ai) != 0) {
    fprintf(stderr, "cannot resolve %s\n", host);
    exit(2);
  }
  s->name = hostport;
  s->c.fd = -1;
}

static void client(const char *name, const char *mine, const char *other, int check_ms) {
  static struct srv m, o;
  char req[128], reply[BN_BUF], want[128];
  me = name;
  resolve(&m, mine);
  resolve(&o, other);
  long long start = now_ms();
  for (int i = 1; i <= WRITES; i++) {
    sleep_ms(GAP_MS);
    snprintf(req, sizeof req, "PUT %s %d", name, i);
    request(&m, &o, req, reply, sizeof reply);
  }
  sleep_ms(start + check_ms - now_ms());
  snprintf(req, sizeof req, "PUT final-%s done", name);
  request(&m, &o, req, reply, sizeof reply);
  if (strcmp(reply, "OK") != 0) {
    fprintf(stderr, "%s: unexpected %s\n", name, reply);
    exit(2);
  }
  snprintf(req, sizeof req, "GET final-%s", name);
  request(&o, &m, req, reply, sizeof reply);
  snprintf(want, sizeof want, "VAL done");
  if (strcmp(reply, want) != 0) {
    fprintf(stderr, "%s: lost acknowledged write: final-%s=done was acknowledged, the primary then answered %s\n",
            name, name, reply);
    exit(1);
  }
  printf("%s: read its acknowledged write back\n", name);
  exit(0);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  int fixed = strcmp(argv[argc - 1], "--fixed") == 0;
  if (fixed) argc--;
  if (argc == 5 && strcmp(argv[1], "server") == 0 && strcmp(argv[4], "primary") == 0) {
    sv.name = argv[2], sv.fixed = fixed, sv.primary = 1, sv.term = 1;
    server(atoi(argv[3]), NULL);
  }
  if (argc == 6 && strcmp(argv[1], "server") == 0 && strcmp(argv[4], "backup") == 0) {
    sv.name = argv[2], sv.fixed = fixed, sv.term = 1;
    server(atoi(argv[3]), argv[5]);
  }
  if (argc == 6 && strcmp(argv[1], "client") == 0) client(argv[2], argv[3], argv[4], atoi(argv[5]));
  fprintf(stderr, "usage: partition1 server NAME PORT primary [--fixed] | partition1 server NAME PORT backup PEER "
                  "[--fixed] | partition1 client NAME MINE OTHER CHECK_MS\n");
  return 2;
}
