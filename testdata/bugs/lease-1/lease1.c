/*
 * lease-1: a lock lease expires while its holder's renewal is in flight;
 * the next holder is granted the lock, and both read-modify-write the same
 * record: one increment is lost.
 *
 *   lease1 lockd PORT                  lock server: leases of TTL_MS
 *   lease1 store PORT [--fixed]        a counter, read and written by holders
 *   lease1 worker NAME LOCKD STORE N   takes the lock, increments, waits for N
 *
 * lockd grants one lock to one holder at a time, with a token that grows
 * per grant and a lease of TTL_MS. The holder renews it with a one-way
 * keepalive (RENEW token) every BEAT_MS; lockd expires the lease when no
 * renewal arrived for TTL_MS (the timeout of its poll loop) and grants the
 * lock to the next waiter. A renewal or release of a lease that is no
 * longer current is dropped without an answer.
 *
 * A worker takes the lock, reads the counter, works for WORK_BEATS beats
 * of BEAT_MS (longer than one TTL, renewing after every beat but the
 * last), writes counter+1 and releases.
 * It believes its keepalives keep the lease alive: it never learns that
 * the lease expired. When one of its messages (the GRANT, the GET, a
 * RENEW) is late by more than the slack of the lease, lockd expires it
 * and grants the other worker, which reads the same old value: both
 * write 1. Each worker then reports DONE to the store and waits until N
 * workers did; the counter must be N, else the worker exits 1.
 *
 * --fixed (store): fencing tokens. Every GET and PUT carries the holder's
 * token; the store remembers the highest one it has seen and refuses
 * (FENCED) a request with a lower one. A read-modify-write whose GET and
 * PUT were both accepted saw no other holder in between, whatever the
 * delays; a fenced worker releases and takes the lock again.
 */
#include "../common/bugnet.h"

#include <errno.h>

#define TTL_MS 300  /* lease length, measured by lockd from the last renewal */
#define BEAT_MS 100  /* keepalive period: three beats per lease */
#define WORK_BEATS 4 /* a worker's critical section, in beats: longer than one lease */

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
  }
}

/* lockd */

#define MAXW 8

struct lockd {
  struct bn_loop lp;
  int holder;            /* fd of the holder's connection, -1 when free */
  int token;             /* token of the current (or last) grant */
  long long expiry;      /* when the holder's lease ends, in ms */
  int waiting[MAXW], nw; /* fds waiting for the lock, first come first served */
};

static void lockd_grant_next(struct lockd *d) {
  d->holder = -1;
  if (d->nw == 0) return;
  d->holder = d->waiting[0];
  memmove(d->waiting, d->waiting + 1, --d->nw * sizeof d->waiting[0]);
  d->token++;
  d->expiry = now_ms() + TTL_MS;
  printf("lockd: grant token %d to fd %d\n", d->token, d->holder);
  bn_send(d->holder, "GRANT %d", d->token);
}

static void lockd_line(struct lockd *d, int fd, char *line) {
  int tok;
  printf("lockd: %s\n", line);
  if (strncmp(line, "ACQUIRE", 7) == 0) {
    if (d->nw == MAXW) {
      fprintf(stderr, "lockd: too many waiters\n");
      exit(2);
    }
    d->waiting[d->nw++] = fd;
    if (d->holder < 0) lockd_grant_next(d);
  } else if (sscanf(line, "RENEW %d", &tok) == 1) {
    if (d->holder == fd && tok == d->token) d->expiry = now_ms() + TTL_MS;
    else printf("lockd: renewal of stale token %d dropped\n", tok);
  } else if (sscanf(line, "RELEASE %d", &tok) == 1) {
    if (d->holder == fd && tok == d->token) lockd_grant_next(d);
    else printf("lockd: release of stale token %d dropped\n", tok);
  }
}

static void lockd_closed(struct lockd *d, int fd) {
  for (int i = 0; i < d->nw; i++)
    if (d->waiting[i] == fd) memmove(d->waiting + i, d->waiting + i + 1, (--d->nw - i) * sizeof d->waiting[0]);
  if (d->holder == fd) lockd_grant_next(d);
}

/*
 * lockd_serve is bn_serve with the lease's expiry as the poll timeout.
 * Timers come first: a lease whose time is up is expired before the
 * messages that woke the loop are read, as a timer wheel run at the top
 * of an event loop would.
 */
