/* timerfd_tick: arms a timerfd one-shot and periodically, waits for it with
 * epoll_wait, a blocking read and poll, and prints the monotonic time since
 * start (ns) at each expiry. See ../SPEC.md. */
#include "common.h"
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>

static long long mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long ns(const struct timespec *ts) { return ts->tv_sec * 1000000000LL + ts->tv_nsec; }

static struct itimerspec spec(long long interval, long long value)
{
	struct itimerspec s = { { interval / 1000000000, interval % 1000000000 },
				{ value / 1000000000, value % 1000000000 } };
	return s;
}

/* take reads the expiration count and prints it with the time of the read. */
static void take(int fd, const char *what, long long start)
{
	uint64_t n = 0;
	if (read(fd, &n, sizeof n) != sizeof n)
		die("read timerfd");
	printf("%s n=%llu mono_ns=%lld\n", what, (unsigned long long)n, mono() - start);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	long long start = mono();
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (fd < 0)
		die("timerfd_create");

	/* One-shot, 2 s, waited for with epoll_wait(-1) as Erlang's schedulers do. */
	struct itimerspec s = spec(0, 2000000000LL), cur;
	if (timerfd_settime(fd, 0, &s, NULL) < 0)
		die("timerfd_settime");
	timerfd_gettime(fd, &cur);
	printf("armed value_ns=%lld\n", ns(&cur.it_value));
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		die("epoll_ctl");
	if (epoll_wait(ep, &ev, 1, -1) != 1)
		die("epoll_wait");
	take(fd, "oneshot", start);
	timerfd_gettime(fd, &cur);
	printf("expired value_ns=%lld\n", ns(&cur.it_value));

	/* Periodic: first at +1.5 s, then every second; blocking reads. */
	s = spec(1000000000LL, 1500000000LL);
	timerfd_settime(fd, 0, &s, NULL);
	for (int i = 1; i <= 3; i++)
		take(fd, "interval", start);

	/* Expirations pile up while nobody reads: three during a 3.5 s sleep. */
	msleep(3500);
	take(fd, "catchup", start);

	/* Absolute one-shot at start + 10 s, waited for with poll. */
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	s = spec(0, ns(&now) - (mono() - start) + 10000000000LL);
	struct itimerspec old;
	timerfd_settime(fd, TFD_TIMER_ABSTIME, &s, &old);
	printf("old interval_ns=%lld value_ns=%lld\n", ns(&old.it_interval), ns(&old.it_value));
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	if (poll(&pfd, 1, -1) != 1)
		die("poll");
	take(fd, "abs", start);

	/* Disarmed: a non-blocking read finds nothing. */
	s = spec(0, 0);
	timerfd_settime(fd, 0, &s, NULL);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	uint64_t n;
	printf("disarmed read=%zd\n", read(fd, &n, sizeof n));
	return 0;
}
