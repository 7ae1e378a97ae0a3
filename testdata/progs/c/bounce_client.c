/* bounce_client HOST PORT: sends 8 bytes to an echo server and sends back
 * whatever comes back, forever, with no timer: a livelock (messages flow,
 * virtual time never moves, the client never finishes). */
#include "common.h"

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: bounce_client HOST PORT\n");
		return 2;
	}
	char buf[8];
	memset(buf, 'b', sizeof buf);
	int fd = connect_to(argv[1], argv[2]);
	write_all(fd, buf, sizeof buf);
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n <= 0) {
			fprintf(stderr, "read: %s\n", n < 0 ? strerror(errno) : "connection closed");
			return 1;
		}
		write_all(fd, buf, n);
	}
}
