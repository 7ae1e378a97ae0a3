/* procmask: what a node sees and changes of the host's kernel through
 * /proc and /sys, and vsock (issue 45, items 5 and 10). Prints, for each
 * path Docker's default masks, "PATH: empty" (or the bytes or entries it
 * shows, or "absent"); for each it keeps read-only, "PATH open for
 * writing: RESULT" (nothing is written); that the process's own /proc
 * files stay writable; and whether a vsock socket can be made. */
#include "probe.h"
#include <dirent.h>
#include <glob.h>
#include <sys/socket.h>

static void masked(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		printf("%s: absent\n", path);
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		int n = 0;
		struct dirent *e;
		while (d && (e = readdir(d)))
			n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
		if (d)
			closedir(d);
		if (n)
			printf("%s: %d entries\n", path, n);
		else
			printf("%s: empty\n", path);
		return;
	}
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		printf("%s: %s\n", path, strerror(errno));
		return;
	}
	char buf[256];
	ssize_t n = read(fd, buf, sizeof buf);
	close(fd);
	if (n < 0)
		printf("%s: %s\n", path, strerror(errno));
	else if (n)
		printf("%s: %zd bytes\n", path, n);
	else
		printf("%s: empty\n", path);
}

/* readonly opens the first file pattern matches for writing, and says so
 * under the pattern's name. */
static void readonly(const char *pattern, int flags)
{
	glob_t g;
	if (glob(pattern, 0, NULL, &g) || g.gl_pathc == 0) {
		printf("%s: absent\n", pattern);
		return;
	}
	int fd = open(g.gl_pathv[0], flags);
	printf("%s open for writing: %s\n", pattern, fd < 0 ? strerror(errno) : "ok");
	if (fd >= 0)
		close(fd);
	globfree(&g);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *masks[] = { "/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
		"/sys/firmware", "/sys/devices/virtual/powercap" };
	for (size_t i = 0; i < sizeof masks / sizeof *masks; i++)
		masked(masks[i]);
	readonly("/proc/sysrq-trigger", O_WRONLY);
	readonly("/proc/irq/*/smp_affinity", O_WRONLY);
	readonly("/proc/bus/pci/*/*", O_RDWR);
	readonly("/proc/sys/kernel/core_pattern", O_WRONLY);
	/* The process's own files stay writable. */
	int fd = open("/proc/self/comm", O_WRONLY);
	report("/proc/self/comm write", fd < 0 ? -1 : write(fd, "procmask", 8));
	int v = socket(AF_VSOCK, SOCK_STREAM, 0);
	report("socket AF_VSOCK", v);
	return 0;
}
