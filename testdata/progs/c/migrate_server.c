/* migrate_server PORT: handoff_server's protocol with four clients
 * (handoff_client, ids 1-4), whose ids the server logs by name (alpha,
 * bravo, charlie, delta), and no abort. Every answer is "OK" and the last
 * one "DONE": no message says what the server decided. It logs the order
 * in which the hellos came, and "migration started" when it was the exact
 * reverse of the ids' (delta first, alpha last); then the order of the
 * commits, and after a migration "migration finished" when they came in
 * the ids' order, "migration aborted" otherwise. The names make every
 * order a log template of its own: almost every trial shows a feature
 * no earlier one did, so novelty points nowhere in particular, while the
 * one word "migration" marks the trials halfway to the finished
 * migration. For the test of sometimes properties as explore's goals
 * (engine/explore_test.go, testdata/specs/explore/migrate.yaml). One
 * message is handled per poll, from the lowest connection that has one. */
#include <poll.h>
#include <string.h>
#include "common.h"

#define N 4

static const char *names[N + 1] = { "?", "alpha", "bravo", "charlie", "delta" };

/* order appends the name of client id to the list in buf. */
static void order(char *buf, size_t size, int id)
{
	size_t len = strlen(buf);
	snprintf(buf + len, size - len, " %s", names[id >= 1 && id <= N ? id : 0]);
}

int main(int argc, char **argv)
{
	struct pollfd fds[16];
	char hellos_in[128] = "", commits_in[128] = "";
	int nfds = 1, hellos = 0, commits = 0, reverse = 1, inorder = 1;
	if (argc != 2) {
		fprintf(stderr, "usage: migrate_server PORT\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	fds[0].fd = listen_on(argv[1]);
	fds[0].events = POLLIN;
	printf("migrate of %d clients on port %s\n", N, argv[1]);
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
				reverse = reverse && id == N - hellos;
				order(hellos_in, sizeof hellos_in, id);
				if (++hellos == N) {
					printf("hellos came from%s%s\n", hellos_in, reverse ? "; migration started" : "");
					for (int j = 1; j < nfds; j++)
						write_all(fds[j].fd, "OK\n", 3);
				}
			} else if (sscanf(msg, "COMMIT %d", &id) == 1) {
				inorder = inorder && id == commits + 1;
				order(commits_in, sizeof commits_in, id);
				if (++commits == N) {
					printf("commits came from%s%s\n", commits_in,
					       !reverse ? "" : inorder ? "; migration finished" : "; migration aborted");
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
