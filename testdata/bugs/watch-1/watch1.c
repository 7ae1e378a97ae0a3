/*
 * watch-1: a cache that lists a store and watches it, the way an informer
 * mirrors a Kubernetes API server or a ZooKeeper/etcd client mirrors a
 * subtree, replaces its contents with the list's snapshot whenever the
 * snapshot comes. An event it applied before the snapshot, for a write the
 * snapshot was taken too early to hold, is wiped out.
 *
 *   watch1 store PORT                 a key-value store with a watch stream
 *   watch1 writer STORE N             writes k1..kN, then end
 *   watch1 watcher STORE N [--fixed]  mirrors the store, checks the mirror
 *
 * The store numbers its writes (the revision). WATCH turns a connection
 * into a stream of EV rev k v, one per later write, and is answered
 * WATCHING rev; LIST is answered with one line, SNAP rev k=v..., the whole
 * table at that revision. The watcher opens the watch first, so that no
 * write after its snapshot goes unseen, then lists on a second connection,
 * and serves both from one poll loop, the snapshot first when both are in.
 * It applies every event as it comes and, when the snapshot comes,
 * replaces its mirror with it. Once it has the snapshot and has seen the
 * writer's last write (end), its mirror must hold k1..kN; a key missing is
 * a lost write: exit 1.
 *
 * --fixed (watcher): the events that came before the snapshot are kept;
 * the snapshot replaces the mirror, and those of them newer than its
 * revision are applied again on top. Every write newer than the snapshot
 * is on the watch stream, so the mirror ends complete in any order.
 *
 * The store sends each kind of answer from a function of its own: events,
 * snapshots and replies each leave from their own call site.
 */
#include "../common/bugnet.h"

#include <signal.h>

#define MAXK 64
#define SNAPMAX (MAXK * 48)

/* A table of keys and values: the store's, and the watcher's mirror. */
struct table {
  char k[MAXK][32], v[MAXK][32];
  int n;
};

static void tset(struct table *t, const char *k, const char *v) {
  int i;
  for (i = 0; i < t->n && strcmp(t->k[i], k) != 0; i++) {
  }
  if (i == MAXK) {
    fprintf(stderr, "table full\n");
    exit(2);
  }
  if (i == t->n) snprintf(t->k[t->n++], sizeof t->k[0], "%s", k);
  snprintf(t->v[i], sizeof t->v[0], "%s", v);
}

static const char *tget(const struct table *t, const char *k) {
  for (int i = 0; i < t->n; i++)
    if (strcmp(t->k[i], k) == 0) return t->v[i];
  return NULL;
}

/* writeall writes one whole message; a peer that left is not the store's error. */
static void writeall(int fd, const char *b, size_t n) {
  if (write(fd, b, n) != (ssize_t)n) perror("store: write");
}

/* store */

static struct {
  struct table t;
  int rev;
  int watchers[BN_MAXC], nw;
} st;

/* send_event streams one write to a watcher. */
static void send_event(int fd, int rev, const char *k, const char *v) {
  char b[128];
  int n = snprintf(b, sizeof b, "EV %d %s %s\n", rev, k, v);
  printf("store: event %d %s=%s to fd %d\n", rev, k, v, fd);
  writeall(fd, b, n);
}

/* send_snapshot answers LIST with the whole table in one message. */
static void send_snapshot(int fd) {
  char b[SNAPMAX];
  int n = snprintf(b, sizeof b, "SNAP %d", st.rev);
  for (int i = 0; i < st.t.n; i++) n += snprintf(b + n, sizeof b - n, " %s=%s", st.t.k[i], st.t.v[i]);
  n += snprintf(b + n, sizeof b - n, "\n");
  printf("store: snapshot at %d (%d keys) to fd %d\n", st.rev, st.t.n, fd);
  writeall(fd, b, n);
}

/* send_reply answers PUT and WATCH. */
static void send_reply(int fd, const char *what, int rev) {
  char b[64];
  int n = snprintf(b, sizeof b, "%s %d\n", what, rev);
  writeall(fd, b, n);
}

static void store_line(int fd, char *line) {
  char k[32], v[32];
  printf("store: %s\n", line);
  if (sscanf(line, "PUT %31s %31s", k, v) == 2) {
    tset(&st.t, k, v);
    st.rev++;
    send_reply(fd, "OK", st.rev);
    for (int i = 0; i < st.nw; i++) send_event(st.watchers[i], st.rev, k, v);
  } else if (strcmp(line, "WATCH") == 0) {
    st.watchers[st.nw++] = fd;
    send_reply(fd, "WATCHING", st.rev);
  } else if (strcmp(line, "LIST") == 0) {
    send_snapshot(fd);
  }
}

static void store_closed(int fd) {
  for (int i = 0; i < st.nw; i++)
    if (st.watchers[i] == fd) st.watchers[i--] = st.watchers[--st.nw];
}

/* writer */

static void expect(struct bn_conn *c, const char *who, char *line, size_t cap) {
  if (!bn_line(c, line, cap)) {
    fprintf(stderr, "%s: the store closed the connection\n", who);
    exit(2);
  }
}

