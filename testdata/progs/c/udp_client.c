/* udp_client HOST PORT N: sends N datagrams "ping I" at once, then prints
 * the N answers in the order they come; exits 0 once all came, 3 if one
 * second passes without one (a lost datagram). */
#include "common.h"

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: udp_client HOST PORT N\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_DGRAM }, *res;
	if (getaddrinfo(argv[1], argv[2], &hints, &res)) {
		fprintf(stderr, "resolving %s\n", argv[1]);
		return 1;
	}
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct timeval tv = { 1, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	int n = atoi(argv[3]);
	char buf[64];
	for (int i = 0; i < n; i++) {
		int l = snprintf(buf, sizeof buf, "ping %d", i);
		if (sendto(fd, buf, l, 0, res->ai_addr, res->ai_addrlen) < 0)
			die("sendto");
	}
	for (int i = 0; i < n; i++) {
		ssize_t got = recv(fd, buf, sizeof buf - 1, 0);
		if (got < 0) {
			printf("lost after %d answers\n", i);
			return 3;
		}
		buf[got] = 0;
		printf("%s\n", buf);
	}
	return 0;
}
