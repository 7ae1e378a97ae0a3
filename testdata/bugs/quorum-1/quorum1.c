/*
 * quorum-1: a two-phase commit coordinator that decides as soon as its vote
 * quorum allows (abort on the first NO, without waiting for the other vote)
 * counts the votes that come in without checking which transaction they
 * answer. A YES left over from an aborted transaction, still in flight when
 * the next transaction's PREPAREs go out, is counted for it: the coordinator
 * commits a transaction one participant refused.
 *
 *   quorum1 part NAME PORT                  a participant: one account
 *   quorum1 coord PORT P1 P2 [--fixed]      the coordinator, dials P1 and P2
 *   quorum1 client COORD P1 P2 ROUNDS       runs transfers, checks each one
 *
 * Each participant holds one account, with a balance of INIT at start
 * (p1 holds A, p2 holds B). A transaction TX t dA dB moves money: dA on A,
 * dB on B. The coordinator sends PREPARE t d to each participant, which
 * votes YES t (it holds d aside) or NO t (the balance would go negative; it
 * forgets the transaction at once). The quorum is both YES: the coordinator
 * then sends COMMIT t to both, and answers the client COMMITTED t once both
 * have answered DONE t. On the first NO it sends ABORT t to both and answers
 * ABORTED t at once, without waiting for the other vote (presumed abort:
 * aborts are not acknowledged). A vote that comes when no transaction is
 * being voted on is logged and ignored. The bug: during a vote, every YES
 * counts, whichever transaction it answers, so the late YES of the
 * transaction just aborted counts for the next one.
 *
 * The client runs ROUNDS rounds of the same seven transfers (three commit,
 * four are refused by one participant; a round brings both balances back
 * to INIT), keeps its own model of the balances and, after each outcome,
 * asks both participants for theirs (BAL). An outcome or a balance other
 * than the model's (a transfer committed that overdraws an account) is a
 * failure: exit 1.
 *
 * --fixed (coordinator): a vote counts only for the transaction it names;
 * a vote for an earlier one is logged and dropped.
 */
#include "../common/bugnet.h"

#include <signal.h>

#define INIT 10 /* every account's balance at start */

static const char *me; /* this process's name, in its output */

/*
 * send_msg formats, logs and writes one message: every message of every
 * mode goes through here. A peer that went away is logged, not fatal.
 */
static void send_msg(int fd, const char *fmt, ...) {
  char b[BN_BUF];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b, sizeof b - 1, fmt, ap);
  va_end(ap);
  printf("%s: send %s\n", me, b);
  b[n++] = '\n';
  if (write(fd, b, n) != n) printf("%s: write failed\n", me);
}

/*
 * serve is every server's loop: bn_handle over lp, whose first entry is
 * the listener l. Oldest connection first: what the coordinator sent a
 * participant is served before the client's questions that came with it,
 * and the participants' votes before the client's next transaction.
 */
static void serve(struct bn_loop *lp, int l, void (*on_line)(int, char *)) {
  for (;;) {
    if (poll(lp->fds, lp->n, -1) < 0) bn_die("poll");
    bn_handle(lp, l, on_line, NULL);
  }
}

/* participant */

static struct {
  int balance;
  int prepared; /* the transaction whose delta is held aside, 0 if none */
  int delta;
  int refused;  /* the last transaction this participant voted NO on */
} pt;

