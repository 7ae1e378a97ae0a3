/* dial_timeout HOST PORT TIMEOUT_MS ATTEMPTS: dials as Go's DialTimeout and
 * Java's connect(addr, timeout) do: a non-blocking connect, then a poll for
 * the handshake bounded by TIMEOUT_MS; a timed-out or failed attempt is
 * closed and retried after 100 ms. Prints each attempt's end and the
 * virtual milliseconds since the first; on success one round trip, exit 0. */
#include "common.h"
#include <fcntl.h>
#include <poll.h>

static long ms_since(const struct timespec *a)
{
	struct timespec b;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (b.tv_sec - a->tv_sec) * 1000 + (b.tv_nsec - a->tv_nsec) / 1000000;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: dial_timeout HOST PORT TIMEOUT_MS ATTEMPTS\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;
	if (getaddrinfo(argv[1], argv[2], &hints, &res) != 0)
		return 2;
	int timeout = atoi(argv[3]), attempts = atoi(argv[4]);
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (int i = 0; i < attempts; i++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (fd < 0)
			die("socket");
		int err = 0;
		if (connect(fd, res->ai_addr, res->ai_addrlen) < 0) {
			if (errno != EINPROGRESS) {
				err = errno;
			} else {
				struct pollfd p = { .fd = fd, .events = POLLOUT };
				int n = poll(&p, 1, timeout);
				socklen_t len = sizeof err;
				if (n == 0)
					err = ETIMEDOUT;
				else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
					err = errno;
			}
		}
		if (err != 0) {
			printf("attempt %d: %s at %ldms\n", i, strerror(err), ms_since(&start));
			close(fd);
			msleep(100);
			continue;
		}
		printf("attempt %d: connected at %ldms\n", i, ms_since(&start));
		fcntl(fd, F_SETFL, 0);
		write_all(fd, "x", 1);
		char c;
		if (read(fd, &c, 1) != 1) {
			fprintf(stderr, "no answer\n");
			return 1;
		}
		printf("done\n");
		return 0;
	}
	fprintf(stderr, "gave up after %d attempts\n", attempts);
	return 1;
}
