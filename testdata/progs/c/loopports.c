/* loopports N: listens on the loopback at a port the kernel picks, connects
 * to itself N times and prints each connection's local port, a line each:
 * connections within a node, which are no op of lockstep's. */
#include "common.h"

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3;
	int l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0)
		die("socket");
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	if (bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 16) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &len) < 0)
		die("listen");
	for (int i = 0; i < n; i++) {
		int c = socket(AF_INET, SOCK_STREAM, 0);
		if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) < 0)
			die("connect");
		int s = accept(l, NULL, NULL);
		if (s < 0)
			die("accept");
		struct sockaddr_in me;
		socklen_t ml = sizeof me;
		if (getsockname(c, (struct sockaddr *)&me, &ml) < 0)
			die("getsockname");
		printf("local port %d\n", ntohs(me.sin_port));
		fflush(stdout);
		close(s);
		close(c);
	}
	return 0;
}
