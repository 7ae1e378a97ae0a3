/*
 * locks-1: a stale, higher-versioned lock entry survives a lock-server reset.
 *
 *   locks1 lockd PORT REPLICA      the lock server (grants versioned locks)
 *   locks1 replica PORT [--fixed]  the holder registry the server's clients report to
 *   locks1 app LOCKD REPLICA       the client that drives the scenario
 *
 * The app takes lock x twice (versions 1 and 2), reports version 2 to the
 * replica without waiting for the answer, and then asks the lock server to
 * reset (as a restart would): the server starts epoch 2 with version 0 and
 * tells the replica, which clears its table. If the app's report of version 2
 * arrives at the replica after the reset notice, the replica keeps a stale
 * entry of epoch 1 whose version is higher than anything the new epoch has
 * granted, and it parks the next holder (version 1) forever: a hang.
 * --fixed: the replica drops reports from an epoch older than its own.
 */
#include "../common/bugnet.h"

static int replica_fd = -1;

/* lock server state */
static int epoch = 1, version = 0, held = 0;

static void lockd_line(int fd, char *line) {
  printf("lockd: %s\n", line);
  if (strcmp(line, "ACQUIRE x") == 0) {
    if (held) {
      bn_send(fd, "BUSY x");
      return;
    }
    held = 1;
    bn_send(fd, "GRANT x %d %d", ++version, epoch);
  } else if (strcmp(line, "RELEASE x") == 0) {
    held = 0;
    bn_send(fd, "RELEASED x");
  } else if (strcmp(line, "RESET") == 0) {
    epoch++, version = 0, held = 0;
    bn_send(replica_fd, "RESET %d", epoch);
    bn_send(fd, "RESET-OK %d", epoch);
  }
}

/* replica state: the registered holder of x and a holder parked behind it */
static int fixed, cur_epoch = 1;
static int has, ent_ver, ent_epoch;
static int parked_fd = -1, parked_ver, parked_epoch;

static void replica_line(int fd, char *line) {
  int v, e;
  printf("replica: %s\n", line);
  if (sscanf(line, "RESET %d", &e) == 1) {
    cur_epoch = e, has = 0;
    /* entries of older epochs are gone: a holder of the new epoch that
     * was parked behind one goes ahead */
    if (parked_fd >= 0 && parked_epoch >= e) {
      has = 1, ent_ver = parked_ver, ent_epoch = parked_epoch;
      bn_send(parked_fd, "HELD x %d", parked_ver);
    }
    parked_fd = -1;
  } else if (sscanf(line, "HOLD x %d %d", &v, &e) == 2) {
    if (fixed && e < cur_epoch) {
      bn_send(fd, "STALE x %d", v);
      return;
    }
    if (has && ent_ver > v) {
      /* a newer grant is registered: this holder waits for it to go */
      printf("replica: parking holder v%d behind v%d (epoch %d)\n", v, ent_ver, ent_epoch);
      parked_fd = fd, parked_ver = v, parked_epoch = e;
      return;
    }
    has = 1, ent_ver = v, ent_epoch = e;
    bn_send(fd, "HELD x %d", v);
  } else if (sscanf(line, "FREE x %d", &v) == 1) {
    if (has && ent_ver == v) has = 0;
    if (!has && parked_fd >= 0) {
      has = 1, ent_ver = parked_ver, ent_epoch = parked_epoch;
      bn_send(parked_fd, "HELD x %d", parked_ver);
      parked_fd = -1;
    }
  }
}

/* expect reads lines from c until one starts with want; exits on EOF. */
static void expect(struct bn_conn *c, const char *want, char *line, size_t cap) {
  for (;;) {
    if (!bn_line(c, line, cap)) {
      fprintf(stderr, "app: connection closed while waiting for %s\n", want);
      exit(1);
    }
    printf("app: got %s\n", line);
    if (strncmp(line, want, strlen(want)) == 0) return;
  }
}

static void app(const char *lockd, const char *replica) {
  struct bn_conn l = {.fd = bn_dial(lockd)}, r = {.fd = bn_dial(replica)};
  char line[BN_BUF];
  int v, e;
  /* first tenure: version 1, registered synchronously */
  bn_send(l.fd, "ACQUIRE x");
  expect(&l, "GRANT x", line, sizeof line);
  sscanf(line, "GRANT x %d %d", &v, &e);
  bn_send(r.fd, "HOLD x %d %d", v, e);
  expect(&r, "HELD x", line, sizeof line);
  bn_send(r.fd, "FREE x %d", v);
  bn_send(l.fd, "RELEASE x");
  expect(&l, "RELEASED", line, sizeof line);
  /* second tenure: version 2, reported without waiting */
  bn_send(l.fd, "ACQUIRE x");
  expect(&l, "GRANT x", line, sizeof line);
  sscanf(line, "GRANT x %d %d", &v, &e);
  bn_send(r.fd, "HOLD x %d %d", v, e);
  bn_send(l.fd, "RELEASE x");
  expect(&l, "RELEASED", line, sizeof line);
  /* the lock server is reset (a restart): epoch 2 */
  bn_send(l.fd, "RESET");
  expect(&l, "RESET-OK", line, sizeof line);
  bn_send(l.fd, "ACQUIRE x");
  expect(&l, "GRANT x", line, sizeof line);
  sscanf(line, "GRANT x %d %d", &v, &e);
  bn_send(r.fd, "HOLD x %d %d", v, e);
  char want[32];
  snprintf(want, sizeof want, "HELD x %d", v);
  expect(&r, want, line, sizeof line);
  bn_send(r.fd, "FREE x %d", v);
  bn_send(l.fd, "RELEASE x");
  expect(&l, "RELEASED", line, sizeof line);
  printf("app: done\n");
  exit(0);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  static struct bn_loop lp;
  if (argc == 4 && strcmp(argv[1], "lockd") == 0) {
    replica_fd = bn_dial(argv[3]); /* before listening: the replica sees this link first */
    int l = bn_listen(atoi(argv[2]));
    bn_serve(&lp, l, lockd_line, NULL);
  }
  if ((argc == 3 || argc == 4) && strcmp(argv[1], "replica") == 0) {
    fixed = argc == 4 && strcmp(argv[3], "--fixed") == 0;
    bn_serve(&lp, bn_listen(atoi(argv[2])), replica_line, NULL);
  }
  if (argc == 4 && strcmp(argv[1], "app") == 0) app(argv[2], argv[3]);
  fprintf(stderr, "usage: locks1 lockd PORT REPLICA | locks1 replica PORT [--fixed] | locks1 app LOCKD REPLICA\n");
  return 2;
}
