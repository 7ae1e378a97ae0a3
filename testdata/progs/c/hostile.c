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
 *                        exit 0
 * The probes below print one line per attempt, "what: result", and exit 0:
 *   abi                  syscalls of the i386 ABI (int 0x80) and of x32
 *   hoststate            the kernel's keyrings, new user and network
 *                        namespaces, clone3, a file opened by its handle,
 *                        and writes to the clock page (descriptor 1023)
 *   sched                scheduling policy, affinity and priority changes
 *   async                io_uring and Linux AIO
 *   timedwait SECONDS    sigtimedwait, semtimedop, mq_timedreceive,
 *                        futex_waitv and futex's PI locks, each timing
 *                        out after SECONDS, with the time they took on
 *                        the monotonic clock; recvmmsg's timeout passed
 *                        and not (pi_waits, mmsg_waits)
 *   bypass HOST PORT     connected to an echo server: sendfile, splice,
 *                        pwritev2 and preadv2 on the socket, TCP Fast
 *                        Open; then an echo through write and read
 *   unixserve DIR        bind a Unix socket at DIR/sock and connect to it
 *                        from the node itself, make a System V message
 *                        queue, a FIFO DIR/fifo, then DIR/ready; then
 *                        serve forever
 *   unixreach DIR        once DIR/ready exists: connect and send a
 *                        datagram to it, look for the other node's queue */
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
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/sendfile.h>
#include <linux/futex.h>
#include <mqueue.h>
#include <stdint.h>

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

/* report prints "what: ok" for r >= 0, else "what: <errno's text>". */
static void report(const char *what, long r)
{
	printf("%s: %s\n", what, r < 0 ? strerror(errno) : "ok");
}

/* int80 makes an i386 syscall through int 0x80; it returns the kernel's
 * raw answer (-errno on failure). */
static long int80(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
	return ret;
}

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* timed prints how a wait that should time out ended and how long it took. */
static void timed(const char *what, long r, double t0)
{
	printf("%s: %s after %.0fs\n", what, r < 0 ? strerror(errno) : "returned", mono() - t0);
}

static int unix_at(const char *dir, int type, struct sockaddr_un *a)
{
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path, sizeof a->sun_path, "%s/sock", dir);
	return socket(AF_UNIX, type, 0);
}

/* pi_waits times out on a PI lock another process holds: FUTEX_LOCK_PI
 * (absolute, CLOCK_REALTIME), FUTEX_LOCK_PI2 (absolute, CLOCK_MONOTONIC)
 * and FUTEX_WAIT_REQUEUE_PI waiting to be moved onto it; then LOCK_PI past
 * its deadline, held (times out at once) and free (takes it). */
static void pi_waits(long secs)
{
	uint32_t *w = mmap(NULL, 8, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t owner = fork();
	if (owner == 0) {
		pause();
		_exit(0);
	}
	w[0] = owner, w[1] = 0;
	struct timespec abs;
	clock_gettime(CLOCK_REALTIME, &abs);
	abs.tv_sec += secs;
	double t0 = mono();
	timed("futex lock_pi", syscall(SYS_futex, &w[0], FUTEX_LOCK_PI, 0, &abs, NULL, 0), t0);
	clock_gettime(CLOCK_MONOTONIC, &abs);
	abs.tv_sec += secs;
	t0 = mono();
	timed("futex lock_pi2", syscall(SYS_futex, &w[0], 13 /* FUTEX_LOCK_PI2 */, 0, &abs, NULL, 0), t0);
	clock_gettime(CLOCK_MONOTONIC, &abs);
	abs.tv_sec += secs;
	t0 = mono();
	timed("futex wait_requeue_pi", syscall(SYS_futex, &w[1], FUTEX_WAIT_REQUEUE_PI, 0, &abs, &w[0], 0), t0);
	/* Past its deadline, a PI lock still takes a free lock. */
	struct timespec past = { 0, 0 };
	t0 = mono();
	timed("futex lock_pi held, past its deadline", syscall(SYS_futex, &w[0], FUTEX_LOCK_PI, 0, &past, NULL, 0), t0);
	w[1] = 0;
	t0 = mono();
	timed("futex lock_pi free, past its deadline", syscall(SYS_futex, &w[1], FUTEX_LOCK_PI, 0, &past, NULL, 0), t0);
	kill(owner, SIGKILL);
	waitpid(owner, NULL, 0);
}

/* mmsg_waits receives with recvmmsg's timeout a datagram a child sends
 * after a sleep: past the timeout (the call returns with the one
 * datagram, though it asked for two, and nothing left), then within it
 * (MSG_WAITFORONE; the time left written back). */
static void mmsg_waits(long secs)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof a;
	bind(s, (struct sockaddr *)&a, sizeof a);
	getsockname(s, (struct sockaddr *)&a, &alen);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct {
		long after, timeout;
		int flags;
		const char *what;
	} cases[] = {
		{ secs + 1, secs, 0, "recvmmsg past its timeout" },
		{ secs, 2 * secs, MSG_WAITFORONE, "recvmmsg within its timeout" },
	};
	for (int i = 0; i < 2; i++) {
		pid_t kid = fork();
		if (kid == 0) {
			sleep(cases[i].after);
			sendto(s, "x", 1, 0, (struct sockaddr *)&a, sizeof a);
			_exit(0);
		}
		char buf[2][8];
		struct iovec iov[2] = { { buf[0], 8 }, { buf[1], 8 } };
		struct mmsghdr m[2] = { { .msg_hdr = { .msg_iov = &iov[0], .msg_iovlen = 1 } },
					{ .msg_hdr = { .msg_iov = &iov[1], .msg_iovlen = 1 } } };
		struct timespec to = { cases[i].timeout, 0 };
		double t0 = mono();
		int n = recvmmsg(s, m, 2, cases[i].flags, &to);
		printf("%s: %d after %.0fs, %.0fs left\n", cases[i].what, n, mono() - t0, to.tv_sec + to.tv_nsec / 1e9);
		waitpid(kid, NULL, 0);
	}
	close(s);
}

