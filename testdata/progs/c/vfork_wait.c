/* vfork_wait SECONDS: vfork a child that sleeps SECONDS before it exits,
 * so the parent stays in the kernel's wait for its vfork child that long
 * (tracer.TestVforkWait looks at it). The child only makes raw syscalls,
 * as a vfork child may. */
#include <sys/syscall.h>
#include <unistd.h>
#include "common.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: vfork_wait SECONDS\n");
		return 2;
	}
	struct timespec ts = { atoi(argv[1]), 0 };
	pid_t pid = vfork();
	if (pid == 0) {
		syscall(SYS_nanosleep, &ts, NULL);
		syscall(SYS_exit, 0);
	}
	return pid < 0;
}