static void part_line(int fd, char *line) {
  int t, d;
  printf("%s: got %s\n", me, line);
  if (sscanf(line, "PREPARE %d %d", &t, &d) == 2) {
    if (pt.balance + d < 0) {
      pt.refused = t; /* a NO is final: nothing is held for t */
      send_msg(fd, "NO %d", t);
    } else {
      pt.prepared = t;
      pt.delta = d;
      send_msg(fd, "YES %d", t);
    }
  } else if (sscanf(line, "COMMIT %d", &t) == 1) {
    if (pt.prepared != t) {
      printf("%s: COMMIT %d for a transaction not prepared here (%s): cannot apply it\n", me, t,
             pt.refused == t ? "voted NO" : "unknown");
      send_msg(fd, "ERR %d", t);
      return;
    }
    pt.balance += pt.delta;
    pt.prepared = 0;
    printf("%s: committed %d, balance %d\n", me, t, pt.balance);
    send_msg(fd, "DONE %d", t);
  } else if (sscanf(line, "ABORT %d", &t) == 1) {
    if (pt.prepared == t) pt.prepared = 0; /* presumed abort: no answer */
  } else if (strcmp(line, "BAL") == 0) {
    send_msg(fd, "BAL %d", pt.balance);
  }
}

static void part(int port) {
  static struct bn_loop lp;
  pt.balance = INIT;
  int l = bn_listen(port);
  bn_add(&lp, l);
  printf("%s: listening on %d, balance %d\n", me, port, pt.balance);
  serve(&lp, l, part_line);
}

/* coordinator */

static struct {
  int fixed;
  int p[2];     /* fds of the connections to p1 and p2 */
  int client;   /* fd of the client whose transaction is being voted on */
  int tx;       /* that transaction */
  int voting;   /* PREPAREs sent, no decision yet */
  int yes;      /* YES votes counted */
  int acks;     /* answers to COMMIT tx (DONE or ERR) */
} co;

static const char *peer(int fd) { return fd == co.p[0] ? "p1" : fd == co.p[1] ? "p2" : "client"; }

/*
 * decide ends the vote. An abort is answered at once (presumed abort: the
 * participants do not acknowledge it); a commit once both participants
 * have answered COMMIT, so that the client can read the new balances.
 */
static void decide(int commit) {
  co.voting = 0;
  co.acks = 0;
  for (int i = 0; i < 2; i++) send_msg(co.p[i], "%s %d", commit ? "COMMIT" : "ABORT", co.tx);
  if (!commit) send_msg(co.client, "ABORTED %d", co.tx);
}

static void coord_line(int fd, char *line) {
  int t, d[2];
  char vote[8];
  printf("coord: got %s from %s\n", line, peer(fd));
  if (sscanf(line, "TX %d %d %d", &t, &d[0], &d[1]) == 3) {
    co.client = fd;
    co.tx = t;
    co.voting = 1;
    co.yes = 0;
    for (int i = 0; i < 2; i++) send_msg(co.p[i], "PREPARE %d %d", t, d[i]);
  } else if (sscanf(line, "%7s %d", vote, &t) == 2 && (!strcmp(vote, "YES") || !strcmp(vote, "NO"))) {
    if (!co.voting) {
      printf("coord: late vote %s %d from %s ignored: no vote under way\n", vote, t, peer(fd));
      return;
    }
    if (co.fixed && t != co.tx) {
      printf("coord: late vote %s %d from %s dropped: voting on %d\n", vote, t, peer(fd), co.tx);
      return;
    }
    /* The bug (without --fixed): t is not compared with co.tx. */
    if (!strcmp(vote, "NO")) decide(0); /* one NO is enough: abort at once */
    else if (++co.yes == 2) decide(1);
  } else if ((sscanf(line, "DONE %d", &t) == 1 || sscanf(line, "ERR %d", &t) == 1) && t == co.tx) {
    /* The answers to COMMIT: the decision stands, an ERR is only logged. */
    if (++co.acks == 2) send_msg(co.client, "COMMITTED %d", co.tx);
  }
}

static void coord(int port, const char *p1, const char *p2, int fixed) {
  static struct bn_loop lp;
  co.fixed = fixed;
  /* Dial both participants before listening: no transaction comes before
   * they can be asked. */
  co.p[0] = bn_dial(p1);
  co.p[1] = bn_dial(p2);
  int l = bn_listen(port);
  bn_add(&lp, l);
  bn_add(&lp, co.p[0]);
  bn_add(&lp, co.p[1]);
  printf("coord: listening on %d, participants %s %s%s\n", port, p1, p2, fixed ? ", votes checked" : "");
  serve(&lp, l, coord_line);
}

