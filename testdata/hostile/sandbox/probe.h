/* Helpers for the sandbox probes: each attempt prints one line,
 * "what: result", for engine/hostile_sandbox_test.go to match. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* report prints what, then "ok" or the error of a call that returned r. */
static __attribute__((unused)) void report(const char *what, long r)
{
	printf("%s: %s\n", what, r < 0 ? strerror(errno) : "ok");
}

static __attribute__((unused)) void die(const char *what)
{
	perror(what);
	exit(1);
}

static __attribute__((unused)) void msleep(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* wait_for waits up to 10 s for path to exist. */
static __attribute__((unused)) void wait_for(const char *path)
{
	struct stat st;
	for (int i = 0; i < 1000 && stat(path, &st) < 0; i++)
		msleep(10);
}

/* connect_tcp connects to host:port, retrying while it is refused. */
static __attribute__((unused)) int connect_tcp(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;
	if (getaddrinfo(host, port, &hints, &res))
		die("getaddrinfo");
	for (int i = 0; i < 500; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			die("socket");
		if (connect(fd, res->ai_addr, res->ai_addrlen) == 0)
			return fd;
		close(fd);
		msleep(10);
	}
	die("connect");
	return -1;
}

/* serve_tcp accepts one connection on port and prints what it reads,
 * as "received: BYTES", until the end of the stream. */
static __attribute__((unused)) void serve_tcp(const char *port)
{
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(port)) };
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 8) < 0)
		die("listen");
	int c = accept(l, NULL, NULL);
	if (c < 0)
		die("accept");
	char buf[4096], all[65536];
	size_t n = 0;
	ssize_t r;
	while ((r = read(c, buf, sizeof buf)) > 0)
		for (ssize_t i = 0; i < r && n < sizeof all - 1; i++)
			all[n++] = buf[i];
	all[n] = 0;
	printf("received: %s\n", all);
}
