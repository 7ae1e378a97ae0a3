/* timerfd_client HOST PORT MS: send "ping" and wait for the reply or for a
 * MS ms timerfd, whichever epoll_wait(-1) reports first (the way Erlang's
 * schedulers wait); exit 3 on timeout. Prints the elapsed monotonic time in
 * ms. See ../SPEC.md. */
#include "common.h"
#include <sys/epoll.h>
#include <sys/timerfd.h>

static long long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: timerfd_client HOST PORT MS\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	int fd = connect_to(argv[1], argv[2]);
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (tfd < 0 || ep < 0)
		die("timerfd_create/epoll_create1");
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	ev.data.fd = tfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
	long long ms = atoll(argv[3]), start = now_ns();
	struct itimerspec s = { .it_value = { ms / 1000, ms % 1000 * 1000000 } };
	timerfd_settime(tfd, 0, &s, NULL);
	write_all(fd, "ping", 4);
	if (epoll_wait(ep, &ev, 1, -1) != 1)
		die("epoll_wait");
	long long elapsed = (now_ns() - start) / 1000000;
	if (ev.data.fd == tfd) {
		printf("timeout elapsed_ms=%lld\n", elapsed);
		return 3;
	}
	char buf[64];
	ssize_t n = read(fd, buf, sizeof buf);
	printf("reply bytes=%zd elapsed_ms=%lld\n", n, elapsed);
	return 0;
}