static int probes(const char *mode, int argc, char **argv)
{
	if (!strcmp(mode, "abi")) {
		/* i386's getpid is 20, write 4; x32's getpid is x86-64's 39
		 * with bit 30 set. */
		long r = int80(20, 0, 0, 0);
		printf("int 0x80 getpid: %s\n", r < 0 ? strerror(-r) : "ran");
		r = int80(4, 1, (long)"int 0x80 write ran\n", 19);
		printf("int 0x80 write: %s\n", r < 0 ? strerror(-r) : "ran");
		report("x32 getpid", syscall(0x40000000 | SYS_getpid));
		return 0;
	}
	if (!strcmp(mode, "hoststate")) {
		report("add_key", syscall(SYS_add_key, "user", "lockstep-hostile", "x", 1, -2 /* session */));
		report("keyctl", syscall(SYS_keyctl, 0 /* GET_KEYRING_ID */, -4 /* user */, 0));
		report("unshare user", unshare(CLONE_NEWUSER));
		report("unshare net", unshare(CLONE_NEWNET));
		uint64_t args[11] = { 0 };
		args[4] = SIGCHLD; /* exit_signal */
		long pid = syscall(SYS_clone3, args, sizeof args);
		if (pid == 0)
			_exit(0);
		if (pid > 0)
			waitpid(pid, NULL, 0);
		report("clone3", pid);
		/* A file by its handle: past the mount namespace with
		 * DAC_READ_SEARCH (the "shocker" escape). */
		struct {
			struct file_handle h;
			unsigned char bytes[MAX_HANDLE_SZ];
		} fh = { .h.handle_bytes = MAX_HANDLE_SZ };
		int mount_id;
		if (name_to_handle_at(AT_FDCWD, "/etc/hostname", &fh.h, &mount_id, 0) < 0)
			report("name_to_handle_at", -1);
		else
			report("open_by_handle_at", open_by_handle_at(open("/", O_RDONLY), &fh.h, O_RDONLY));
		/* The clock page: descriptor 1023, lockstep's memfd. */
		const int page = 1023;
		struct stat st;
		if (fstat(page, &st) < 0) {
			printf("clock page: none\n");
			return 0;
		}
		char zero[8] = { 0 };
		report("clock page pwrite", pwrite(page, zero, sizeof zero, 0));
		void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, page, 0);
		report("clock page mmap writable", m == MAP_FAILED ? -1 : 0);
		m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, page, 0);
		report("clock page mmap read-only", m == MAP_FAILED ? -1 : 0);
		if (m != MAP_FAILED)
			report("clock page mprotect writable", mprotect(m, 4096, PROT_READ | PROT_WRITE));
		int fd = open("/proc/self/fd/1023", O_RDWR);
		report("clock page reopened read-write", fd);
		if (fd >= 0)
			report("clock page write through it", write(fd, zero, sizeof zero));
		report("clock page ftruncate", ftruncate(page, 0));
		return 0;
	}
	if (!strcmp(mode, "sched")) {
		struct sched_param sp = { 0 };
		report("sched_setscheduler SCHED_OTHER", sched_setscheduler(0, SCHED_OTHER, &sp));
		sp.sched_priority = 1;
		report("sched_setparam", sched_setparam(0, &sp));
		cpu_set_t all;
		CPU_ZERO(&all);
		for (int c = 0; c < CPU_SETSIZE; c++)
			CPU_SET(c, &all);
		report("sched_setaffinity", sched_setaffinity(0, sizeof all, &all));
		uint32_t attr[14] = { 56, SCHED_OTHER };
		report("sched_setattr", syscall(SYS_sched_setattr, 0, attr, 0));
		report("setpriority", setpriority(PRIO_PROCESS, 0, 5));
		printf("policy: %s\n", sched_getscheduler(0) == SCHED_RR ? "SCHED_RR" : "other");
		return 0;
	}
	if (!strcmp(mode, "async")) {
		char params[120] = { 0 };
		report("io_uring_setup", syscall(SYS_io_uring_setup, 8, params));
		unsigned long ctx = 0;
		report("io_setup", syscall(SYS_io_setup, 8, &ctx));
		return 0;
	}
	if (!strcmp(mode, "timedwait") && argc == 3) {
		long secs = atol(argv[2]);
		struct timespec rel = { secs, 0 }, abs;
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		double t0 = mono();
		timed("sigtimedwait", sigtimedwait(&set, NULL, &rel), t0);
		int sem = semget(IPC_PRIVATE, 1, 0600);
		struct sembuf down = { 0, -1, 0 };
		t0 = mono();
		timed("semtimedop", semtimedop(sem, &down, 1, &rel), t0);
		semctl(sem, 0, IPC_RMID);
		struct mq_attr qa = { .mq_maxmsg = 4, .mq_msgsize = 64 };
		mqd_t q = mq_open("/lockstep-hostile", O_RDWR | O_CREAT, 0600, &qa);
		mq_unlink("/lockstep-hostile");
		char msg[64];
		clock_gettime(CLOCK_REALTIME, &abs);
		abs.tv_sec += secs;
		t0 = mono();
		timed("mq_timedreceive", mq_timedreceive(q, msg, sizeof msg, NULL, &abs), t0);
		static uint32_t word;
		struct {
			uint64_t val, uaddr;
			uint32_t flags, reserved;
		} w = { 0, (uintptr_t)&word, 2 | 128 /* FUTEX2_SIZE_U32 | PRIVATE */, 0 };
		clock_gettime(CLOCK_MONOTONIC, &abs);
		abs.tv_sec += secs;
		t0 = mono();
		timed("futex_waitv", syscall(SYS_futex_waitv, &w, 1, 0, &abs, CLOCK_MONOTONIC), t0);
		pi_waits(secs);
		mmsg_waits(secs);
		return 0;
	}
	if (!strcmp(mode, "bypass") && argc == 4) {
		int s = connect_to(argv[2], argv[3]);
		int file = open("/proc/self/exe", O_RDONLY);
		report("sendfile to the socket", sendfile(s, file, NULL, 16));
		int p[2];
		if (pipe(p) < 0)
			die("pipe");
		write(p[1], "spliced\n", 8);
		report("splice to the socket", splice(p[0], NULL, s, NULL, 8, 0));
		report("splice from the socket", splice(s, NULL, p[1], NULL, 8, SPLICE_F_NONBLOCK));
		struct iovec iov = { "vector\n", 7 };
		report("pwritev2 to the socket", pwritev2(s, &iov, 1, -1, 0));
		char in[16];
		struct iovec riov = { in, sizeof in };
		report("preadv2 from the socket", preadv2(s, &riov, 1, -1, RWF_NOWAIT));
		struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;
		if (getaddrinfo(argv[2], argv[3], &hints, &res))
			die("getaddrinfo");
		int f = socket(AF_INET, SOCK_STREAM, 0);
		report("sendto MSG_FASTOPEN", sendto(f, "fast\n", 5, MSG_FASTOPEN, res->ai_addr, res->ai_addrlen));
		close(f);
		int one = 1;
		f = socket(AF_INET, SOCK_STREAM, 0);
		report("TCP_FASTOPEN_CONNECT", setsockopt(f, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &one, sizeof one));
		close(f);
		/* What went through: only the echo of this write. */
		if (write(s, "echo\n", 5) != 5)
			die("write");
		ssize_t n = read(s, in, sizeof in - 1);
		in[n > 0 ? n : 0] = 0;
		printf("echoed: %s", in);
		return 0;
	}
	if (!strcmp(mode, "unixserve") && argc == 3) {
		struct sockaddr_un a;
		int l = unix_at(argv[2], SOCK_STREAM, &a);
		unlink(a.sun_path);
		if (bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 8) < 0)
			die("bind");
		int c = socket(AF_UNIX, SOCK_STREAM, 0);
		report("own socket connect", connect(c, (struct sockaddr *)&a, sizeof a));
		report("System V queue", msgget(0x10c5, IPC_CREAT | 0600));
		char fifo[300];
		snprintf(fifo, sizeof fifo, "%s/fifo", argv[2]);
		report("mkfifo", mkfifo(fifo, 0600));
		snprintf(fifo, sizeof fifo, "%s/ready", argv[2]);
		close(open(fifo, O_WRONLY | O_CREAT, 0600));
		for (;;)
			pause();
	}
	if (!strcmp(mode, "unixreach") && argc == 3) {
		struct sockaddr_un a;
		int c = unix_at(argv[2], SOCK_STREAM, &a);
		char ready[300];
		struct stat st;
		snprintf(ready, sizeof ready, "%s/ready", argv[2]);
		for (int i = 0; i < 1000 && stat(ready, &st) < 0; i++)
			msleep(10);
		report("other node's socket connect", connect(c, (struct sockaddr *)&a, sizeof a));
		int d = socket(AF_UNIX, SOCK_DGRAM, 0);
		report("other node's socket sendto", sendto(d, "x", 1, 0, (struct sockaddr *)&a, sizeof a));
		report("other node's System V queue", msgget(0x10c5, 0));
		return 0;
	}
	return -1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: hostile MODE [ARG...]\n");
		return 2;
	}
	const char *mode = argv[1];
	int r = probes(mode, argc, argv);
	if (r >= 0)
		return r;
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
