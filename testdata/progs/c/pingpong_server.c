/* pingpong_server PORT: echo server, one connection at a time. */
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
		while ((n = read(c, buf, sizeof buf)) > 0)
			write_all(c, buf, n);
		close(c);
	}
}
