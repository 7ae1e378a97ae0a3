/* bulk_send HOST PORT MB [WRITE]: connects, writes MB MiB in writes of
 * WRITE bytes (default 65536), closes and prints "sent N". The byte at
 * stream offset k is k % 251, which bulk_recv checks. */
#include "common.h"

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: bulk_send HOST PORT MB [WRITE]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	long long total = atoll(argv[3]) << 20;
	long wsize = argc == 5 ? atol(argv[4]) : 65536;
	if (wsize <= 0) {
		fprintf(stderr, "bad write size %s\n", argv[4]);
		return 2;
	}
	/* The pattern from every starting phase: buf + (off % 251). */
	unsigned char *buf = malloc(wsize + 251);
	for (long i = 0; i < wsize + 251; i++)
		buf[i] = i % 251;
	int fd = connect_to(argv[1], argv[2]);
	long long off = 0;
	while (off < total) {
		long n = total - off < wsize ? total - off : wsize;
		ssize_t w = write(fd, buf + off % 251, n);
		if (w < 0)
			die("write");
		off += w;
	}
	if (close(fd) < 0)
		die("close");
	printf("sent %lld\n", off);
	return 0;
}
