/* registry: probe-then-register at start-up, a race only a delay of a
 * start-up sleep reaches (issue 34).
 *   registry server PORT       answers "GET" with "YES" once a "REG" came,
 *                              "NO" before; one connection at a time
 *   registry service HOST PORT MS   sleeps MS ms (its start-up work), then
 *                              registers and exits
 *   registry client HOST PORT MS    sleeps MS ms, then asks once: "NO" is
 *                              the bug (it trusts the service to be up by
 *                              then and does not retry), exit 1
 * With the service's sleep shorter than the client's, the registration
 * always comes first unless the service is held past the client's wake. */
#include "common.h"

static char line[64];

static int read_line(int fd)
{
	size_t n = 0;
	while (n < sizeof line - 1) {
		ssize_t r = read(fd, line + n, 1);
		if (r <= 0)
			return -1;
		if (line[n] == '\n')
			break;
		n++;
	}
	line[n] = 0;
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && strcmp(argv[1], "server") == 0) {
		int l = listen_on(argv[2]), registered = 0;
		for (;;) {
			int c = accept(l, NULL, NULL);
			if (c < 0)
				die("accept");
			while (read_line(c) == 0) {
				printf("server: %s\n", line);
				if (strcmp(line, "REG") == 0)
					registered = 1;
				else if (strcmp(line, "GET") == 0)
					write_all(c, registered ? "YES\n" : "NO\n", registered ? 4 : 3);
			}
			close(c);
		}
	}
	if (argc == 5 && strcmp(argv[1], "service") == 0) {
		msleep(atol(argv[4]));
		int fd = connect_to(argv[2], argv[3]);
		write_all(fd, "REG\n", 4);
		close(fd);
		printf("service: registered\n");
		return 0;
	}
	if (argc == 5 && strcmp(argv[1], "client") == 0) {
		msleep(atol(argv[4]));
		int fd = connect_to(argv[2], argv[3]);
		write_all(fd, "GET\n", 4);
		if (read_line(fd) < 0)
			die("read");
		printf("client: %s\n", line);
		close(fd);
		return strcmp(line, "YES") == 0 ? 0 : 1;
	}
	fprintf(stderr, "usage: registry server PORT | registry service|client HOST PORT MS\n");
	return 2;
}
