/*
 * counter-1: two workers take turns incrementing a counter in a store
 * with a read-modify-write (GET, then PUT of the value + 1). The one whose
 * turn it is holds a baton; it passes the baton right after sending its
 * PUT, without waiting for the store's OK (a write-behind client: the OK
 * is read later, before the worker's next request). If the other worker's
 * GET reaches the store before that PUT, it reads the old value and its
 * PUT overwrites the increment: a lost update.
 *
 *   counter1 store PORT                    a store of integers
 *   counter1 first STORE PORT TURNS [--fixed]   takes the odd turns, listens for the second
 *   counter1 second STORE FIRST TURNS [--fixed] takes the even turns, dials the first
 *
 * Turn t (1..TURNS) is the first worker's if t is odd. After turn t the
 * worker sends BATON t+1 to the other, or, after the last turn, reads the
 * counter back: it must be TURNS, else exit 1; then it sends DONE and
 * exits, and so does the other on DONE.
 *
 * --fixed (workers): a worker waits for its PUT's OK before it passes the
 * baton, so the store has applied every increment before the next GET can
 * even be sent.
 */
#include "../common/bugnet.h"

#include <signal.h>
#include <sys/epoll.h>

/* store */

static struct {
  char k[16][32];
  long v[16];
  int n;
} st;

static long *slot(const char *k) {
  for (int i = 0; i < st.n; i++)
    if (strcmp(st.k[i], k) == 0) return &st.v[i];
  if (st.n == 16) {
    fprintf(stderr, "store: table full\n");
    exit(2);
  }
  snprintf(st.k[st.n], sizeof st.k[0], "%s", k);
  st.v[st.n] = 0; /* a counter starts at 0 */
  return &st.v[st.n++];
}

static void store_line(int fd, char *line) {
  char k[32];
  long v;
  printf("store: %s\n", line);
  if (sscanf(line, "GET %31s", k) == 1) {
    bn_trysend(fd, "VAL %ld", *slot(k));
  } else if (sscanf(line, "PUT %31s %ld", k, &v) == 2) {
    *slot(k) = v;
    bn_trysend(fd, "OK");
  } else {
    bn_trysend(fd, "ERR %s", line);
  }
}

/*
 * store_serve is an epoll loop: epoll reports connections in the order
 * their data came, so the store serves requests in arrival order whatever
 * the connections' ages (bn_serve's poll loop goes by age, and serves a GET
 * that came second first when both wait: on a busy machine that is a lost
 * update without any reordering in the network).
 */
static void store_serve(int port) {
  static struct bn_conn conns[BN_MAXC];
  int l = bn_listen(port), ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = l}, evs[BN_MAXC];
  if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev) < 0) bn_die("epoll");
  for (;;) {
    int n = epoll_wait(ep, evs, BN_MAXC, -1);
    if (n < 0) bn_die("epoll_wait");
    for (int i = 0; i < n; i++) {
      int fd = evs[i].data.fd;
      if (fd == l) {
        int c = accept(l, NULL, NULL);
        if (c < 0) continue;
        if (c >= BN_MAXC) {
          fprintf(stderr, "store: too many connections\n");
          exit(2);
        }
        bn_nodelay(c);
        conns[c] = (struct bn_conn){.fd = c};
        ev = (struct epoll_event){.events = EPOLLIN, .data.fd = c};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev) < 0) bn_die("epoll_ctl");
        continue;
      }
      int open = bn_fill(&conns[fd]);
      char line[BN_BUF];
      while (bn_take(&conns[fd], line, sizeof line)) store_line(fd, line);
      if (!open) close(fd); /* closing removes it from the epoll set */
    }
  }
}

/* workers */

static const char *me;

static void expect(struct bn_conn *c, const char *peer, char *line, size_t cap) {
  if (!bn_line(c, line, cap)) {
    fprintf(stderr, "%s: %s closed the connection\n", me, peer);
    exit(2);
  }
  printf("%s: got %s from %s\n", me, line, peer);
}

static void expect_ok(struct bn_conn *s) {
  char line[BN_BUF];
  expect(s, "the store", line, sizeof line);
  if (strcmp(line, "OK") != 0) {
    fprintf(stderr, "%s: unexpected %s\n", me, line);
    exit(2);
  }
}

/* get reads the counter. */
static long get(struct bn_conn *s) {
  char line[BN_BUF];
  long v;
  bn_send(s->fd, "GET c");
  expect(s, "the store", line, sizeof line);
  if (sscanf(line, "VAL %ld", &v) != 1) {
    fprintf(stderr, "%s: unexpected %s\n", me, line);
    exit(2);
  }
  return v;
}

/*
 * work takes the turns that fall to this worker (parity: 1 for the odd
 * ones) over the store connection s and the baton connection p.
 */
static void work(struct bn_conn *s, struct bn_conn *p, int parity, int turns, int fixed) {
  char line[BN_BUF];
  int t = parity == 1 ? 1 : 0;
  for (;;) {
    if (t == 0) { /* wait for the baton */
      expect(p, "the other worker", line, sizeof line);
      if (strcmp(line, "DONE") == 0) exit(0);
      if (sscanf(line, "BATON %d", &t) != 1) {
        fprintf(stderr, "%s: unexpected %s\n", me, line);
        exit(2);
      }
    }
    long v = get(s);
    printf("%s: turn %d: counter %ld -> %ld\n", me, t, v, v + 1);
    bn_send(s->fd, "PUT c %ld", v + 1);
    if (t == turns) break;
    /* The bug: the baton goes before the store has acknowledged the PUT. */
    if (fixed) expect_ok(s);
    bn_send(p->fd, "BATON %d", t + 1);
    if (!fixed) expect_ok(s);
    t = 0;
  }
  expect_ok(s);
  long v = get(s);
  bn_send(p->fd, "DONE");
  if (v != turns) {
    fprintf(stderr, "%s: lost update: the counter is %ld after %d increments\n", me, v, turns);
    exit(1);
  }
  printf("%s: the counter is %ld after %d increments\n", me, v, turns);
  exit(0);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  me = argc > 1 ? argv[1] : "counter1";
  int fixed = argc == 6 && strcmp(argv[5], "--fixed") == 0;
  if (argc == 3 && strcmp(argv[1], "store") == 0) store_serve(atoi(argv[2]));
  if ((argc == 5 || fixed) && strcmp(argv[1], "first") == 0 && atoi(argv[4]) > 0) {
    int l = bn_listen(atoi(argv[3]));
    struct bn_conn s = {.fd = bn_dial(argv[2])};
    struct bn_conn p = {.fd = accept(l, NULL, NULL)};
    if (p.fd < 0) bn_die("accept");
    bn_nodelay(p.fd);
    work(&s, &p, 1, atoi(argv[4]), fixed);
  }
  if ((argc == 5 || fixed) && strcmp(argv[1], "second") == 0 && atoi(argv[4]) > 0) {
    struct bn_conn s = {.fd = bn_dial(argv[2])}, p = {.fd = bn_dial(argv[3])};
    work(&s, &p, 0, atoi(argv[4]), fixed);
  }
  fprintf(stderr, "usage: counter1 store PORT | counter1 first STORE PORT TURNS [--fixed] | "
                  "counter1 second STORE FIRST TURNS [--fixed]\n");
  return 2;
}
