/* pingpong_client HOST PORT ROUNDS SIZE: ROUNDS round trips of SIZE bytes. */
#include "common.h"

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: pingpong_client HOST PORT ROUNDS SIZE\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	long rounds = atol(argv[3]), size = atol(argv[4]);
	char *buf = malloc(size);
	memset(buf, 'x', size);
	int fd = connect_to(argv[1], argv[2]);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	for (long r = 0; r < rounds; r++) {
		write_all(fd, buf, size);
		for (long got = 0; got < size;) {
			ssize_t n = read(fd, buf + got, size - got);
			if (n < 0) {
				fprintf(stderr, "round %ld: read: %s\n", r, strerror(errno));
				return 1;
			}
			if (n == 0) {
				fprintf(stderr, "round %ld: connection closed\n", r);
				return 1;
			}
			got += n;
		}
	}
	printf("done %ld\n", rounds);
	close(fd);
	return 0;
}
