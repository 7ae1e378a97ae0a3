/*
 * locks-1: a stale, higher-versioned lock entry survives a lock-server restart.
 *
 *   locks1 lockd PORT REPLICA DIR  the lock server (grants versioned locks);
 *                                  its epoch lives in DIR/epoch
 *   locks1 replica PORT [--fixed]  the holder registry the server's clients report to
 *   locks1 app LOCKD REPLICA       the client that takes the lock three times
 *
 * The lock server counts its starts in a file: each start is a new epoch,
 * whose versions begin again at 1, and it tells the replica RESET e, which
 * clears the replica's table. The app takes lock x twice (versions 1 and 2)
 * and reports version 2 to the replica without waiting for the answer. If
 * the server crashes (a lockstep fault) after granting version 2 and its
 * restart's RESET 2 reaches the replica before the app's report of version 2,
 * the replica keeps a stale entry of epoch 1 whose version is higher than
 * anything the new epoch has granted, and it parks the app's next holder
 * (version 1 of epoch 2) forever: a hang. A crash anywhere else is harmless:
 * the app reconnects and asks again.
 * --fixed: the replica answers STALE to reports from an epoch older than its
 * own (the app then takes the lock again).
 */
#include "../common/bugnet.h"
#include <signal.h>

static int replica_fd = -1;

/* lock server state */
static int epoch, version = 0, held = 0;

/* start_epoch reads the previous epoch from DIR/epoch, persists the next one
 * and returns it: the file survives a crash, the rest of the state does not. */
static int start_epoch(const char *dir) {
  char path[512];
  int e = 0;
  snprintf(path, sizeof path, "%s/epoch", dir);
  FILE *f = fopen(path, "r");
  if (f) {
    if (fscanf(f, "%d", &e) != 1) e = 0;
    fclose(f);
  }
  e++;
  if (!(f = fopen(path, "w")) || fprintf(f, "%d\n", e) < 0 || fclose(f) != 0) bn_die(path);
  printf("lockd: starting epoch %d\n", e);
  return e;
}

static void lockd_line(int fd, char *line) {
  printf("lockd: %s\n", line);
  if (strcmp(line, "ACQUIRE x") == 0) {
    if (held) {
      bn_trysend(fd, "BUSY x");
      return;
    }
    held = 1;
    bn_trysend(fd, "GRANT x %d %d", ++version, epoch);
  } else if (strcmp(line, "RELEASE x") == 0) {
    held = 0;
    bn_trysend(fd, "RELEASED x");
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
    if (e <= cur_epoch) return; /* the first start's announcement */
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

/* The app's connections: lockd's is redialed when the server crashed. */
static struct bn_conn L = {.fd = -1}, R;
static const char *lockd_addr;

/* wait_line reads lines from c until one starts with want (or alt, when
 * given) and returns 1, or 0 when the connection breaks. */
static int wait_line(struct bn_conn *c, const char *want, const char *alt, char *line, size_t cap) {
  for (;;) {
    if (!bn_line(c, line, cap)) return 0;
    printf("app: got %s\n", line);
    if (strncmp(line, want, strlen(want)) == 0) return 1;
    if (alt && strncmp(line, alt, strlen(alt)) == 0) return 1;
  }
}

/* lockd_call sends req and waits for the reply starting with want. If the
 * server crashed meanwhile, it dials the restarted one and asks again: an
 * ACQUIRE is then granted in the new epoch, a RELEASE of a lock the new
 * server never granted is simply acknowledged. */
static void lockd_call(const char *req, const char *want, char *line, size_t cap) {
  for (;;) {
    if (L.fd < 0) L = (struct bn_conn){.fd = bn_dial(lockd_addr)};
    if (bn_trysend(L.fd, "%s", req) && wait_line(&L, want, NULL, line, cap)) return;
    printf("app: lost lockd during %s, reconnecting\n", req);
    close(L.fd);
    L.fd = -1;
  }
}

/* tenure takes x, registers the grant with the replica (waiting for the
 * answer if sync) and releases x. A grant the replica calls STALE (--fixed:
 * the server restarted since) is void: take x again. */
static void tenure(int sync) {
  char line[BN_BUF], want[32], stale[32];
  int v, e;
  for (;;) {
    lockd_call("ACQUIRE x", "GRANT x", line, sizeof line);
    sscanf(line, "GRANT x %d %d", &v, &e);
    bn_send(R.fd, "HOLD x %d %d", v, e);
    if (!sync) break;
    snprintf(want, sizeof want, "HELD x %d", v);
    snprintf(stale, sizeof stale, "STALE x %d", v);
    if (!wait_line(&R, want, stale, line, sizeof line)) {
      fprintf(stderr, "app: replica connection closed\n");
      exit(1);
    }
    if (strncmp(line, want, strlen(want)) == 0) {
      bn_send(R.fd, "FREE x %d", v);
      break;
    }
    lockd_call("RELEASE x", "RELEASED", line, sizeof line);
  }
  lockd_call("RELEASE x", "RELEASED", line, sizeof line);
}

static void app(const char *lockd, const char *replica) {
  signal(SIGPIPE, SIG_IGN); /* a write to the crashed server fails instead */
  lockd_addr = lockd;
  L.fd = bn_dial(lockd);
  R.fd = bn_dial(replica);
  /* Between tenures the app does other work for 50 ms, so the tenures lie
   * about 0, 50 and 100 ms of virtual time and a fault window can name them. */
  struct timespec think = {0, 50 * 1000 * 1000};
  tenure(1); /* version 1, registered synchronously */
  nanosleep(&think, NULL);
  tenure(0); /* version 2, reported without waiting */
  nanosleep(&think, NULL);
  tenure(1); /* must be registered: parked forever behind a stale entry */
  printf("app: done\n");
  exit(0);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  static struct bn_loop lp;
  if (argc == 5 && strcmp(argv[1], "lockd") == 0) {
    epoch = start_epoch(argv[4]);
    replica_fd = bn_dial(argv[3]); /* before listening: the replica sees this link first */
    bn_send(replica_fd, "RESET %d", epoch);
    int l = bn_listen(atoi(argv[2]));
    bn_serve(&lp, l, lockd_line, NULL);
  }
  if ((argc == 3 || argc == 4) && strcmp(argv[1], "replica") == 0) {
    fixed = argc == 4 && strcmp(argv[3], "--fixed") == 0;
    bn_serve(&lp, bn_listen(atoi(argv[2])), replica_line, NULL);
  }
  if (argc == 4 && strcmp(argv[1], "app") == 0) app(argv[2], argv[3]);
  fprintf(stderr, "usage: locks1 lockd PORT REPLICA DIR | locks1 replica PORT [--fixed] | locks1 app LOCKD REPLICA\n");
  return 2;
}
