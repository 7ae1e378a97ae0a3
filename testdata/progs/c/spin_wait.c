/* spin_wait MODE: short sleeps as a spin wait's back-off.
 *   flag:  five times, main starts a worker that counts to a million in
 *          user space and sets a flag, while main looks at the flag and
 *          sleeps 10 us between looks, as a JVM's VM thread waits for
 *          threads to reach a safepoint. Prints "looks N" (N: main's looks
 *          in all). Under lockstep a sleep that short returns once the
 *          worker has got as far as it can: 5 looks, and no sleep op.
 *   clock: waits for 100 us of CLOCK_MONOTONIC to pass in 5 us sleeps,
 *          then prints "waited": the clock must move although each sleep
 *          is short. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static atomic_int flag;

static void *worker(void *arg)
{
	(void)arg;
	volatile long n = 0;
	for (long i = 0; i < 1000000; i++)
		n++;
	atomic_store(&flag, 1);
	return NULL;
}

static void sleep_ns(long ns)
{
	struct timespec ts = {0, ns};
	nanosleep(&ts, NULL);
}

static long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "flag") == 0) {
		int looks = 0;
		for (int r = 0; r < 5; r++) {
			pthread_t t;
			atomic_store(&flag, 0);
			if (pthread_create(&t, NULL, worker, NULL) != 0)
				return 2;
			for (;;) {
				sleep_ns(10000);
				looks++;
				if (atomic_load(&flag))
					break;
			}
			pthread_join(t, NULL);
		}
		printf("looks %d\n", looks);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "clock") == 0) {
		long start = now_ns();
		while (now_ns() - start < 100000)
			sleep_ns(5000);
		puts("waited");
		return 0;
	}
	fprintf(stderr, "usage: spin_wait flag|clock\n");
	return 2;
}
