/* UDP helpers shared by the C test programs that talk in datagrams
 * (lease, takeover); include after common.h. */
#include <poll.h>

static __attribute__((unused)) long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static __attribute__((unused)) int bound_udp(const char *port)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(port)) };
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
		die("bind");
	return fd;
}

static __attribute__((unused)) struct sockaddr_in resolve(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_DGRAM }, *res;
	int err = getaddrinfo(host, port, &hints, &res);
	if (err) {
		fprintf(stderr, "resolving %s: %s\n", host, gai_strerror(err));
		exit(1);
	}
	struct sockaddr_in a = *(struct sockaddr_in *)res->ai_addr;
	freeaddrinfo(res);
	return a;
}

/* hear waits up to ms for a datagram; 0 when none came. */
static __attribute__((unused)) int hear(int fd, long ms, char *buf, size_t len, struct sockaddr_in *from)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r = poll(&p, 1, ms < 0 ? 0 : (int)ms);
	if (r < 0)
		die("poll");
	if (r == 0)
		return 0;
	socklen_t fl = sizeof *from;
	ssize_t n = recvfrom(fd, buf, len - 1, 0, (struct sockaddr *)from, &fl);
	if (n < 0)
		die("recvfrom");
	buf[n] = 0;
	return 1;
}
