/* hostile MODE [ARG...]: programs that misbehave, for the hostile-program
 * suite (engine/hostile_test.go). Modes:
 *   spin                 burn the CPU without a syscall, forever
 *   bomb DEPTH           a binary tree of forks DEPTH deep (2^DEPTH - 1
 *                        processes), each living 10 ms; the root waits
 *   daemon MARKER        double fork and setsid; the daemon (whose argv
 *                        keeps MARKER) sleeps forever; the parent exits 0
 *   chain N              exec itself N times, then exit 0
 *   crash                dereference NULL
 *   closefds             close every descriptor, stdio included; exit 0
 *   sockets N            open N TCP sockets and keep them; exit 0
 *   portclash PORT       listen on PORT, then a child tries to as well
 *                        and reports EADDRINUSE; exit 1
 *   escape               try to enter another network namespace (setns
 *                        on /proc/1/ns/net and on one of /run/netns), to
 *                        remount / rw and to rename the host; count the
 *                        processes /proc shows and the block devices /dev
 *                        holds; prints each; exit 0
 *   caps                 print the CapBnd line of /proc/self/status
 *   touch PATH           create PATH and leave it; prints "PATH ok" or
 *                        the error
 *   write PATH...        try to create each PATH (and /proc/sys files to
 *                        write to them): prints "PATH ok" or the error;
 *                        exit 0 */
#define _GNU_SOURCE
#include "common.h"
#include <fcntl.h>
#include <dirent.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

