/* unixtimeout: receives on a node's own Unix socket pair with a receive
 * timeout (SO_RCVTIMEO), through recv, read and recvmsg (issue 45, item
 * 7). Each waits 30 s for bytes that never come, then once more for bytes
 * a child writes after a 1 s sleep; prints "CALL: RESULT after Ns", N on
 * the monotonic clock. */
#include "probe.h"
#include <sys/uio.h>
#include <sys/wait.h>

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long receive(const char *how, int fd)
{
	char buf[16];
	if (!strcmp(how, "read"))
		return read(fd, buf, sizeof buf);
	if (!strcmp(how, "recvmsg")) {
		struct iovec iov = { buf, sizeof buf };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
		return recvmsg(fd, &m, 0);
	}
	return recv(fd, buf, sizeof buf, 0);
}

static void timed(const char *how, int type)
{
	int sv[2];
	struct timeval tv = { 30, 0 };
	if (socketpair(AF_UNIX, type, 0, sv) < 0 || setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0)
		die("socketpair");
	double t0 = mono();
	long r = receive(how, sv[0]);
	printf("%s: %s after %.0fs\n", how, r < 0 ? strerror(errno) : "data", mono() - t0);
	pid_t kid = fork();
	if (kid == 0) {
		msleep(1000);
		if (write(sv[1], "late", 4) != 4)
			_exit(1);
		_exit(0);
	}
	t0 = mono();
	r = receive(how, sv[0]);
	printf("%s with a writer: %ld bytes after %.0fs\n", how, r, mono() - t0);
	waitpid(kid, NULL, 0);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	timed("recv", SOCK_STREAM);
	timed("read", SOCK_DGRAM);
	timed("recvmsg", SOCK_SEQPACKET);
	return 0;
}
