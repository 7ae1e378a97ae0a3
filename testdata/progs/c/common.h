/* Shared helpers for the C test programs (see ../SPEC.md). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

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

static __attribute__((unused)) int listen_on(const char *port)
{
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(port)) };
	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
		die("bind");
	if (listen(fd, 64) < 0)
		die("listen");
	return fd;
}

/* connect_to resolves host and connects, retrying a refused connection
 * every 10 ms up to 500 times (the server may not listen yet). */
static __attribute__((unused)) int connect_to(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;
	int err = getaddrinfo(host, port, &hints, &res);
	if (err) {
		fprintf(stderr, "resolving %s: %s\n", host, gai_strerror(err));
		exit(1);
	}
	for (int i = 0; i < 500; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			die("socket");
		if (connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
			freeaddrinfo(res);
			return fd;
		}
		if (errno != ECONNREFUSED)
			die("connect");
		close(fd);
		msleep(10);
	}
	fprintf(stderr, "connect %s:%s: refused\n", host, port);
	exit(1);
}

static __attribute__((unused)) void write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0)
			die("write");
		p += w;
		n -= w;
	}
}
