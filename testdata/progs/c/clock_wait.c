/* clock_wait MODE: a thread that waits for another the way a runtime's
 * does (HotSpot's handshakes): it reads the clock until a
 * flag is set, and sleeps 10 us at a time only once a millisecond has
 * passed since it began. main wakes it through a pipe, starts a thread and
 * only then sets the flag. With MODE "work" the woken thread computes
 * instead, reading no clock, and sets the flag itself.
 * Under lockstep the start of a thread waits until nothing else runs, and
 * the clock stands still meanwhile: in "clock" mode each waits for the
 * other. After the flag, main and the waiter each sleep a millisecond (an
 * op each), so that the order of ops says where the waiter was let go on.
 * main prints "done" once both threads are joined. */
#define _GNU_SOURCE
#include "common.h"
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#include <string.h>

static atomic_int flag;
static int wake[2];
static int work;

static long long ns(const struct timespec *t)
{
	return (long long)t->tv_sec * 1000000000LL + t->tv_nsec;
}

static void nap(void)
{
	struct timespec d = { 0, 1000000 };
	nanosleep(&d, NULL);
}

static void *waiter(void *arg)
{
	(void)arg;
	char c;
	if (read(wake[0], &c, 1) != 1)
		die("read");
	if (work) {
		volatile unsigned long x = 0;
		for (unsigned long i = 0; i < 50000000UL; i++)
			x += i ^ (x >> 3);
		atomic_store(&flag, 1);
		return NULL;
	}
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!atomic_load(&flag)) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (ns(&t) - ns(&t0) > 1000000) {
			struct timespec d = { 0, 10000 };
			nanosleep(&d, NULL);
		}
	}
	nap();
	return NULL;
}

static void *nothing(void *arg)
{
	return arg;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc != 2 || (strcmp(argv[1], "clock") != 0 && strcmp(argv[1], "work") != 0)) {
		fprintf(stderr, "usage: clock_wait clock|work\n");
		return 2;
	}
	work = strcmp(argv[1], "work") == 0;
	if (pipe(wake) < 0)
		die("pipe");
	pthread_t w, n;
	if (pthread_create(&w, NULL, waiter, NULL) != 0)
		die("pthread_create");
	if (write(wake[1], "x", 1) != 1)
		die("write");
	if (pthread_create(&n, NULL, nothing, NULL) != 0)
		die("pthread_create");
	if (!work)
		atomic_store(&flag, 1);
	nap();
	pthread_join(n, NULL);
	pthread_join(w, NULL);
	printf("done\n");
	return 0;
}
