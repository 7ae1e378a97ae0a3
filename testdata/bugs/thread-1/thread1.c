/*
 * thread-1: a publish/subscribe broker with retained values (MQTT's
 * retained messages, a NATS KV watch, a Redis keyspace cache): a new
 * subscriber of a topic is sent the topic's latest value at once, then
 * every later publish. The broker serves each connection on a thread of
 * its own. The subscribing thread registers the subscriber and copies the
 * retained value under the broker's lock, and writes it after unlocking, as
 * "no I/O under a lock" says. A publish served by another thread in
 * between fans its newer value out to the new subscriber first: the
 * subscriber then receives the older retained value after the newer one
 * and goes back in time.
 *
 *   thread1 broker PORT [--fixed]   the broker, a thread per connection
 *   thread1 pub BROKER TOPIC N      publishes 1..N to TOPIC and exits (a sensor)
 *   thread1 sub BROKER ID TOPIC N   subscribes to TOPIC as ID until it has seen N
 *
 * Protocol, one line each: a client starts with CONNECT id -> CONNACK id,
 * as an MQTT client does; SUB t -> SUBACK t, RETAINED t v (v = 0 before
 * any publish), then MSG t v for every later publish; PUB t v -> MSG t v
 * to every subscriber of t, and no answer (MQTT's QoS 0). Every line
 * leaves in one write(2), which a stream socket never interleaves with
 * another thread's, so the broker takes no lock to write (the bug: nothing
 * orders which thread's line goes first either).
 *
 * The subscriber exits 1 when a value is older than one it already
 * received, 0 once it has had the retained value and seen N.
 *
 * --fixed (broker): every client has a write lock. The subscribing thread
 * takes the subscriber's before it registers and keeps it until the
 * retained value is written; a publisher's fan-out takes each subscriber's
 * (after releasing the broker's lock), so its MSG waits behind the
 * RETAINED.
 */
#include "../common/bugnet.h"

#include <pthread.h>
#include <signal.h>

#define MAXT 8  /* topics */
#define MAXS 16 /* subscribers of a topic */

/* A client connection of the broker: its socket and its write lock (used
 * with --fixed only). */
struct client {
  int fd;
  pthread_mutex_t wmu;
};

struct topic {
  char name[32];
  long retained;
  struct client *subs[MAXS];
  int nsubs;
};

/* The broker's state: the topics and the lock over all of them. */
static struct {
  pthread_mutex_t mu;
  struct topic t[MAXT];
  int n;
  int fixed;
} br = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* topic_of finds or creates a topic; the caller holds br.mu. */
static struct topic *topic_of(const char *name) {
  for (int i = 0; i < br.n; i++)
    if (strcmp(br.t[i].name, name) == 0) return &br.t[i];
  if (br.n == MAXT) {
    fprintf(stderr, "broker: too many topics\n");
    exit(2);
  }
  struct topic *t = &br.t[br.n++];
  snprintf(t->name, sizeof t->name, "%s", name);
  return t;
}

/* client_send writes one line to c, with --fixed under its write lock
 * (unless the caller holds it already: locked). A write to a subscriber
 * that went away fails and is only logged. */
static void client_send(struct client *c, int locked, const char *fmt, ...) {
  char b[BN_BUF];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b, sizeof b - 1, fmt, ap);
  va_end(ap);
  b[n++] = '\n';
  int lock = br.fixed && !locked;
  if (lock) pthread_mutex_lock(&c->wmu);
  ssize_t w = write(c->fd, b, n);
  if (lock) pthread_mutex_unlock(&c->wmu);
  if (w != n) fprintf(stderr, "broker: write to fd %d failed\n", c->fd);
}

static void subscribe(struct client *c, const char *name) {
  client_send(c, 0, "SUBACK %s", name); /* the subscription is taken */
  /* The fix: hold the subscriber's write lock from its registration until
   * its retained value is written, so no fan-out can write before it. */
  if (br.fixed) pthread_mutex_lock(&c->wmu);
  pthread_mutex_lock(&br.mu);
  struct topic *t = topic_of(name);
  if (t->nsubs == MAXS) {
    fprintf(stderr, "broker: too many subscribers of %s\n", name);
    exit(2);
  }
  t->subs[t->nsubs++] = c;
  long v = t->retained;
  pthread_mutex_unlock(&br.mu);
  /* The bug (without the fix): from the unlock above, a publish served by
   * another thread can write its MSG to c before this line is written. */
  client_send(c, br.fixed, "RETAINED %s %ld", name, v);
  if (br.fixed) pthread_mutex_unlock(&c->wmu);
  printf("broker: fd %d subscribed to %s, sent retained %ld\n", c->fd, name, v);
}

static void publish(const char *name, long v) {
  struct client *subs[MAXS];
  pthread_mutex_lock(&br.mu);
  struct topic *t = topic_of(name);
  t->retained = v;
  int n = t->nsubs;
  memcpy(subs, t->subs, n * sizeof subs[0]);
  pthread_mutex_unlock(&br.mu);
  printf("broker: %s = %ld, to %d subscriber(s)\n", name, v, n);
  for (int i = 0; i < n; i++) client_send(subs[i], 0, "MSG %s %ld", name, v);
}

