/* unixlink: Unix-socket connects and datagrams that name a socket through
 * a magic link, a relative path or a symlink (issue 45, item 2).
 *   unixlink serve DIR          bind DIR/sock, connect to it by its path
 *                               and through /proc/self/fd; then DIR/ready;
 *                               then print every stranger it accepts
 *   unixlink probe DIR HOSTDIR  once DIR/ready exists: its own sockets
 *                               (in /tmp, abstract) by every way of naming
 *                               them; the host's HOSTDIR/stream.sock and
 *                               HOSTDIR/dgram.sock and the other node's
 *                               DIR/sock by path, /proc/self/fd/N, /dev/fd/N,
 *                               a relative path and a symlink
 * Each connect that succeeds to a socket not the node's sends "leak". */
#include "probe.h"
#include <poll.h>
#include <stddef.h>
#include <sys/uio.h>
#include <sys/un.h>

static socklen_t addr_of(struct sockaddr_un *a, const char *path)
{
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path, sizeof a->sun_path, "%s", path);
	return sizeof *a;
}

/* try connects a new socket of type to path and reports it; a datagram
 * socket sends its bytes with sendto instead, a SOCK_DGRAM | MMSG one with
 * a sendmmsg of two messages. */
#define MMSG 0x40000
static void try(const char *what, int type, const char *path)
{
	struct sockaddr_un a;
	socklen_t l = addr_of(&a, path);
	int s = socket(AF_UNIX, type & ~MMSG, 0);
	long r;
	if (type & MMSG) {
		struct iovec iov = { "leak", 4 };
		struct mmsghdr m[2];
		memset(m, 0, sizeof m);
		for (int i = 0; i < 2; i++)
			m[i].msg_hdr = (struct msghdr){ .msg_name = &a, .msg_namelen = l, .msg_iov = &iov, .msg_iovlen = 1 };
		r = sendmmsg(s, m, 2, 0);
	} else if (type == SOCK_DGRAM)
		r = sendto(s, "leak", 4, 0, (struct sockaddr *)&a, l);
	else if ((r = connect(s, (struct sockaddr *)&a, l)) == 0)
		r = write(s, "leak", 4);
	report(what, r);
	close(s);
}

/* through names the file at path the ways a program can without its
 * path: /proc/self/fd/N and /dev/fd/N of an O_PATH descriptor. */
static void through(const char *what, int type, const char *path)
{
	char name[200], link[64];
	int fd = open(path, O_PATH);
	if (fd < 0) {
		printf("%s: open O_PATH: %s\n", what, strerror(errno));
		return;
	}
	snprintf(name, sizeof name, "%s through /proc/self/fd", what);
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	try(name, type, link);
	snprintf(name, sizeof name, "%s through /dev/fd", what);
	snprintf(link, sizeof link, "/dev/fd/%d", fd);
	try(name, type, link);
	close(fd);
}

static int listen_at(const char *path)
{
	struct sockaddr_un a;
	socklen_t l = addr_of(&a, path);
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	unlink(path);
	if (bind(s, (struct sockaddr *)&a, l) < 0 || listen(s, 16) < 0)
		die("bind");
	return s;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	char path[300], other[300];
	if (argc == 3 && !strcmp(argv[1], "serve")) {
		snprintf(path, sizeof path, "%s/sock", argv[2]);
		int l = listen_at(path);
		try("own socket", SOCK_STREAM, path);
		through("own socket", SOCK_STREAM, path);
		struct pollfd pf = { l, POLLIN, 0 };
		while (poll(&pf, 1, 0) > 0)
			close(accept(l, NULL, NULL));
		snprintf(path, sizeof path, "%s/ready", argv[2]);
		close(open(path, O_WRONLY | O_CREAT, 0600));
		for (;;) {
			int c = accept(l, NULL, NULL);
			char buf[16] = "";
			if (c >= 0 && read(c, buf, sizeof buf - 1) >= 0)
				printf("accepted a stranger: %s\n", buf);
			close(c);
		}
	}
	if (argc != 4 || strcmp(argv[1], "probe"))
		return 2;
	snprintf(path, sizeof path, "%s/ready", argv[2]);
	wait_for(path);
	/* The node's own sockets, each way of naming them. */
	int l = listen_at("/tmp/own.sock");
	try("own socket in /tmp", SOCK_STREAM, "/tmp/own.sock");
	through("own socket in /tmp", SOCK_STREAM, "/tmp/own.sock");
	if (chdir("/tmp") == 0)
		try("own socket by a relative path", SOCK_STREAM, "own.sock");
	unlink("/tmp/ownlink");
	if (symlink("/tmp/own.sock", "/tmp/ownlink") == 0)
		try("own socket through a symlink", SOCK_STREAM, "/tmp/ownlink");
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	memcpy(a.sun_path, "\0lockstep-own", 13);
	int al = socket(AF_UNIX, SOCK_STREAM, 0), ac = socket(AF_UNIX, SOCK_STREAM, 0);
	socklen_t alen = offsetof(struct sockaddr_un, sun_path) + 13;
	if (bind(al, (struct sockaddr *)&a, alen) < 0 || listen(al, 1) < 0)
		die("abstract bind");
	report("own abstract socket", connect(ac, (struct sockaddr *)&a, alen));
	(void)l;
	/* The host's sockets. */
	char hs[300], hd[300];
	snprintf(hs, sizeof hs, "%s/stream.sock", argv[3]);
	snprintf(hd, sizeof hd, "%s/dgram.sock", argv[3]);
	try("host socket", SOCK_STREAM, hs);
	through("host socket", SOCK_STREAM, hs);
	try("host datagram socket", SOCK_DGRAM, hd);
	through("host datagram socket", SOCK_DGRAM, hd);
	through("host datagram socket by sendmmsg", SOCK_DGRAM | MMSG, hd);
	if (chdir(argv[3]) == 0)
		try("host socket by a relative path", SOCK_STREAM, "stream.sock");
	unlink("/tmp/hostlink");
	if (symlink(hs, "/tmp/hostlink") == 0)
		try("host socket through a symlink", SOCK_STREAM, "/tmp/hostlink");
	/* The other node's. */
	snprintf(other, sizeof other, "%s/sock", argv[2]);
	try("other node's socket", SOCK_STREAM, other);
	through("other node's socket", SOCK_STREAM, other);
	return 0;
}
