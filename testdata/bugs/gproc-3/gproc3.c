/*
 * gproc-3: a request sent to a leader that dies before answering, but
 * before the failure notice reached the requester, is never answered.
 *
 *   gproc3 leader PORT BACKUP          serves requests until it crashes
 *   gproc3 backup PORT                 supervises the leader, takes over
 *   gproc3 client LEADER BACKUP [--fixed]
 *
 * The leader registers with the backup (its supervisor), which answers LEAD
 * or, once it has taken over, FOLLOW. The client sends REQ 1 and REQ 2 to
 * the leader. If the leader crashes (a lockstep fault) before both answers
 * reached the client, the backup sees its connection to the leader close,
 * becomes the leader and announces NEWLEADER to the client. The client
 * believes every request it sent before the notice reached the old leader
 * alive and was answered, so it resends nothing and waits for the lost
 * answer forever: a hang.
 * --fixed: on NEWLEADER the client resends its unanswered requests to the
 * new leader.
 */
#include "../common/bugnet.h"
#include <signal.h>

/* leader (or, restarted after the backup took over, a follower) */
static int following = 0;

static void leader_line(int fd, char *line) {
  int id;
  printf("leader: %s\n", line);
  if (sscanf(line, "REQ %d", &id) != 1) return;
  if (following) bn_trysend(fd, "NOTLEADER %d", id);
  else bn_trysend(fd, "ANS %d leader", id);
}

/* backup */
static int client_fd = -1, leader_fd = -1, took_over = 0, notice_pending = 0;

static void backup_line(int fd, char *line) {
  int id;
  printf("backup: %s\n", line);
  if (strcmp(line, "IAM leader") == 0) {
    /* a restarted leader finds its place taken */
    if (took_over) {
      bn_trysend(fd, "FOLLOW");
    } else {
      leader_fd = fd;
      bn_trysend(fd, "LEAD");
    }
  } else if (strcmp(line, "HELLO") == 0) {
    client_fd = fd;
    if (notice_pending) bn_trysend(client_fd, "NEWLEADER backup"), notice_pending = 0;
  } else if (sscanf(line, "REQ %d", &id) == 1) {
    bn_trysend(fd, "ANS %d backup", id);
  }
}

/* The leader's connection closing (EOF or ECONNRESET) is its death. */
static void backup_close(int fd) {
  if (fd != leader_fd || took_over) return;
  printf("backup: leader connection closed: taking over\n");
  took_over = 1, leader_fd = -1;
  if (client_fd >= 0) bn_trysend(client_fd, "NEWLEADER backup");
  else notice_pending = 1;
}

#define NREQ 2

static void client(const char *leader, const char *backup, int fixed) {
  signal(SIGPIPE, SIG_IGN); /* a write to the dead leader fails instead */
  struct bn_conn c[2] = {{.fd = bn_dial(leader)}, {.fd = bn_dial(backup)}};
  int answered[NREQ + 1] = {0}, nans = 0;
  bn_send(c[1].fd, "HELLO");
  /* The client's session starts 50 ms after it connected: the fault window
   * starts at 50 ms (spec.yaml), after the cluster's start-up, even when
   * lockstep delays that by a few timeouts. */
  struct timespec ts = {0, 50 * 1000 * 1000};
  nanosleep(&ts, NULL);
  for (int id = 1; id <= NREQ; id++) bn_trysend(c[0].fd, "REQ %d", id);
  while (nans < NREQ) {
    struct pollfd p[2] = {{.fd = c[0].fd, .events = POLLIN}, {.fd = c[1].fd, .events = POLLIN}};
    if (poll(p, 2, -1) < 0) bn_die("poll");
    for (int i = 0; i < 2; i++) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      int open = bn_fill(&c[i]);
      char line[BN_BUF];
      int id;
      while (bn_take(&c[i], line, sizeof line)) {
        printf("client: got %s\n", line);
        if (sscanf(line, "ANS %d", &id) == 1 && id >= 1 && id <= NREQ && !answered[id]) {
          answered[id] = 1, nans++;
        } else if (sscanf(line, "NOTLEADER %d", &id) == 1) {
          bn_send(c[1].fd, "REQ %d", id); /* refused, not lost: ask the backup */
        } else if (strcmp(line, "NEWLEADER backup") == 0) {
          if (!fixed) continue; /* sent before the notice: surely answered */
          for (int r = 1; r <= NREQ; r++)
            if (!answered[r]) bn_send(c[1].fd, "REQ %d", r);
        }
      }
      if (open) continue;
      if (i == 1) {
        fprintf(stderr, "client: backup connection closed\n");
        exit(1);
      }
      /* The old leader is gone; the backup's notice follows. */
      printf("client: leader connection closed\n");
      close(c[0].fd);
      c[0].fd = -1; /* poll ignores it from now on */
    }
  }
  printf("client: all %d answered\n", NREQ);
  exit(0);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  static struct bn_loop lp;
  if (argc == 4 && strcmp(argv[1], "leader") == 0) {
    struct bn_conn b = {.fd = bn_dial(argv[3])};
    char line[BN_BUF];
    bn_send(b.fd, "IAM leader");
    /* the backup decides: lead, or follow it after a restart */
    if (!bn_line(&b, line, sizeof line)) {
      fprintf(stderr, "leader: backup closed\n");
      exit(2);
    }
    printf("leader: %s\n", line);
    following = strcmp(line, "FOLLOW") == 0;
    int l = bn_listen(atoi(argv[2]));
    bn_add(&lp, b.fd);
    bn_serve(&lp, l, leader_line, NULL);
  }
  if (argc == 3 && strcmp(argv[1], "backup") == 0)
    bn_serve(&lp, bn_listen(atoi(argv[2])), backup_line, backup_close);
  if ((argc == 4 || argc == 5) && strcmp(argv[1], "client") == 0)
    client(argv[2], argv[3], argc == 5 && strcmp(argv[4], "--fixed") == 0);
  fprintf(stderr, "usage: gproc3 leader PORT BACKUP | gproc3 backup PORT | gproc3 client LEADER BACKUP [--fixed]\n");
  return 2;
}
