/* clock_sleep N: sleep 1 s N times, printing monotonic and real clocks. */
#include "common.h"

int main(int argc, char **argv)
{
	struct timespec s, t, r;
	int n = argc > 1 ? atoi(argv[1]) : 10;
	setvbuf(stdout, NULL, _IOLBF, 0);
	clock_gettime(CLOCK_MONOTONIC, &s);
	for (int i = 1; i <= n; i++) {
		struct timespec d = { 1, 0 };
		nanosleep(&d, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t);
		clock_gettime(CLOCK_REALTIME, &r);
		printf("i=%d mono_ns=%lld real_ns=%lld\n", i,
		       (long long)(t.tv_sec - s.tv_sec) * 1000000000LL + (t.tv_nsec - s.tv_nsec),
		       (long long)r.tv_sec * 1000000000LL + r.tv_nsec);
	}
	return 0;
}
