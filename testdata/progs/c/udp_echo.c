/* udp_echo PORT: answers every datagram with the same bytes, forever. */
#include "common.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: udp_echo PORT\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[1])) };
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
		die("bind");
	char buf[2048];
	for (;;) {
		struct sockaddr_in from;
		socklen_t fl = sizeof from;
		ssize_t n = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
		if (n < 0)
			die("recvfrom");
		if (sendto(fd, buf, n, 0, (struct sockaddr *)&from, fl) < 0)
			die("sendto");
	}
}
