/*
 * bugnet.h: the small TCP toolkit the C programs of the bug suite share:
 * dialing with retries, listening, line-oriented reads and a poll() loop
 * that hands every complete line to a callback. Header-only on purpose:
 * each bug is one .c file plus this.
 */
#ifndef BUGNET_H
#define BUGNET_H

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BN_MAXC 32
#define BN_BUF 1024

static void bn_die(const char *what) {
  perror(what);
  exit(2);
}

/* Small request/reply messages: without TCP_NODELAY, Nagle holds a write
 * behind an unacknowledged one for a delayed ACK (40 ms) and reorders the
 * system natively, which would hide what lockstep adds. */
static void bn_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* bn_resolve looks "host:port" up; a bad or unknown address exits 2. */
static struct addrinfo *bn_resolve(const char *hostport) {
  char host[128];
  const char *colon = strrchr(hostport, ':');
  if (!colon || (size_t)(colon - hostport) >= sizeof host) {
    fprintf(stderr, "bad address %s\n", hostport);
    exit(2);
  }
  memcpy(host, hostport, colon - hostport);
  host[colon - hostport] = 0;
  struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
  if (getaddrinfo(host, colon + 1, &hints, &ai) != 0) {
    fprintf(stderr, "cannot resolve %s\n", host);
    exit(2);
  }
  return ai;
}

/* bn_dial connects to "host:port", retrying while the peer is not up yet. */
static int bn_dial(const char *hostport) {
  struct addrinfo *ai = bn_resolve(hostport);
  for (int i = 0; i < 500; i++) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(s, ai->ai_addr, ai->ai_addrlen) == 0) {
      freeaddrinfo(ai);
      bn_nodelay(s);
      return s;
    }
    close(s);
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  fprintf(stderr, "cannot connect to %s\n", hostport);
  exit(2);
}

static int bn_listen(int port) {
  int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  if (bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 16) < 0) bn_die("listen");
  return l;
}

/* bn_send writes one formatted line (the caller includes no newline). */
static void bn_send(int fd, const char *fmt, ...) {
  char b[BN_BUF];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b, sizeof b - 1, fmt, ap);
  va_end(ap);
  b[n++] = '\n';
  if (write(fd, b, n) != n) bn_die("write");
}

/* bn_trysend is bn_send for a peer that may have crashed: 0 when the write
 * fails (the caller reconnects) instead of exiting. Callers ignore SIGPIPE. */
static int bn_trysend(int fd, const char *fmt, ...) {
  char b[BN_BUF];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b, sizeof b - 1, fmt, ap);
  va_end(ap);
  b[n++] = '\n';
  return write(fd, b, n) == n;
}

/* A buffered line reader over one socket. */
struct bn_conn {
  int fd;
  char buf[BN_BUF];
  size_t len;
};

/* bn_take moves the first complete line out of c's buffer into line. */
static int bn_take(struct bn_conn *c, char *line, size_t cap) {
  char *nl = memchr(c->buf, '\n', c->len);
  if (!nl) return 0;
  size_t n = nl - c->buf;
  if (n >= cap) n = cap - 1;
  memcpy(line, c->buf, n);
  line[n] = 0;
  size_t used = nl + 1 - c->buf;
  memmove(c->buf, nl + 1, c->len - used);
  c->len -= used;
  return 1;
}

/* bn_fill reads what is available once; 0 on EOF or error. */
static int bn_fill(struct bn_conn *c) {
  if (c->len >= sizeof c->buf) return 0;
  ssize_t r = read(c->fd, c->buf + c->len, sizeof c->buf - c->len);
  if (r <= 0) return 0;
  c->len += r;
  return 1;
}

/* bn_line blocks for one line; 0 on EOF. */
static inline int bn_line(struct bn_conn *c, char *line, size_t cap) {
  while (!bn_take(c, line, cap))
    if (!bn_fill(c)) return 0;
  return 1;
}

/*
 * bn_serve runs a single-threaded poll() loop: it accepts on listener l (if
 * l >= 0), watches the extra connections given, and calls on_line for every
 * complete line, on_close when a peer closes. It never returns.
 */
struct bn_loop {
  struct pollfd fds[BN_MAXC];
  struct bn_conn conns[BN_MAXC];
  int n;
};

static int bn_add(struct bn_loop *lp, int fd) {
  if (lp->n >= BN_MAXC) {
    fprintf(stderr, "too many connections\n");
    exit(2);
  }
  lp->fds[lp->n] = (struct pollfd){.fd = fd, .events = POLLIN};
  lp->conns[lp->n] = (struct bn_conn){.fd = fd};
  return lp->n++;
}

/*
 * bn_handle serves what the last poll() over lp reported, for the loops
 * with timers of their own (bn_serve has none), whose listener l is lp's
 * first entry: a new connection is accepted and nothing else, so that its
 * data competes in the next poll; otherwise every complete line of each
 * readable connection, oldest connection first, goes to on_line, and a
 * connection that ended is closed (after on_close, if given).
 */
static inline void bn_handle(struct bn_loop *lp, int l, void (*on_line)(int fd, char *line),
                             void (*on_close)(int fd)) {
  if (lp->fds[0].revents & POLLIN) {
    int c = accept(l, NULL, NULL);
    if (c >= 0) bn_nodelay(c), bn_add(lp, c);
    return;
  }
  for (int i = 1; i < lp->n; i++) {
    if (lp->fds[i].fd < 0 || !(lp->fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    struct bn_conn *c = &lp->conns[i];
    int open = bn_fill(c);
    char line[BN_BUF];
    while (bn_take(c, line, sizeof line)) on_line(c->fd, line);
    if (!open) {
      if (on_close) on_close(c->fd);
      close(c->fd);
      lp->fds[i].fd = -1;
    }
  }
}

static void bn_serve(struct bn_loop *lp, int l, void (*on_line)(int fd, char *line),
                     void (*on_close)(int fd)) {
  int lidx = l >= 0 ? bn_add(lp, l) : -1;
  for (;;) {
    if (poll(lp->fds, lp->n, -1) < 0) bn_die("poll");
    if (lidx >= 0 && (lp->fds[lidx].revents & POLLIN)) {
      int c = accept(l, NULL, NULL);
      if (c >= 0) bn_nodelay(c), bn_add(lp, c);
      continue; /* poll again, so the new connection's data competes fairly */
    }
    /* Newest connection first: when a peer's request and a cluster
     * notice are both waiting, the request (usually sent earlier, from a
     * node that was dialed later) is served first. */
    for (int i = lp->n - 1; i >= 0; i--) {
      if (i == lidx || lp->fds[i].fd < 0 || !(lp->fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      struct bn_conn *c = &lp->conns[i];
      int open = bn_fill(c);
      char line[BN_BUF];
      while (bn_take(c, line, sizeof line)) on_line(c->fd, line);
      if (!open) {
        if (on_close) on_close(c->fd);
        close(c->fd);
        lp->fds[i].fd = -1; /* poll ignores negative fds; keep indexes stable */
      }
    }
  }
}

#endif
