/*
 * gproc-3: a request sent to a leader after its death, but before the
 * failure notice reached the requester, is never answered.
 *
 *   gproc3 leader PORT BACKUP          serves requests until killed
 *   gproc3 backup PORT                 supervises the leader, takes over
 *   gproc3 client LEADER BACKUP [--fixed]
 *
 * The client sends REQ 1 and REQ 2 to the leader, then tells the backup
 * (the leader's supervisor) that it may retire the leader. The backup kills
 * the leader, which hands its state over (DEAD last=N: the last request it
 * answered) and from then on drops what it receives, as a dead process's
 * mailbox would. The backup announces NEWLEADER last=N to the client.
 * The client believes every request it sent before the notice reached the
 * old leader alive, so it resends nothing. If REQ 2 is delayed past the
 * client's note to the backup and the kill, the leader drops it and the
 * client waits for its answer forever: a hang.
 * --fixed: on NEWLEADER the client resends its unanswered requests with an
 * id above N to the new leader.
 */
#include "../common/bugnet.h"

/* leader */
static int alive = 1, last = 0, backup_fd = -1;

static void leader_line(int fd, char *line) {
  int id;
  printf("leader: %s\n", line);
  if (sscanf(line, "REQ %d", &id) == 1) {
    if (!alive) {
      printf("leader: dead, dropping REQ %d\n", id);
      return;
    }
    last = id;
    bn_send(fd, "ANS %d leader", id);
  } else if (strcmp(line, "KILL") == 0 && alive) {
    alive = 0;
    bn_send(backup_fd, "DEAD %d", last);
  }
}

/* backup */
static int client_fd = -1, leader_fd = -1, kill_pending = 0;

static void backup_line(int fd, char *line) {
  int id;
  printf("backup: %s\n", line);
  if (strcmp(line, "IAM leader") == 0) {
    leader_fd = fd;
    if (kill_pending) bn_send(leader_fd, "KILL"), kill_pending = 0;
  } else if (strcmp(line, "HELLO") == 0) {
    client_fd = fd;
  } else if (strcmp(line, "RETIRE") == 0) {
    if (leader_fd >= 0) bn_send(leader_fd, "KILL");
    else kill_pending = 1;
  } else if (sscanf(line, "DEAD %d", &id) == 1) {
    bn_send(client_fd, "NEWLEADER backup %d", id);
  } else if (sscanf(line, "REQ %d", &id) == 1) {
    bn_send(fd, "ANS %d backup", id);
  }
}

#define NREQ 2

static void client(const char *leader, const char *backup, int fixed) {
  struct bn_conn c[2] = {{.fd = bn_dial(leader)}, {.fd = bn_dial(backup)}};
  int answered[NREQ + 1] = {0}, nans = 0, notice = 0;
  bn_send(c[1].fd, "HELLO");
  for (int id = 1; id <= NREQ; id++) bn_send(c[0].fd, "REQ %d", id);
  bn_send(c[1].fd, "RETIRE");
  while (nans < NREQ || !notice) {
    struct pollfd p[2] = {{.fd = c[0].fd, .events = POLLIN}, {.fd = c[1].fd, .events = POLLIN}};
    if (poll(p, 2, -1) < 0) bn_die("poll");
    for (int i = 0; i < 2; i++) {
      if (!(p[i].revents & (POLLIN | POLLHUP))) continue;
      if (!bn_fill(&c[i])) {
        fprintf(stderr, "client: connection %d closed\n", i);
        exit(1);
      }
      char line[BN_BUF];
      int id;
      while (bn_take(&c[i], line, sizeof line)) {
        printf("client: got %s\n", line);
        if (sscanf(line, "ANS %d", &id) == 1 && id >= 1 && id <= NREQ && !answered[id]) {
          answered[id] = 1, nans++;
        } else if (sscanf(line, "NEWLEADER backup %d", &id) == 1) {
          notice = 1;
          if (!fixed) continue; /* sent before the notice: surely handled */
          for (int r = id + 1; r <= NREQ; r++)
            if (!answered[r]) bn_send(c[1].fd, "REQ %d", r);
        }
      }
    }
  }
  printf("client: all %d answered\n", NREQ);
  exit(0);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  static struct bn_loop lp;
  if (argc == 4 && strcmp(argv[1], "leader") == 0) {
    backup_fd = bn_dial(argv[3]);
    bn_send(backup_fd, "IAM leader");
    int l = bn_listen(atoi(argv[2]));
    bn_add(&lp, backup_fd);
    bn_serve(&lp, l, leader_line, NULL);
  }
  if (argc == 3 && strcmp(argv[1], "backup") == 0) bn_serve(&lp, bn_listen(atoi(argv[2])), backup_line, NULL);
  if ((argc == 4 || argc == 5) && strcmp(argv[1], "client") == 0)
    client(argv[2], argv[3], argc == 5 && strcmp(argv[4], "--fixed") == 0);
  fprintf(stderr, "usage: gproc3 leader PORT BACKUP | gproc3 backup PORT | gproc3 client LEADER BACKUP [--fixed]\n");
  return 2;
}