static void lockd_serve(int port) {
  static struct lockd d = {.holder = -1};
  int l = bn_listen(port);
  bn_add(&d.lp, l);
  for (;;) {
    int timeout = -1;
    if (d.holder >= 0) {
      long long left = d.expiry - now_ms();
      timeout = left > 0 ? (int)left : 0;
    }
    if (poll(d.lp.fds, d.lp.n, timeout) < 0) bn_die("poll");
    if (d.holder >= 0 && now_ms() >= d.expiry) {
      printf("lockd: lease of token %d expired\n", d.token);
      lockd_grant_next(&d);
    }
    if (d.lp.fds[0].revents & POLLIN) {
      int c = accept(l, NULL, NULL);
      if (c >= 0) bn_nodelay(c), bn_add(&d.lp, c);
      continue;
    }
    for (int i = 1; i < d.lp.n; i++) {
      if (d.lp.fds[i].fd < 0 || !(d.lp.fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      struct bn_conn *c = &d.lp.conns[i];
      int open = bn_fill(c);
      char line[BN_BUF];
      while (bn_take(c, line, sizeof line)) lockd_line(&d, c->fd, line);
      if (!open) {
        lockd_closed(&d, c->fd);
        close(c->fd);
        d.lp.fds[i].fd = -1;
      }
    }
  }
}

/* store */

static struct {
  int fixed;
  int value;        /* the counter */
  int fence;        /* highest token seen (--fixed) */
  int done;         /* workers that reported DONE */
  int syncs[MAXW];  /* fds waiting in SYNC, and for how many DONEs */
  int want[MAXW];
  int ns;
} st;

/* store_fenced refuses a request whose token is below the highest seen. */
static int store_fenced(int fd, int tok) {
  if (!st.fixed) return 0;
  if (tok < st.fence) {
    printf("store: token %d fenced by %d\n", tok, st.fence);
    bn_send(fd, "FENCED %d", st.fence);
    return 1;
  }
  st.fence = tok;
  return 0;
}

static void store_wake(void) {
  for (int i = 0; i < st.ns;) {
    if (st.done < st.want[i]) {
      i++;
      continue;
    }
    bn_send(st.syncs[i], "VAL %d", st.value);
    st.syncs[i] = st.syncs[--st.ns], st.want[i] = st.want[st.ns];
  }
}

static void store_line(int fd, char *line) {
  int tok, v;
  printf("store: %s\n", line);
  if (sscanf(line, "GET %d", &tok) == 1) {
    if (!store_fenced(fd, tok)) bn_send(fd, "VAL %d", st.value);
  } else if (sscanf(line, "PUT %d %d", &tok, &v) == 2) {
    if (store_fenced(fd, tok)) return;
    st.value = v;
    bn_send(fd, "OK");
  } else if (strcmp(line, "DONE") == 0) {
    st.done++;
    store_wake();
  } else if (sscanf(line, "SYNC %d", &v) == 1) {
    if (st.ns == MAXW) {
      fprintf(stderr, "store: too many syncs\n");
      exit(2);
    }
    st.syncs[st.ns] = fd, st.want[st.ns++] = v;
    store_wake();
  }
}

/* worker */

static void expect(struct bn_conn *c, const char *who, char *line, size_t cap) {
  if (!bn_line(c, line, cap)) {
    fprintf(stderr, "%s: connection closed\n", who);
    exit(1);
  }
  printf("%s: got %s\n", who, line);
}

static void worker(const char *name, const char *lockd, const char *store, int n) {
  struct bn_conn lk = {.fd = bn_dial(lockd)}, sc = {.fd = bn_dial(store)};
  char line[BN_BUF];
  int tok, v, fence;
  for (int attempt = 1;; attempt++) {
    bn_send(lk.fd, "ACQUIRE %s", name);
    expect(&lk, name, line, sizeof line);
    if (sscanf(line, "GRANT %d", &tok) != 1) {
      fprintf(stderr, "%s: unexpected %s\n", name, line);
      exit(2);
    }
    bn_send(sc.fd, "GET %d", tok);
    expect(&sc, name, line, sizeof line);
    if (sscanf(line, "FENCED %d", &fence) == 1) {
      bn_send(lk.fd, "RELEASE %d", tok);
      continue;
    }
    if (sscanf(line, "VAL %d", &v) != 1) {
      fprintf(stderr, "%s: unexpected %s\n", name, line);
      exit(2);
    }
    /* The critical section: keepalives are one-way, so while they are sent
     * on time the worker takes the lease for its own. */
    for (int beat = 1; beat <= WORK_BEATS; beat++) {
      sleep_ms(BEAT_MS);
      if (beat < WORK_BEATS) bn_send(lk.fd, "RENEW %d", tok);
    }
    bn_send(sc.fd, "PUT %d %d", tok, v + 1);
    expect(&sc, name, line, sizeof line);
    bn_send(lk.fd, "RELEASE %d", tok);
    if (strcmp(line, "OK") == 0) {
      printf("%s: wrote %d with token %d (attempt %d)\n", name, v + 1, tok, attempt);
      break;
    }
    if (sscanf(line, "FENCED %d", &fence) != 1) {
      fprintf(stderr, "%s: unexpected %s\n", name, line);
      exit(2);
    }
  }
  bn_send(sc.fd, "DONE");
  bn_send(sc.fd, "SYNC %d", n);
  expect(&sc, name, line, sizeof line);
  if (sscanf(line, "VAL %d", &v) != 1 || v != n) {
    fprintf(stderr, "%s: lost update: counter is %s after %d increments\n", name, line, n);
    exit(1);
  }
  printf("%s: counter is %d\n", name, v);
  exit(0);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc == 3 && strcmp(argv[1], "lockd") == 0) lockd_serve(atoi(argv[2]));
  if ((argc == 3 || argc == 4) && strcmp(argv[1], "store") == 0) {
    static struct bn_loop lp;
    st.fixed = argc == 4 && strcmp(argv[3], "--fixed") == 0;
    bn_serve(&lp, bn_listen(atoi(argv[2])), store_line, NULL);
  }
  if (argc == 6 && strcmp(argv[1], "worker") == 0 && atoi(argv[5]) > 0)
    worker(argv[2], argv[3], argv[4], atoi(argv[5]));
  fprintf(stderr,
          "usage: lease1 lockd PORT | lease1 store PORT [--fixed] | lease1 worker NAME LOCKD STORE N\n");
  return 2;
}
