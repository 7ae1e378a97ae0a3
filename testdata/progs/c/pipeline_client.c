/* pipeline_client HOST PORT ROUNDS DEPTH: for ROUNDS rounds, write DEPTH
 * commands "GET K" in DEPTH consecutive writes without reading, then read
 * the DEPTH answers "+K" three bytes at a time (reads split and join the
 * server's writes) and check them, as a Redis client pipelining its
 * commands does. Exits 0 when every answer came, in order. */
#include "common.h"

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: pipeline_client HOST PORT ROUNDS DEPTH\n");
		return 2;
	}
	int fd = connect_to(argv[1], argv[2]);
	int rounds = atoi(argv[3]), depth = atoi(argv[4]);
	char cmd[64], want[64], in[256];
	size_t n = 0; /* bytes read and not yet checked */
	for (int r = 0; r < rounds; r++) {
		for (int d = 0; d < depth; d++) {
			int k = snprintf(cmd, sizeof cmd, "GET key%d.%d\n", r, d);
			write_all(fd, cmd, k);
		}
		for (int d = 0; d < depth; d++) {
			size_t k = snprintf(want, sizeof want, "+key%d.%d\n", r, d);
			char *nl;
			while (!(nl = memchr(in, '\n', n))) {
				if (n + 3 > sizeof in)
					return fprintf(stderr, "answer too long\n"), 1;
				ssize_t m = read(fd, in + n, 3);
				if (m <= 0)
					return fprintf(stderr, "read: %s\n", m ? strerror(errno) : "EOF"), 1;
				n += m;
			}
			size_t got = nl + 1 - in;
			if (got != k || memcmp(in, want, k) != 0)
				return fprintf(stderr, "answer %.*s, want %s", (int)got, in, want), 1;
			memmove(in, in + got, n - got);
			n -= got;
		}
	}
	close(fd);
	return n == 0 ? 0 : (fprintf(stderr, "%zu bytes more than answered\n", n), 1);
}
