/* clock_loop N: N clock_gettime(CLOCK_MONOTONIC) calls, for the clock-read
 * benchmark; prints the last value so the calls are not optimized away. */
#include "common.h"

int main(int argc, char **argv)
{
	struct timespec t = { 0, 0 };
	long n = argc > 1 ? atol(argv[1]) : 100000;
	for (long i = 0; i < n; i++)
		clock_gettime(CLOCK_MONOTONIC, &t);
	printf("last=%lld\n", (long long)t.tv_sec * 1000000000LL + t.tv_nsec);
	return 0;
}
