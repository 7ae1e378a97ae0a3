/* secretsend: sends from memory lockstep cannot read, between two sends
 * it can (issue 45, item 3).
 *   secretsend serve PORT        print what one connection brought
 *   secretsend send HOST PORT    send "first", then from a memfd_secret
 *                                mapping (when the kernel gives one) and
 *                                from the vvar page, then "last"
 * The program can read both, lockstep cannot; natively the kernel sends
 * them at once, ahead of "first" still in flight. The server must get
 * first and last only, in order. */
#include "probe.h"
#include <sys/mman.h>
#include <sys/syscall.h>

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "serve")) {
		serve_tcp(argv[2]);
		return 0;
	}
	if (argc != 4 || strcmp(argv[1], "send"))
		return 2;
	int s = connect_tcp(argv[2], argv[3]);
	if (send(s, "first\n", 6, 0) != 6)
		die("send first");
	long page = sysconf(_SC_PAGESIZE);
	int fd = syscall(SYS_memfd_secret, 0);
	report("memfd_secret", fd);
	if (fd >= 0 && ftruncate(fd, page) == 0) {
		char *secret = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (secret != MAP_FAILED) {
			memcpy(secret, "SECRET\n", 7);
			report("send from memfd_secret", send(s, secret, 7, 0));
		}
	}
	/* The vvar page: the program reads it, process_vm_readv cannot (a
	 * PFN mapping). */
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long vvar = 0;
	while (maps && fgets(line, sizeof line, maps))
		if (strstr(line, "[vvar]"))
			vvar = strtoul(line, NULL, 16);
	if (vvar)
		report("send from the vvar page", send(s, (void *)vvar, 8, 0));
	else
		printf("send from the vvar page: no vvar page\n");
	if (send(s, "last\n", 5, 0) != 5)
		die("send last");
	close(s);
	return 0;
}
