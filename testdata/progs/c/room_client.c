/* room_client HOST PORT MS: enter the room, stay MS milliseconds, leave;
 * each step waits for the server's answer. */
#include "common.h"

static void expect(int fd, const char *what)
{
	char buf[16];
	size_t got = 0, n = strlen(what);
	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);
		if (r <= 0)
			die("read");
		got += r;
	}
	if (memcmp(buf, what, n) != 0) {
		fprintf(stderr, "room_client: want %s", what);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: room_client HOST PORT MS\n");
		return 2;
	}
	int fd = connect_to(argv[1], argv[2]);
	write_all(fd, "ENTER\n", 6);
	expect(fd, "OK\n");
	msleep(atol(argv[3]));
	write_all(fd, "EXIT\n", 5);
	expect(fd, "BYE\n");
	close(fd);
	return 0;
}