/* client */

/* One round: A and B start at INIT and end at INIT. */
static const int work[][2] = {
    {-3, +3},  /* commits: A 7, B 13 */
    {-9, +9},  /* A would be -2: p1 refuses */
    {+5, -20}, /* B would be -7: p2 refuses */
    {-2, +2},  /* commits: A 5, B 15 */
    {+1, -16}, /* B would be -1: p2 refuses */
    {-6, +1},  /* A would be -1: p1 refuses */
    {+5, -5},  /* commits: A 10, B 10 */
};
#define NWORK (int)(sizeof work / sizeof work[0])

/* ask sends req on c and returns the one-line answer in line. */
static void ask(struct bn_conn *c, const char *peer, const char *req, char *line, size_t cap) {
  send_msg(c->fd, "%s", req);
  if (!bn_line(c, line, cap)) {
    fprintf(stderr, "client: %s closed the connection\n", peer);
    exit(2);
  }
  printf("client: got %s from %s\n", line, peer);
}

static void client(const char *coordaddr, const char *p1, const char *p2, int rounds) {
  struct bn_conn c = {.fd = bn_dial(coordaddr)}, p[2] = {{.fd = bn_dial(p1)}, {.fd = bn_dial(p2)}};
  char line[BN_BUF], req[64], want[64];
  int bal[2] = {INIT, INIT}, t = 0;
  for (int r = 0; r < rounds; r++)
    for (int i = 0; i < NWORK; i++) {
      t++;
      int ok = bal[0] + work[i][0] >= 0 && bal[1] + work[i][1] >= 0;
      snprintf(req, sizeof req, "TX %d %d %d", t, work[i][0], work[i][1]);
      ask(&c, "coord", req, line, sizeof line);
      snprintf(want, sizeof want, "%s %d", ok ? "COMMITTED" : "ABORTED", t);
      if (strcmp(line, want) != 0) {
        fprintf(stderr,
                "client: transfer %d (A %+d, B %+d) with A=%d B=%d: the coordinator answers %s, "
                "expected %s: %s\n",
                t, work[i][0], work[i][1], bal[0], bal[1], line, want,
                ok ? "a good transfer aborted" : "an overdraft committed");
        exit(1);
      }
      if (ok) bal[0] += work[i][0], bal[1] += work[i][1];
      /* The audit: each account as the model has it. */
      for (int j = 0; j < 2; j++) {
        ask(&p[j], j ? "p2" : "p1", "BAL", line, sizeof line);
        snprintf(want, sizeof want, "BAL %d", bal[j]);
        if (strcmp(line, want) != 0) {
          fprintf(stderr, "client: after transfer %d, %s answers %s, expected %s\n", t, j ? "p2" : "p1",
                  line, want);
          exit(1);
        }
      }
    }
  printf("client: %d transfers, every outcome as expected, A=%d B=%d\n", t, bal[0], bal[1]);
  exit(0);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  me = argc > 1 ? argv[1] : "quorum1";
  if (argc == 4 && strcmp(argv[1], "part") == 0) {
    me = argv[2];
    part(atoi(argv[3]));
  }
  if ((argc == 5 || argc == 6) && strcmp(argv[1], "coord") == 0)
    coord(atoi(argv[2]), argv[3], argv[4], argc == 6 && strcmp(argv[5], "--fixed") == 0);
  if (argc == 6 && strcmp(argv[1], "client") == 0 && atoi(argv[5]) > 0)
    client(argv[2], argv[3], argv[4], atoi(argv[5]));
  fprintf(stderr, "usage: quorum1 part NAME PORT | quorum1 coord PORT P1 P2 [--fixed] | "
                  "quorum1 client COORD P1 P2 ROUNDS\n");
  return 2;
}
