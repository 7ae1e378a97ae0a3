/*
 * partition-1: a primary/backup store whose primary serves reads under a
 * lease renewed by the backup's heartbeat acks, and counts the lease from
 * when an ack ARRIVES instead of from when its heartbeat was SENT. An ack
 * held in the network across a partition renews, at the heal, the lease of
 * a primary that was deposed during the partition: it answers a read with
 * a value the new primary has since overwritten (a stale read).
 *
 *   partition1 server NAME PORT primary [--fixed]
 *   partition1 server NAME PORT backup PEER [--fixed]
 *   partition1 client NAME FIRST SECOND CHECK_MS
 *
 * The primary (term 1) sends "HB term ts" to the backup every HB_MS (ts: its
 * monotonic clock at the send); the backup answers "ACK term ts". Each ack
 * renews the primary's lease for LEASE_MS, and it serves only under a valid
 * lease: GET from its own table, PUT replicated synchronously (REPL, OK to
 * the client once the backup answers REPLOK). The backup answers clients
 * NOTPRIMARY. After FAILOVER_MS (> LEASE_MS) without a heartbeat the backup
 * takes over with term+1: the old primary's lease has run out by then, so
 * the new primary serves alone (its peer is presumed dead) without a lease.
 * A server that hears a higher term (HB, REPL, or TERM, the answer to a
 * message of a lower term) steps down to backup. Values are versions: a
 * PUT or REPL of k=v applies only if v is above the stored version.
 *
 * The bug: the lease is counted from the ack's arrival (now + LEASE_MS). An
 * ack sent just before a partition and held in flight across it arrives at
 * the heal, after the backup took over, and gives the deposed primary a
 * fresh lease; until the new primary's TERM reaches it, it answers GET from
 * a table that misses the writes of the partition.
 *
 * The client writes x=1, 2, ... (PUT, then GET x, which must answer the
 * version just acknowledged or a later one), asking FIRST and then SECOND
 * on NOTPRIMARY or when FIRST does not answer in TIMEOUT_MS, until CHECK_MS
 * after its start. Unavailability is not an error; a read older than an
 * acknowledged write is (exit 1).
 *
 * --fixed (servers): the ack echoes the heartbeat's send time and the lease
 * runs from it (ts + LEASE_MS), as in Raft's leader leases: an ack held
 * across a partition renews the lease only up to a moment already past.
 */
#include "../common/bugnet.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>

#define HB_MS 100        /* heartbeat period */
#define LEASE_MS 300     /* an ack renews the primary's lease for this long */
#define FAILOVER_MS 500  /* a backup takes over after this long without a heartbeat (> LEASE_MS) */
#define TIMEOUT_MS 200   /* a client's wait for an answer */
#define RETRY_MS 100     /* a client's pause before it tries again */
#define ATTEMPTS 40      /* tries per request: 12 s at most, beyond any outage */
#define GAP_MS 100       /* a client's pace */
#define READS 3          /* reads per write */

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

#define MAXK 16
#define MAXP 16

static struct {
  const char *name;
  int fixed, primary, solo, term, peer, seq;
  int quiet; /* a primary that took over: no heartbeats until its old peer is heard again */
  long long last_hb, next_hb, lease_until;
  char keys[MAXK][64];
  int vals[MAXK], n;
  struct {
    int seq, fd, v, id;
    char k[64];
  } pend[MAXP]; /* PUTs waiting for the backup's REPLOK */
  int npend;
} sv = {.peer = -1};

static int kv_get(const char *k) {
  for (int i = 0; i < sv.n; i++)
    if (strcmp(sv.keys[i], k) == 0) return sv.vals[i];
  return 0;
}

static void kv_set(const char *k, int v) {
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
    sv.vals[i] = 0;
  }
  if (v > sv.vals[i]) sv.vals[i] = v;
}

