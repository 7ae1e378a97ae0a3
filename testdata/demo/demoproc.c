/*
 * The two clients of the lockserver demo.
 *
 *   demoproc starter SERVER PORT WRITER WPORT
 *       connect to the server and the writer; send LOCK to the server, then
 *       GO to the writer; wait for LOCKED; exit 0.
 *   demoproc writer LISTENPORT SERVER PORT
 *       wait for GO; connect to the server; send WRITE; exit 0 on OK.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int dial(const char *host, const char *port) {
  struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
  if (getaddrinfo(host, port, &hints, &ai) != 0) {
    fprintf(stderr, "cannot resolve %s\n", host);
    exit(2);
  }
  for (int i = 0; i < 500; i++) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(s, ai->ai_addr, ai->ai_addrlen) == 0) {
      freeaddrinfo(ai);
      return s;
    }
    close(s);
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  fprintf(stderr, "cannot connect to %s:%s\n", host, port);
  exit(2);
}

static void send_line(int s, const char *line) {
  if (write(s, line, strlen(line)) != (ssize_t)strlen(line)) {
    perror("write");
    exit(2);
  }
}

/* read_line reads one line into b (without the newline). */
static int read_line(int s, char *b, size_t cap) {
  size_t n = 0;
  while (n < cap - 1) {
    ssize_t r = read(s, b + n, 1);
    if (r <= 0) return -1;
    if (b[n] == '\n') break;
    n++;
  }
  b[n] = 0;
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  char line[64];
  if (argc == 6 && strcmp(argv[1], "starter") == 0) {
    int srv = dial(argv[2], argv[3]);
    int wr = dial(argv[4], argv[5]);
    send_line(srv, "LOCK\n");
    send_line(wr, "GO\n");
    if (read_line(srv, line, sizeof line) < 0 || strcmp(line, "LOCKED") != 0) {
      fprintf(stderr, "starter: no LOCKED reply\n");
      return 1;
    }
    printf("starter: locked\n");
    close(wr);
    close(srv);
    return 0;
  }
  if (argc == 5 && strcmp(argv[1], "writer") == 0) {
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
    if (bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 4) < 0) {
      perror("listen");
      return 2;
    }
    int c = accept(l, NULL, NULL);
    if (read_line(c, line, sizeof line) < 0 || strcmp(line, "GO") != 0) {
      fprintf(stderr, "writer: expected GO\n");
      return 1;
    }
    int srv = dial(argv[3], argv[4]);
    send_line(srv, "WRITE\n");
    if (read_line(srv, line, sizeof line) < 0 || strcmp(line, "OK") != 0) {
      fprintf(stderr, "writer: write refused\n");
      return 1;
    }
    printf("writer: written\n");
    return 0;
  }
  fprintf(stderr, "usage: demoproc starter SERVER PORT WRITER WPORT | demoproc writer LISTENPORT SERVER PORT\n");
  return 2;
}
