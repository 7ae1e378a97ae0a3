/* syscall_cost N: the cost of N syscalls of three kinds, in ns each, one
 * "kind ns" line per kind: getpid (which the filter lets through, and the
 * kernel caches as such), a futex wake (let through by a rule that reads
 * an argument: the filter runs in full) and a read of descriptor -1
 * (gated: without a tracer it fails with ENOSYS). */
#define _GNU_SOURCE
#include "common.h"
#include <linux/futex.h>
#include <sys/syscall.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: syscall_cost N\n");
		return 2;
	}
	long n = atol(argv[1]);
	static int word;
	double t0 = now();
	for (long i = 0; i < n; i++)
		syscall(SYS_getpid);
	double t1 = now();
	for (long i = 0; i < n; i++)
		syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	double t2 = now();
	for (long i = 0; i < n; i++)
		syscall(SYS_read, -1, NULL, 0);
	double t3 = now();
	printf("getpid %.1f\nfutex_wake %.1f\nread %.1f\n", (t1 - t0) / n, (t2 - t1) / n, (t3 - t2) / n);
	return 0;
}
