/* clock_kinds N: N rounds of reading every clock kind twice, through the C
 * library (the vDSO) and through the raw syscall, with sleeps of different
 * lengths between rounds; prints every value, for comparing lockstep's two
 * ways of answering clock reads. */
#include "common.h"
#include <errno.h>
#include <sys/syscall.h>
#include <sys/time.h>

static const clockid_t ids[] = {
	CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_REALTIME_COARSE,
	CLOCK_MONOTONIC_COARSE, CLOCK_BOOTTIME, CLOCK_TAI,
};

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 5;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i <= n; i++) {
		for (unsigned k = 0; k < sizeof ids / sizeof ids[0]; k++) {
			struct timespec a, b;
			clock_gettime(ids[k], &a);
			syscall(SYS_clock_gettime, ids[k], &b);
			printf("i=%d clock=%d libc=%lld.%09ld sys=%lld.%09ld\n", i, (int)ids[k],
			       (long long)a.tv_sec, a.tv_nsec, (long long)b.tv_sec, b.tv_nsec);
		}
		struct timeval tv, tv2;
		gettimeofday(&tv, NULL);
		syscall(SYS_gettimeofday, &tv2, NULL);
		printf("i=%d gettimeofday libc=%lld.%06ld sys=%lld.%06ld\n", i,
		       (long long)tv.tv_sec, (long)tv.tv_usec, (long long)tv2.tv_sec, (long)tv2.tv_usec);
		time_t t1, t2 = time(&t1);
		printf("i=%d time ret=%lld arg=%lld sys=%lld\n", i, (long long)t2, (long long)t1,
		       (long long)syscall(SYS_time, NULL));
		/* Clocks lockstep leaves to the kernel: only whether they work. */
		struct timespec c;
		int cpu = clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c);
		errno = 0;
		int bad = clock_gettime((clockid_t)-77, &c);
		printf("i=%d cputime=%d bad=%d errno=%d\n", i, cpu, bad, errno);
		struct timespec d = { 0, 1500000L * i + 333 };
		nanosleep(&d, NULL);
	}
	return 0;
}
