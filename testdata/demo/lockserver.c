/*
 * lockserver: a single-threaded poll() server guarding one record.
 *
 * A writer may only write after the record was locked. The starter sends
 * LOCK to this server and then GO to the writer, who then sends WRITE here.
 * Causally LOCK was sent first, but it travels on a different connection:
 * if it is delayed in flight past GO and WRITE, this server sees WRITE on an
 * unlocked record and fails. A plain run essentially never shows it.
 *
 * usage: lockserver PORT [--fixed]
 *   --fixed: park a WRITE that arrives before LOCK until LOCK arrives.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAXC 16

static void reply(int fd, const char *s) {
  if (write(fd, s, strlen(s)) < 0) perror("write");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: lockserver PORT [--fixed]\n");
    return 2;
  }
  int fixed = argc > 2 && strcmp(argv[2], "--fixed") == 0;
  setvbuf(stdout, NULL, _IOLBF, 0);
  int l = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
  if (bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 16) < 0) {
    perror("listen");
    return 2;
  }
  struct pollfd fds[MAXC + 1] = {{.fd = l, .events = POLLIN}};
  char buf[MAXC + 1][256];
  size_t len[MAXC + 1] = {0};
  int n = 1, locked = 0, parked = -1;
  for (;;) {
    if (poll(fds, n, -1) < 0) {
      perror("poll");
      return 2;
    }
    if (fds[0].revents & POLLIN) {
      int c = accept(l, NULL, NULL);
      if (c >= 0 && n <= MAXC) {
        fds[n] = (struct pollfd){.fd = c, .events = POLLIN};
        len[n++] = 0;
      }
    }
    for (int i = 1; i < n; i++) {
      if (!(fds[i].revents & (POLLIN | POLLHUP))) continue;
      ssize_t r = read(fds[i].fd, buf[i] + len[i], sizeof buf[i] - 1 - len[i]);
      if (r <= 0) {
        close(fds[i].fd);
        fds[i] = fds[--n];
        memcpy(buf[i], buf[n], len[n]);
        len[i] = len[n];
        i--;
        continue;
      }
      len[i] += r;
      char *nl;
      while ((nl = memchr(buf[i], '\n', len[i])) != NULL) {
        *nl = 0;
        printf("got %s\n", buf[i]);
        if (strcmp(buf[i], "LOCK") == 0) {
          locked = 1;
          reply(fds[i].fd, "LOCKED\n");
          if (parked >= 0) {
            reply(parked, "OK\n");
            parked = -1;
          }
        } else if (strcmp(buf[i], "WRITE") == 0) {
          if (locked) {
            reply(fds[i].fd, "OK\n");
          } else if (fixed) {
            parked = fds[i].fd;
          } else {
            printf("BUG: WRITE on an unlocked record\n");
            fprintf(stderr, "lockserver: invariant violated: write before lock\n");
            abort();
          }
        }
        size_t used = nl + 1 - buf[i];
        memmove(buf[i], nl + 1, len[i] - used);
        len[i] -= used;
      }
    }
  }
}
