/*
 * relay PORT HOST PORT2: accepts one connection, reads one message (one
 * read, up to 255 bytes), forwards it as "relayed MESSAGE" to HOST:PORT2 in
 * one write, closes both and exits 0.
 */
#include "common.h"

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: relay PORT HOST PORT2\n");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	int l = listen_on(argv[1]);
	int c = accept(l, NULL, NULL);
	if (c < 0)
		die("accept");
	char buf[256], out[300];
	ssize_t n = read(c, buf, sizeof buf - 1);
	if (n <= 0)
		die("read");
	buf[n] = 0;
	printf("got %s\n", buf);
	int o = connect_to(argv[2], argv[3]);
	int m = snprintf(out, sizeof out, "relayed %s", buf);
	write_all(o, out, m);
	close(o);
	close(c);
	return 0;
}