static void step_down(int t) {
  printf("%s: a primary of term %d exists: stepping down from term %d\n", sv.name, t, sv.term);
  sv.primary = sv.solo = 0, sv.term = t, sv.last_hb = now_ms(), sv.lease_until = 0;
  for (int i = 0; i < sv.npend; i++) say(sv.pend[i].fd, "%d NOTPRIMARY", sv.pend[i].id);
  sv.npend = 0;
}

/* serving: a primary answers clients alone after a takeover, else under its lease. */
static int serving(void) {
  return sv.primary && (sv.solo || now_ms() < sv.lease_until);
}

static void server_line(int fd, char *line) {
  char k[64];
  int t, v, s, id;
  long long ts;
  printf("%s: %s\n", sv.name, line);
  if (strcmp(line, "PEER") == 0) {
    sv.peer = fd;
  } else if (sscanf(line, "HB %d %lld", &t, &ts) == 2) {
    if (t < sv.term) {
      say(fd, "TERM %d", sv.term);
      if (sv.quiet) printf("%s: the old primary is back: heartbeating it\n", sv.name);
      sv.quiet = 0;
      return;
    }
    if (sv.primary && t > sv.term) step_down(t);
    if (!sv.primary) sv.term = t, sv.last_hb = now_ms(), say(fd, "ACK %d %lld", t, ts);
  } else if (sscanf(line, "ACK %d %lld", &t, &ts) == 2) {
    if (sv.primary && t == sv.term) {
      sv.lease_until = (sv.fixed ? ts : now_ms()) + LEASE_MS;
      printf("%s: lease until %lld\n", sv.name, sv.lease_until);
    }
  } else if (sscanf(line, "TERM %d", &t) == 1) {
    if (t > sv.term) step_down(t);
  } else if (sscanf(line, "REPL %d %d %63s %d", &t, &s, k, &v) == 4) {
    if (t < sv.term) {
      say(fd, "TERM %d", sv.term);
      sv.quiet = 0;
      return;
    }
    if (sv.primary && t > sv.term) step_down(t);
    kv_set(k, v);
    say(fd, "REPLOK %d %d", t, s);
  } else if (sscanf(line, "REPLOK %d %d", &t, &s) == 2) {
    for (int i = 0; i < sv.npend; i++)
      if (sv.pend[i].seq == s && sv.primary && t == sv.term) {
        kv_set(sv.pend[i].k, sv.pend[i].v);
        say(sv.pend[i].fd, "%d OK", sv.pend[i].id);
        sv.pend[i] = sv.pend[--sv.npend];
        break;
      }
  } else if (sscanf(line, "%d PUT %63s %d", &id, k, &v) == 3) {
    if (!serving()) {
      say(fd, "%d NOTPRIMARY", id);
    } else if (sv.solo || sv.peer < 0) {
      kv_set(k, v);
      say(fd, "%d OK", id);
    } else if (sv.npend == MAXP) {
      say(fd, "%d BUSY", id);
    } else {
      sv.pend[sv.npend].seq = ++sv.seq, sv.pend[sv.npend].fd = fd, sv.pend[sv.npend].v = v;
      sv.pend[sv.npend].id = id;
      snprintf(sv.pend[sv.npend].k, sizeof sv.pend[sv.npend].k, "%s", k);
      sv.npend++;
      say(sv.peer, "REPL %d %d %s %d", sv.term, sv.seq, k, v); /* synchronous: OK at REPLOK */
    }
  } else if (sscanf(line, "%d GET %63s", &id, k) == 2) {
    if (!serving()) say(fd, "%d NOTPRIMARY", id);
    else say(fd, "%d VAL %d", id, kv_get(k)); /* a lease read: no round trip to the backup */
  }
}

