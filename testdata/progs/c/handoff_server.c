/* handoff_server PORT N: N clients each say "HELLO id", get an answer,
 * then say "COMMIT id" and get "DONE". The answer is "OK", except when the
 * hellos came in the exact reverse order of the ids (N first, 1 last): then
 * it is "MIGRATE", a message no other run sends. After a migration the
 * server must see the commits in any order but the ids' own: commits that
 * come 1, 2, ..., N then abort it. So the bug needs a rare order (a rare
 * message kind shows it was reached) and then another: for explore's
 * test (engine/explore_test.go). One message is handled per poll, from
 * the lowest connection that has one. */
#include <poll.h>
#include <string.h>
#include "common.h"

int main(int argc, char **argv)
{
	struct pollfd fds[16];
	int nfds = 1, n, hellos = 0, commits = 0, reverse = 1, inorder = 1;
	if (argc != 3) {
		fprintf(stderr, "usage: handoff_server PORT N\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	n = atoi(argv[2]);
	fds[0].fd = listen_on(argv[1]);
	fds[0].events = POLLIN;
	printf("handoff of %d clients on port %s\n", n, argv[1]);
	for (;;) {
		if (poll(fds, nfds, -1) < 0)
			die("poll");
		for (int i = 1; i < nfds; i++) {
			char msg[64];
			int id;
			if (!(fds[i].revents & (POLLIN | POLLHUP)))
				continue;
			ssize_t r = read(fds[i].fd, msg, sizeof msg - 1);
			if (r <= 0) {
				close(fds[i].fd);
				fds[i] = fds[--nfds];
				break;
			}
			msg[r] = 0;
			if (sscanf(msg, "HELLO %d", &id) == 1) {
				reverse = reverse && id == n - hellos;
				if (++hellos == n) {
					printf("all %d hellos in; %s\n", n, reverse ? "migrating" : "staying");
					for (int j = 1; j < nfds; j++)
						write_all(fds[j].fd, reverse ? "MIGRATE\n" : "OK\n", reverse ? 8 : 3);
				}
			} else if (sscanf(msg, "COMMIT %d", &id) == 1) {
				inorder = inorder && id == commits + 1;
				if (++commits == n) {
					if (reverse && inorder) {
						printf("handoff: commits in id order after a migration\n");
						abort();
					}
					printf("all %d commits in\n", n);
					for (int j = 1; j < nfds; j++)
						write_all(fds[j].fd, "DONE\n", 5);
				}
			}
			break;
		}
		if ((fds[0].revents & POLLIN) && nfds < 16) {
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
