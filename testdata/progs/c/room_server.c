/* room_server PORT N: a room clients enter and leave ("ENTER\n",
 * "EXIT\n", one connection each) from a single-threaded poll loop. Only
 * one client may be inside at once, but the server checks it too late: it
 * lets every client in, logs the broken invariant and carries on, so no
 * client ever sees it. It answers OK to an ENTER and BYE to an EXIT. After
 * N exits it says every visit is done and keeps serving. For the spec's
 * properties (testdata/specs/properties/). */
#include <poll.h>
#include <string.h>
#include "common.h"

int main(int argc, char **argv)
{
	struct pollfd fds[64];
	int nfds = 1, want, exits = 0, inside = 0, most = 0;
	if (argc != 3) {
		fprintf(stderr, "usage: room_server PORT N\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	want = atoi(argv[2]);
	fds[0].fd = listen_on(argv[1]);
	fds[0].events = POLLIN;
	printf("room open on port %s\n", argv[1]);
	for (;;) {
		if (poll(fds, nfds, -1) < 0)
			die("poll");
		for (int i = nfds - 1; i >= 1; i--) {
			char msg[256];
			if (!(fds[i].revents & (POLLIN | POLLHUP)))
				continue;
			ssize_t n = read(fds[i].fd, msg, sizeof msg - 1);
			if (n <= 0) {
				close(fds[i].fd);
				fds[i] = fds[--nfds];
				continue;
			}
			msg[n] = 0;
			for (char *line = strtok(msg, "\n"); line; line = strtok(NULL, "\n")) {
				if (strcmp(line, "ENTER") == 0) {
					inside++;
					if (inside > most)
						most = inside;
					if (inside > 1)
						printf("ERROR: invariant violated: %d clients inside the room\n", inside);
					else
						printf("client %d entered\n", exits + 1);
					write_all(fds[i].fd, "OK\n", 3);
				} else if (strcmp(line, "EXIT") == 0) {
					inside--;
					if (++exits == want)
						printf("all %d visits done (at most %d inside)\n", want, most);
					write_all(fds[i].fd, "BYE\n", 4);
				}
			}
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
}
