/* pipeline_server PORT BUF [read|readv|recvmsg|waitall]: accept one connection and
 * answer every line "GET K" with "+K", reading at most BUF bytes at a time
 * (so reads split and join the client's writes) with read, readv (two
 * iovecs), recvmsg or recv with MSG_WAITALL, and writing each answer on its own (so a read holding
 * several lines answers them in consecutive writes). Exits 0 at the
 * client's EOF. */
#include <sys/uio.h>
#include "common.h"

static ssize_t read_some(int fd, char *buf, int n, const char *how)
{
	if (strcmp(how, "read") == 0)
		return read(fd, buf, n);
	if (strcmp(how, "waitall") == 0)
		return recv(fd, buf, n, MSG_WAITALL);
	struct iovec iov[2] = { { buf, n / 2 }, { buf + n / 2, n - n / 2 } };
	if (strcmp(how, "readv") == 0)
		return readv(fd, iov, 2);
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };
	return recvmsg(fd, &m, 0);
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: pipeline_server PORT BUF [read|readv|recvmsg|waitall]\n");
		return 2;
	}
	const char *how = argc == 4 ? argv[3] : "read";
	int lfd = listen_on(argv[1]), bufsz = atoi(argv[2]);
	int fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		die("accept");
	char line[256], buf[256];
	size_t n = 0;
	if (bufsz < 2 || bufsz > (int)sizeof buf) {
		fprintf(stderr, "pipeline_server: BUF must be 2..%zu\n", sizeof buf);
		return 2;
	}
	for (;;) {
		ssize_t r = read_some(fd, buf, bufsz, how);
		if (r < 0)
			die("read");
		if (r == 0)
			break;
		for (ssize_t i = 0; i < r; i++) {
			if (n == sizeof line)
				return fprintf(stderr, "line too long\n"), 1;
			line[n++] = buf[i];
			if (buf[i] != '\n')
				continue;
			if (n < 5 || memcmp(line, "GET ", 4) != 0)
				return fprintf(stderr, "bad command %.*s\n", (int)n, line), 1;
			line[3] = '+';
			write_all(fd, line + 3, n - 3);
			n = 0;
		}
	}
	return n == 0 ? 0 : (fprintf(stderr, "partial command at EOF\n"), 1);
}
