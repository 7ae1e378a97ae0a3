/* order_server PORT N: print one message per connection, in arrival
 * order, from a single-threaded poll loop; exit after N messages. */
#include <poll.h>
#include "common.h"

int main(int argc, char **argv)
{
	struct pollfd fds[64];
	int nfds = 1, want, got = 0;
	if (argc != 3) {
		fprintf(stderr, "usage: order_server PORT N\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	want = atoi(argv[2]);
	fds[0].fd = listen_on(argv[1]);
	fds[0].events = POLLIN;
	while (got < want) {
		if (poll(fds, nfds, -1) < 0)
			die("poll");
		for (int i = nfds - 1; i >= 1; i--) {
			char msg[256];
			if (!(fds[i].revents & (POLLIN | POLLHUP)))
				continue;
			ssize_t n = read(fds[i].fd, msg, sizeof msg - 1);
			if (n > 0) {
				msg[n] = 0;
				printf("got %s\n", msg);
				got++;
			}
			close(fds[i].fd);
			fds[i] = fds[--nfds];
		}
		if ((fds[0].revents & POLLIN) && nfds < 64) {
			int c = accept(fds[0].fd, NULL, NULL);
			if (c < 0)
				die("accept");
			fds[nfds].fd = c;
			fds[nfds].events = POLLIN;
			fds[nfds].revents = 0;
			nfds++;
		}
	}
	return 0;
}
