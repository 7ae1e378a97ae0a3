/* timeout_client HOST PORT MS: send "ping", wait at most MS ms for a reply;
 * exit 3 on timeout. Prints the elapsed monotonic time in ms. */
#include <poll.h>
#include "common.h"

static long long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv)
{
	char buf[64];
	if (argc != 4) {
		fprintf(stderr, "usage: timeout_client HOST PORT MS\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	int fd = connect_to(argv[1], argv[2]);
	long long start = now_ns();
	write_all(fd, "ping", 4);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r = poll(&p, 1, atoi(argv[3]));
	long long ms = (now_ns() - start) / 1000000;
	if (r < 0)
		die("poll");
	if (r == 0) {
		printf("timeout elapsed_ms=%lld\n", ms);
		return 3;
	}
	if (read(fd, buf, sizeof buf) <= 0) {
		fprintf(stderr, "connection closed\n");
		return 1;
	}
	printf("reply elapsed_ms=%lld\n", ms);
	return 0;
}
