/* pingpong_server PORT: echo server, one connection at a time; a broken
 * connection (reset, aborted) is reported and the next one accepted. */
#include "common.h"

int main(int argc, char **argv)
{
	char buf[4096];
	if (argc != 2) {
		fprintf(stderr, "usage: pingpong_server PORT\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	int l = listen_on(argv[1]);
	for (;;) {
		int c = accept(l, NULL, NULL);
		if (c < 0)
			die("accept");
		ssize_t n;
		int broken = 0;
		while (!broken && (n = read(c, buf, sizeof buf)) > 0) {
			for (ssize_t off = 0; off < n;) {
				ssize_t w = write(c, buf + off, n - off);
				if (w < 0) {
					fprintf(stderr, "write: %s\n", strerror(errno));
					broken = 1;
					break;
				}
				off += w;
			}
		}
		if (!broken && n < 0)
			fprintf(stderr, "read: %s\n", strerror(errno));
		close(c);
	}
}
