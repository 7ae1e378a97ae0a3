/* pipeline_server PORT BUF: accept one connection and answer every line
 * "GET K" with "+K", reading at most BUF bytes at a time (so reads split
 * and join the client's writes) and writing each answer on its own (so a
 * read holding several lines answers them in consecutive writes). Exits 0
 * at the client's EOF. */
#include "common.h"

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: pipeline_server PORT BUF\n");
		return 2;
	}
	int lfd = listen_on(argv[1]), bufsz = atoi(argv[2]);
	int fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		die("accept");
	char line[256], buf[256];
	size_t n = 0;
	if (bufsz < 1 || bufsz > (int)sizeof buf) {
		fprintf(stderr, "pipeline_server: BUF must be 1..%zu\n", sizeof buf);
		return 2;
	}
	for (;;) {
		ssize_t r = read(fd, buf, bufsz);
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
