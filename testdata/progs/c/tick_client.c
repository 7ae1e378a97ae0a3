/* tick_client HOST PORT ROUNDS MS: ROUNDS round trips of 8 bytes, MS ms
 * apart (a sleep after each), so that the exchange spans virtual time: the
 * placement of faults and delays over their windows is measured on it. */
#include "common.h"

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: tick_client HOST PORT ROUNDS MS\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	long rounds = atol(argv[3]), ms = atol(argv[4]);
	char buf[8];
	int fd = connect_to(argv[1], argv[2]);
	for (long r = 0; r < rounds; r++) {
		memset(buf, 'x', sizeof buf);
		write_all(fd, buf, sizeof buf);
		for (size_t got = 0; got < sizeof buf;) {
			ssize_t n = read(fd, buf + got, sizeof buf - got);
			if (n <= 0) {
				fprintf(stderr, "round %ld: %s\n", r, n < 0 ? strerror(errno) : "connection closed");
				return 1;
			}
			got += n;
		}
		msleep(ms);
	}
	printf("done %ld\n", rounds);
	close(fd);
	return 0;
}
