/* bulk_recv PORT [READ]: accepts one connection, reads it until EOF in
 * reads of up to READ bytes (default 65536), checks that the byte at
 * stream offset k is k % 251 (see bulk_send) and prints "received N". */
#include "common.h"

int main(int argc, char **argv)
{
	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: bulk_recv PORT [READ]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	long rsize = argc == 3 ? atol(argv[2]) : 65536;
	if (rsize <= 0) {
		fprintf(stderr, "bad read size %s\n", argv[2]);
		return 2;
	}
	unsigned char *buf = malloc(rsize), *want = malloc(rsize + 251);
	for (long i = 0; i < rsize + 251; i++)
		want[i] = i % 251;
	int l = listen_on(argv[1]);
	int c = accept(l, NULL, NULL);
	if (c < 0)
		die("accept");
	long long got = 0;
	for (;;) {
		ssize_t n = read(c, buf, rsize);
		if (n < 0)
			die("read");
		if (n == 0)
			break;
		if (memcmp(buf, want + got % 251, n) != 0) {
			fprintf(stderr, "wrong bytes in %lld..%lld\n", got, got + n);
			return 1;
		}
		got += n;
	}
	close(c);
	printf("received %lld\n", got);
	return 0;
}
