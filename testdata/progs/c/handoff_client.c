/* handoff_client HOST PORT ID [MS]: say "HELLO ID", wait for the server's
 * answer (OK or MIGRATE), think MS milliseconds (0 by default), say
 * "COMMIT ID", wait for "DONE". */
#include "common.h"

static void answer(int fd, char *buf, size_t size)
{
	size_t got = 0;
	while (got == 0 || buf[got - 1] != '\n') {
		ssize_t r = read(fd, buf + got, size - 1 - got);
		if (r <= 0)
			die("read");
		got += r;
	}
	buf[got] = 0;
}

int main(int argc, char **argv)
{
	char buf[64];
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: handoff_client HOST PORT ID [MS]\n");
		return 2;
	}
	int fd = connect_to(argv[1], argv[2]);
	int n = snprintf(buf, sizeof buf, "HELLO %s\n", argv[3]);
	write_all(fd, buf, n);
	answer(fd, buf, sizeof buf);
	printf("%s", buf);
	if (argc == 5)
		msleep(atol(argv[4]));
	n = snprintf(buf, sizeof buf, "COMMIT %s\n", argv[3]);
	write_all(fd, buf, n);
	answer(fd, buf, sizeof buf);
	close(fd);
	return 0;
}
