/* connect_probe PORT ADDR...: one blocking connect to each ADDR:PORT, in
 * turn; prints "ADDR ok" or "ADDR error" with the virtual seconds it took. */
#include "common.h"

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 2; i < argc; i++) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[1])) };
		if (inet_pton(AF_INET, argv[i], &sa.sin_addr) != 1) {
			fprintf(stderr, "bad address %s\n", argv[i]);
			return 2;
		}
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			die("socket");
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		int r = connect(fd, (struct sockaddr *)&sa, sizeof sa);
		int e = errno;
		clock_gettime(CLOCK_MONOTONIC, &b);
		long ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
		printf("%s %s after %ldms\n", argv[i], r == 0 ? "ok" : strerror(e), ms);
		close(fd);
	}
	return 0;
}