/* server_close forgets a connection that ended: the peer's, or a client's pending requests. */
static void server_close(int fd) {
  if (fd == sv.peer) sv.peer = -1;
  for (int j = 0; j < sv.npend; j++)
    if (sv.pend[j].fd == fd) sv.pend[j--] = sv.pend[--sv.npend];
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
      sv.term++, sv.primary = sv.solo = sv.quiet = 1, sv.next_hb = now;
      printf("%s: no heartbeat for %d ms: taking over as primary (term %d)\n", sv.name, FAILOVER_MS, sv.term);
    }
    if (sv.primary && now >= sv.next_hb) {
      if (sv.peer >= 0 && !sv.quiet) say(sv.peer, "HB %d %lld", sv.term, now);
      sv.next_hb = now + HB_MS;
    }
    bn_handle(&lp, l, server_line, server_close);
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
 * call sends one request to s, tagged with a new id, and reads its answer
 * within TIMEOUT_MS, on a new connection if needed; 0 when s is
 * unreachable, slow or gone. A slow server keeps its connection (answers
 * to earlier ids are skipped), as a client library that matches replies
 * to requests does; a connection that ends is dropped.
 */
static int call(struct srv *s, const char *req, char *reply, size_t cap) {
  static int ids;
  char line[BN_BUF];
  int id = ++ids, got;
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
  say(s->c.fd, "%d %s", id, req);
  printf("%s: sent %d %s to %s\n", me, id, req, s->name);
  long long end = now_ms() + TIMEOUT_MS;
  for (;;) {
    while (bn_take(&s->c, line, sizeof line)) {
      int n = 0;
      if (sscanf(line, "%d %n", &got, &n) == 1 && got == id) {
        snprintf(reply, cap, "%s", line + n);
        printf("%s: got %s from %s\n", me, line, s->name);
        return 1;
      }
      printf("%s: late answer %s from %s skipped\n", me, line, s->name);
    }
    long long left = end - now_ms();
    if (left <= 0 || !wait_fd(s->c.fd, POLLIN, (int)left)) {
      printf("%s: no answer from %s to %d %s\n", me, s->name, id, req);
      return 0;
    }
    if (!bn_fill(&s->c)) {
      printf("%s: %s closed the connection\n", me, s->name);
      hangup(s);
      return 0;
    }
  }
}

/*
 * request asks first, then second on NOTPRIMARY or no answer, until one
 * primary answers; it gives up (exit 2) after ATTEMPTS rounds.
 */
static void request(struct srv *first, struct srv *second, const char *req, char *reply, size_t cap) {
  for (int a = 1; a <= ATTEMPTS; a++) {
    if (call(first, req, reply, cap) && strcmp(reply, "NOTPRIMARY") != 0 && strcmp(reply, "BUSY") != 0) return;
    if (call(second, req, reply, cap) && strcmp(reply, "NOTPRIMARY") != 0 && strcmp(reply, "BUSY") != 0) return;
    sleep_ms(RETRY_MS);
  }
  fprintf(stderr, "%s: no primary answered %s after %d attempts\n", me, req, ATTEMPTS);
  exit(2);
}

static void resolve(struct srv *s, const char *hostport) {
  s->ai = bn_resolve(hostport);
  s->name = hostport;
  s->c.fd = -1;
}

static void client(const char *name, const char *first, const char *second, int check_ms) {
  static struct srv a, b;
  char req[128], reply[BN_BUF];
  int v;
  me = name;
  resolve(&a, first);
  resolve(&b, second);
  long long start = now_ms();
  for (int i = 1; now_ms() < start + check_ms; i++) {
    sleep_ms(GAP_MS);
    snprintf(req, sizeof req, "PUT x %d", i);
    request(&a, &b, req, reply, sizeof reply);
    if (strcmp(reply, "OK") != 0) {
      fprintf(stderr, "%s: unexpected %s\n", name, reply);
      exit(2);
    }
    for (int r = 0; r < READS; r++) {
      request(&a, &b, "GET x", reply, sizeof reply);
      if (sscanf(reply, "VAL %d", &v) != 1) {
        fprintf(stderr, "%s: unexpected %s\n", name, reply);
        exit(2);
      }
      if (v < i) {
        fprintf(stderr, "%s: stale read: x=%d was acknowledged, then GET x answered %d\n", name, i, v);
        exit(1);
      }
    }
  }
  printf("%s: every read saw the last acknowledged write\n", name);
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
                  "[--fixed] | partition1 client NAME FIRST SECOND CHECK_MS\n");
  return 2;
}
