/* disk_log DIR N [MS]: a store that keeps files in DIR, for the storage faults.
 *
 * First start (no DIR/boot): it makes, each durable unless said,
 *   boot      its marker;
 *   synced    "durable", fsynced;
 *   unsynced  created durable and empty, then "volatile" written, no fsync;
 *   tmp       created durable, "renamed" written and fsynced, then renamed
 *             to "renamed" without an fsync of DIR;
 *   pattern   4096 bytes of a known pattern, fsynced;
 * then N times, MS ms apart (default 10): appends a line to "log" and fsyncs it, and
 * prints any failure ("write 3: Input/output error") and any fsync that
 * took virtual time ("fsync 4 took 250ms"); then sleeps until killed.
 *
 * Later starts print what survived:
 *   "synced=durable unsynced= tmp=renamed renamed=<none> pattern-bits=0"
 * (pattern-bits: how many bits of "pattern" differ from the pattern, or
 * "cut N" when it is shorter), then sleep until killed. */
#define _GNU_SOURCE
#include "common.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

static char dir[4096];

/* path is DIR/name, in one of two buffers used in turn (rename takes two). */
static char *path(const char *name)
{
	static char p[2][8192];
	static int k;
	k ^= 1;
	snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
	return p[k];
}

static void sync_dir(void)
{
	int d = open(dir, O_RDONLY | O_DIRECTORY);
	if (d < 0 || fsync(d) < 0)
		die("fsync dir");
	close(d);
}

/* put writes a file's content, fsyncing it when sync is set. */
static void put(const char *name, const char *s, size_t n, int sync)
{
	int fd = open(path(name), O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0)
		die("open");
	if (n > 0 && write(fd, s, n) != (ssize_t)n)
		die("write");
	if (sync && fsync(fd) < 0)
		die("fsync");
	close(fd);
}

static void show(const char *name)
{
	char buf[256] = "";
	int fd = open(path(name), O_RDONLY);
	if (fd < 0) {
		printf(" %s=<none>", name);
		return;
	}
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	printf(" %s=%s", name, buf);
}

static char pat(int i) { return (char)(i * 7 + 3); }

static void sleep_forever(void)
{
	for (;;) {
		struct timespec ts = {0, 50 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: disk_log DIR N [MS]\n");
		return 1;
	}
	snprintf(dir, sizeof dir, "%s", argv[1]);
	int n = atoi(argv[2]);
	long gap = argc == 4 ? atol(argv[3]) : 10;
	mkdir(dir, 0755);
	if (access(path("boot"), F_OK) == 0) {
		printf("restart:");
		show("synced");
		show("unsynced");
		show("tmp");
		show("renamed");
		char buf[4096];
		int fd = open(path("pattern"), O_RDONLY);
		ssize_t got = fd < 0 ? -1 : read(fd, buf, sizeof buf);
		if (got < (ssize_t)sizeof buf) {
			printf(" pattern-bits=cut %zd\n", got);
		} else {
			int bits = 0;
			for (int i = 0; i < 4096; i++)
				bits += __builtin_popcount((unsigned char)(buf[i] ^ pat(i)));
			printf(" pattern-bits=%d\n", bits);
		}
		sleep_forever();
	}
	put("boot", "1", 1, 1);
	put("synced", "durable", 7, 1);
	put("unsynced", "", 0, 1);
	put("tmp", "", 0, 1);
	char p[4096];
	for (int i = 0; i < 4096; i++)
		p[i] = pat(i);
	put("pattern", p, sizeof p, 1);
	int lfd = open(path("log"), O_CREAT | O_RDWR | O_APPEND, 0644);
	if (lfd < 0)
		die("open log");
	sync_dir();
	int fd = open(path("unsynced"), O_WRONLY);
	if (fd < 0 || write(fd, "volatile", 8) != 8)
		die("unsynced");
	close(fd);
	put("tmp", "renamed", 7, 1);
	if (rename(path("tmp"), path("renamed")) < 0)
		die("rename");
	printf("setup done\n");
	fd = lfd;
	for (int i = 0; i < n; i++) {
		char line[64];
		int len = snprintf(line, sizeof line, "entry %d\n", i);
		if (write(fd, line, len) < 0)
			printf("write %d: %s\n", i, strerror(errno));
		long long t0 = now_ms();
		if (fsync(fd) < 0)
			printf("fsync %d: %s\n", i, strerror(errno));
		long long took = now_ms() - t0;
		if (took > 0)
			printf("fsync %d took %lldms\n", i, took);
		char back[64];
		if (pread(fd, back, 1, 0) < 0)
			printf("read %d: %s\n", i, strerror(errno));
		if (gap > 0) {
			struct timespec ts = {0, gap * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
	}
	printf("log done\n");
	sleep_forever();
}
