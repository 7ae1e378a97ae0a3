/* proc_stat: reads its resident set size from /proc/self/stat twice, with
 * allocations of different sizes touched in between, and from
 * /proc/self/statm; then burns at least 30 ms of CPU and reads its CPU times
 * from /proc/self/stat and from getrusage; see ../SPEC.md. */
#include <fcntl.h>
#include <sys/resource.h>
#include "common.h"

/* slurp reads path with reads of 50 bytes until the end of file, as a
 * program that does not know the length would. */
static void slurp(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		die(path);
	size_t n = 0;
	for (;;) {
		size_t want = size - 1 - n < 50 ? size - 1 - n : 50;
		ssize_t r = read(fd, buf + n, want);
		if (r < 0)
			die("read");
		if (r == 0)
			break;
		n += r;
	}
	buf[n] = 0;
	close(fd);
}

/* stat_field returns field i (from 1) of a stat line; fields from 3 on
 * are counted from the command name's closing parenthesis. */
static long stat_field(const char *s, int i)
{
	if (i == 1)
		return atol(s);
	const char *p = strrchr(s, ')');
	if (!p)
		die("stat: no ')'");
	for (int f = 2; f < i; f++) {
		p = strchr(p + 1, ' ');
		if (!p)
			die("stat: short");
	}
	return atol(p + 1);
}

/* touch allocates n bytes and writes to each of its pages (through a
 * volatile pointer, so that the compiler keeps the writes). */
static void touch(size_t n)
{
	volatile char *b = malloc(n);
	if (!b)
		die("malloc");
	for (size_t i = 0; i < n; i += 4096)
		b[i] = 1;
}

/* stat_comm copies a stat line's command name (field 2, without its
 * parentheses) into comm. */
static void stat_comm(const char *s, char *comm, size_t size)
{
	const char *a = strchr(s, '('), *b = strrchr(s, ')');
	if (!a || !b || b < a)
		die("stat: no command name");
	size_t n = (size_t)(b - a - 1) < size - 1 ? (size_t)(b - a - 1) : size - 1;
	memcpy(comm, a + 1, n);
	comm[n] = 0;
}

int main(void)
{
	char s[4096], comm[64];
	slurp("/proc/self/stat", s, sizeof s);
	long pid = stat_field(s, 1), rss1 = stat_field(s, 24);
	stat_comm(s, comm, sizeof comm);
	touch(8 << 20);
	touch(72 << 20);
	slurp("/proc/self/stat", s, sizeof s);
	long rss2 = stat_field(s, 24);
	slurp("/proc/self/statm", s, sizeof s);
	long size, resident, shared;
	if (sscanf(s, "%ld %ld %ld", &size, &resident, &shared) != 3)
		die("statm");
	struct rusage ru;
	long cpu_ms = 0;
	volatile unsigned long x = 1;
	for (int round = 0; round < 100000 && cpu_ms < 30; round++) {
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
		getrusage(RUSAGE_SELF, &ru);
		cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
			 (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
	}
	slurp("/proc/self/stat", s, sizeof s);
	long cpu_ticks = stat_field(s, 14) + stat_field(s, 15) + stat_field(s, 16) + stat_field(s, 17);
	printf("pid=%ld getpid=%ld rss1=%ld rss2=%ld statm_resident=%ld statm_shared=%ld maxrss_pages=%ld comm=%s stat_cpu_ticks=%ld rusage_cpu_ms=%ld\n",
	       pid, (long)getpid(), rss1, rss2, resident, shared, ru.ru_maxrss * 1024 / sysconf(_SC_PAGESIZE), comm,
	       cpu_ticks, cpu_ms);
	return 0;
}