static void writer(const char *store, int n) {
  struct bn_conn c = {.fd = bn_dial(store)};
  char line[BN_BUF];
  for (int i = 1; i <= n + 1; i++) {
    if (i <= n) bn_send(c.fd, "PUT k%d v%d", i, i);
    else bn_send(c.fd, "PUT end %d", n);
    expect(&c, "writer", line, sizeof line);
    printf("writer: %s\n", line);
  }
  exit(0);
}

/* watcher */

static struct {
  int fixed;
  struct table mirror;
  int snapped;   /* the snapshot came */
  int ended;     /* the writer's last write was seen */
  struct {       /* --fixed: the events that came before the snapshot */
    int rev;
    char k[32], v[32];
  } early[MAXK];
  int nearly;
} wt;

static void on_snapshot(char *line) {
  int rev, off;
  if (sscanf(line, "SNAP %d%n", &rev, &off) != 1) {
    fprintf(stderr, "watcher: unexpected %s\n", line);
    exit(2);
  }
  /* The snapshot is the store at rev: it replaces the mirror. */
  wt.mirror.n = 0;
  for (char *kv = strtok(line + off, " "); kv; kv = strtok(NULL, " ")) {
    char *eq = strchr(kv, '=');
    if (!eq) continue;
    *eq = 0;
    tset(&wt.mirror, kv, eq + 1);
    if (strcmp(kv, "end") == 0) wt.ended = 1;
  }
  printf("watcher: snapshot at %d: %d keys\n", rev, wt.mirror.n);
  wt.snapped = 1;
  if (!wt.fixed) return;
  for (int i = 0; i < wt.nearly; i++)
    if (wt.early[i].rev > rev) {
      printf("watcher: event %d is newer than the snapshot: applied again\n", wt.early[i].rev);
      tset(&wt.mirror, wt.early[i].k, wt.early[i].v);
    }
}

static void on_event(const char *line) {
  int rev;
  char k[32], v[32];
  if (sscanf(line, "EV %d %31s %31s", &rev, k, v) != 3) {
    fprintf(stderr, "watcher: unexpected %s\n", line);
    exit(2);
  }
  printf("watcher: event %d %s=%s\n", rev, k, v);
  tset(&wt.mirror, k, v);
  if (strcmp(k, "end") == 0) wt.ended = 1;
  if (wt.fixed && !wt.snapped && wt.nearly < MAXK) {
    wt.early[wt.nearly].rev = rev;
    snprintf(wt.early[wt.nearly].k, sizeof wt.early[0].k, "%s", k);
    snprintf(wt.early[wt.nearly].v, sizeof wt.early[0].v, "%s", v);
    wt.nearly++;
  }
}

static void watcher(const char *store, int n, int fixed) {
  struct bn_conn w = {.fd = bn_dial(store)}, l = {.fd = -1};
  char line[SNAPMAX];
  wt.fixed = fixed;
  /* Watch first and wait until the store confirms: every write after
   * WATCHING comes as an event, and the list below is taken after it. */
  bn_send(w.fd, "WATCH");
  expect(&w, "watcher", line, sizeof line);
  printf("watcher: %s\n", line);
  while (bn_take(&w, line, sizeof line)) on_event(line); /* read with WATCHING */
  l.fd = bn_dial(store);
  bn_send(l.fd, "LIST");
  /* The connection that will be polled first is the list's: a snapshot
   * already in is applied before the events that came with it. */
  struct pollfd fds[2] = {{.fd = l.fd, .events = POLLIN}, {.fd = w.fd, .events = POLLIN}};
  struct bn_conn *conns[2] = {&l, &w};
  while (!(wt.snapped && wt.ended)) {
    if (poll(fds, 2, -1) < 0) bn_die("poll");
    for (int i = 0; i < 2; i++) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      if (!bn_fill(conns[i])) {
        fprintf(stderr, "watcher: the store closed the connection\n");
        exit(2);
      }
      while (bn_take(conns[i], line, sizeof line)) {
        if (conns[i] == &l) on_snapshot(line);
        else on_event(line);
      }
    }
  }
  for (int i = 1; i <= n; i++) {
    char k[16], want[16];
    snprintf(k, sizeof k, "k%d", i);
    snprintf(want, sizeof want, "v%d", i);
    const char *got = tget(&wt.mirror, k);
    if (!got || strcmp(got, want) != 0) {
      fprintf(stderr, "watcher: lost write: the store has %s=%s, the mirror %s%s\n", k, want,
              got ? "has " : "lacks it", got ? got : "");
      exit(1);
    }
  }
  printf("watcher: the mirror holds all %d writes\n", n);
  exit(0);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  if (argc == 3 && strcmp(argv[1], "store") == 0) {
    static struct bn_loop lp;
    bn_serve(&lp, bn_listen(atoi(argv[2])), store_line, store_closed);
  }
  if (argc == 4 && strcmp(argv[1], "writer") == 0 && atoi(argv[3]) > 0) writer(argv[2], atoi(argv[3]));
  if ((argc == 4 || argc == 5) && strcmp(argv[1], "watcher") == 0 && atoi(argv[3]) > 0)
    watcher(argv[2], atoi(argv[3]), argc == 5 && strcmp(argv[4], "--fixed") == 0);
  fprintf(stderr, "usage: watch1 store PORT | watch1 writer STORE N | watch1 watcher STORE N [--fixed]\n");
  return 2;
}
