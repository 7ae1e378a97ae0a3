/* busy_bursts ON_MS OFF_US: burns the CPU for ON_MS milliseconds, sleeps
 * OFF_US microseconds, forever. Run under SCHED_RR beside a campaign it
 * stands for another campaign's busy real-time tracees; the short sleeps
 * let real-time throttling's share reach the machine's ordinary threads. */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	long long on = atoll(argv[1]) * 1000000LL;
	useconds_t off = (useconds_t)atol(argv[2]);
	for (;;) {
		long long t0 = now_ns();
		while (now_ns() - t0 < on)
			;
		usleep(off);
	}
}