/* unsubscribe_all removes c from every topic when its connection ends. */
static void unsubscribe_all(struct client *c) {
  pthread_mutex_lock(&br.mu);
  for (int i = 0; i < br.n; i++) {
    struct topic *t = &br.t[i];
    for (int j = 0; j < t->nsubs; j++)
      if (t->subs[j] == c) t->subs[j--] = t->subs[--t->nsubs];
  }
  pthread_mutex_unlock(&br.mu);
}

static void *serve_client(void *arg) {
  struct client *c = arg;
  struct bn_conn in = {.fd = c->fd};
  char line[BN_BUF], name[32];
  long v;
  while (bn_line(&in, line, sizeof line)) {
    if (sscanf(line, "CONNECT %31s", name) == 1) {
      printf("broker: fd %d is %s\n", c->fd, name);
      client_send(c, 0, "CONNACK %s", name);
    } else if (sscanf(line, "SUB %31s", name) == 1) {
      subscribe(c, name);
    } else if (sscanf(line, "PUB %31s %ld", name, &v) == 2) {
      publish(name, v);
    } else {
      client_send(c, 0, "ERR %s", line);
    }
  }
  /* The client is gone. The struct stays allocated: a publisher may still
   * hold it in a copy of a subscriber list. (A real broker would count
   * references and close the fd with the last one; here clients go away
   * only at the end.) */
  unsubscribe_all(c);
  printf("broker: fd %d closed\n", c->fd);
  close(c->fd);
  return NULL;
}

static void broker(int port) {
  int l = bn_listen(port);
  printf("broker: listening on %d\n", port);
  for (;;) {
    int fd = accept(l, NULL, NULL);
    if (fd < 0) continue;
    bn_nodelay(fd);
    struct client *c = calloc(1, sizeof *c);
    if (!c) bn_die("calloc");
    c->fd = fd;
    pthread_mutex_init(&c->wmu, NULL);
    pthread_t th;
    if (pthread_create(&th, NULL, serve_client, c) != 0) bn_die("pthread_create");
    pthread_detach(th);
  }
}

/* handshake connects to the broker as who and waits for its CONNACK. */
static struct bn_conn handshake(const char *addr, const char *who) {
  struct bn_conn s = {.fd = bn_dial(addr)};
  char line[BN_BUF], want[64];
  bn_send(s.fd, "CONNECT %s", who);
  snprintf(want, sizeof want, "CONNACK %s", who);
  if (!bn_line(&s, line, sizeof line) || strcmp(line, want) != 0) {
    fprintf(stderr, "%s: expected %s, got %s\n", who, want, line);
    exit(2);
  }
  printf("%s: connected\n", who);
  return s;
}

/* pub publishes at most once (MQTT's QoS 0, a sensor's readings): no
 * answer to wait for. */
static void pub(const char *addr, const char *t, long n) {
  struct bn_conn s = handshake(addr, "sensor");
  for (long v = 1; v <= n; v++) {
    bn_send(s.fd, "PUB %s %ld", t, v);
    printf("sensor: sent PUB %s %ld\n", t, v);
  }
  close(s.fd);
  printf("sensor: published 1..%ld\n", n);
  exit(0);
}

static void sub(const char *addr, const char *me, const char *t, long n) {
  struct bn_conn s = handshake(addr, me);
  char line[BN_BUF], kind[16], name[32], prev[BN_BUF] = "nothing";
  long v, last = -1;
  int retained = 0;
  bn_send(s.fd, "SUB %s", t);
  printf("%s: sent SUB %s\n", me, t);
  while (bn_line(&s, line, sizeof line)) {
    printf("%s: got %s\n", me, line);
    if (strncmp(line, "SUBACK ", 7) == 0) continue;
    if (sscanf(line, "%15s %31s %ld", kind, name, &v) != 3 || strcmp(name, t) != 0 ||
        (strcmp(kind, "RETAINED") != 0 && strcmp(kind, "MSG") != 0)) {
      fprintf(stderr, "%s: unexpected %s\n", me, line);
      exit(2);
    }
    if (v < last) {
      fprintf(stderr, "%s: went back in time: got %s after %s\n", me, line, prev);
      exit(1);
    }
    last = v;
    snprintf(prev, sizeof prev, "%s", line);
    retained |= strcmp(kind, "RETAINED") == 0;
    if (retained && v == n) {
      printf("%s: saw %s %ld, values in order\n", me, t, n);
      exit(0);
    }
  }
  fprintf(stderr, "%s: the broker closed the connection\n", me);
  exit(2);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  int fixed = argc == 4 && strcmp(argv[3], "--fixed") == 0;
  if ((argc == 3 || fixed) && strcmp(argv[1], "broker") == 0) {
    br.fixed = fixed;
    broker(atoi(argv[2]));
  }
  if (argc == 5 && atol(argv[4]) > 0 && strcmp(argv[1], "pub") == 0)
    pub(argv[2], argv[3], atol(argv[4]));
  if (argc == 6 && atol(argv[5]) > 0 && strcmp(argv[1], "sub") == 0)
    sub(argv[2], argv[3], argv[4], atol(argv[5]));
  fprintf(stderr, "usage: thread1 broker PORT [--fixed] | thread1 pub BROKER TOPIC N | "
                  "thread1 sub BROKER ID TOPIC N\n");
  return 2;
}