/* bomb forks the subtree below one process of the tree and waits for it. */
static void bomb(int depth)
{
	if (depth <= 1) {
		msleep(10);
		return;
	}
	pid_t kids[2];
	for (int i = 0; i < 2; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			bomb(depth - 1);
			_exit(0);
		}
	}
	for (int i = 0; i < 2; i++)
		if (kids[i] > 0)
			waitpid(kids[i], NULL, 0);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: hostile MODE [ARG...]\n");
		return 2;
	}
	const char *mode = argv[1];
	if (!strcmp(mode, "spin")) {
		printf("spinning\n");
		for (volatile unsigned long i = 0;; i++)
			;
	}
	if (!strcmp(mode, "bomb") && argc == 3) {
		int depth = atoi(argv[2]);
		bomb(depth);
		printf("bomb of %d processes done\n", (1 << depth) - 1);
		return 0;
	}
	if (!strcmp(mode, "daemon") && argc == 3) {
		if (fork() == 0) {
			setsid();
			if (fork() == 0) {
				for (int fd = 0; fd < 3; fd++)
					close(fd);
				for (;;)
					pause();
			}
			_exit(0);
		}
		wait(NULL);
		printf("daemonized\n");
		return 0;
	}
	if (!strcmp(mode, "chain") && argc == 3) {
		int n = atoi(argv[2]);
		if (n == 0) {
			printf("end of the chain\n");
			return 0;
		}
		char next[16];
		snprintf(next, sizeof next, "%d", n - 1);
		execl("/proc/self/exe", argv[0], "chain", next, (char *)NULL);
		die("exec");
	}
	if (!strcmp(mode, "crash")) {
		printf("crashing\n");
		volatile int *p = NULL;
		return *p;
	}
	if (!strcmp(mode, "closefds")) {
		printf("closing everything\n");
		for (int fd = 0; fd < 1024; fd++)
			close(fd);
		return 0;
	}
	if (!strcmp(mode, "sockets") && argc == 3) {
		int n = atoi(argv[2]);
		struct rlimit rl = { n + 64, n + 64 };
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			die("setrlimit");
		for (int i = 0; i < n; i++)
			if (socket(AF_INET, SOCK_STREAM, 0) < 0)
				die("socket");
		printf("%d sockets open\n", n);
		return 0;
	}
	if (!strcmp(mode, "portclash") && argc == 3) {
		int l = listen_on(argv[2]);
		pid_t p = fork();
		if (p == 0) {
			struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[2])) };
			int fd = socket(AF_INET, SOCK_STREAM, 0);
			if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
				fprintf(stderr, "second listener: %s\n", strerror(errno));
				_exit(1);
			}
			_exit(0);
		}
		int st;
		waitpid(p, &st, 0);
		close(l);
		return WIFEXITED(st) && WEXITSTATUS(st) == 1 ? 1 : 3;
	}
	if (!strcmp(mode, "escape")) {
		/* The host's (through its init) and, as nsenter --net=/run/netns/X
		 * would, any named one: lockstep's own other nodes' or another
		 * campaign's. */
		const char *paths[] = { "/proc/1/ns/net", NULL };
		char named[300] = "";
		DIR *d = opendir("/run/netns");
		struct dirent *e;
		while (d && (e = readdir(d)))
			if (e->d_name[0] != '.') {
				snprintf(named, sizeof named, "/run/netns/%s", e->d_name);
				paths[1] = named;
				break;
			}
		if (d)
			closedir(d);
		for (int i = 0; i < 2 && paths[i]; i++) {
			int ns = open(paths[i], O_RDONLY);
			if (ns < 0) {
				printf("open %s: %s\n", i ? "/run/netns/X" : paths[i], strerror(errno));
				continue;
			}
			if (setns(ns, CLONE_NEWNET) < 0)
				printf("setns %s: %s\n", i ? "/run/netns/X" : paths[i], strerror(errno));
			else
				printf("setns %s: entered\n", i ? "/run/netns/X" : paths[i]);
			close(ns);
		}
		if (mount("none", "/", NULL, MS_REMOUNT | MS_BIND, NULL) < 0)
			printf("remount /: %s\n", strerror(errno));
		else
			printf("remount /: ok\n");
		/* The host's name is shared: renaming it needs CAP_SYS_ADMIN. */
		if (sethostname("hostile", 7) < 0)
			printf("sethostname: %s\n", strerror(errno));
		else
			printf("sethostname: ok\n");
		/* The processes /proc shows: the host's, or the node's own. */
		int procs = 0;
		d = opendir("/proc");
		while (d && (e = readdir(d)))
			if (e->d_name[0] >= '1' && e->d_name[0] <= '9')
				procs++;
		if (d)
			closedir(d);
		printf("processes in /proc: %d\n", procs);
		/* The host's disks, through their device nodes. */
		int blk = 0;
		d = opendir("/dev");
		while (d && (e = readdir(d))) {
			char p[300];
			struct stat st;
			snprintf(p, sizeof p, "/dev/%s", e->d_name);
			if (stat(p, &st) == 0 && S_ISBLK(st.st_mode))
				blk++;
		}
		if (d)
			closedir(d);
		printf("block devices in /dev: %d\n", blk);
		return 0;
	}
	if (!strcmp(mode, "touch") && argc == 3) {
		int fd = open(argv[2], O_WRONLY | O_CREAT, 0644);
		printf("%s %s\n", argv[2], fd < 0 ? strerror(errno) : "ok");
		return 0;
	}
	if (!strcmp(mode, "caps")) {
		FILE *f = fopen("/proc/self/status", "r");
		char line[256];
		while (f && fgets(line, sizeof line, f))
			if (!strncmp(line, "CapBnd:", 7))
				fputs(line, stdout);
		return 0;
	}
	if (!strcmp(mode, "write")) {
		for (int i = 2; i < argc; i++) {
			int fd = strncmp(argv[i], "/proc/sys/", 10) ? open(argv[i], O_WRONLY | O_CREAT | O_TRUNC, 0644)
								     : open(argv[i], O_WRONLY);
			if (fd < 0) {
				printf("%s %s\n", argv[i], strerror(errno));
				continue;
			}
			if (strncmp(argv[i], "/proc/sys/", 10))
				unlink(argv[i]);
			printf("%s ok\n", argv[i]);
			close(fd);
		}
		return 0;
	}
	fprintf(stderr, "hostile: bad mode or arguments\n");
	return 2;
}
