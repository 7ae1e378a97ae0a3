/* sendmmsg: a TCP connection written with send, then sendmmsg, then send
 * again (issue 45, item 8).
 *   sendmmsg serve PORT        print what one connection brought
 *   sendmmsg send HOST PORT    send "a1|"; sendmmsg "m1|", "m2|" (in two
 *                              pieces) and "m3|"; send "z|"; print what
 *                              sendmmsg returned and each msg_len
 * Each message must be a delivery of its own, in order after "a1|". */
#include "probe.h"
#include <sys/uio.h>

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "serve")) {
		serve_tcp(argv[2]);
		return 0;
	}
	if (argc != 4 || strcmp(argv[1], "send"))
		return 2;
	int s = connect_tcp(argv[2], argv[3]);
	if (send(s, "a1|", 3, 0) != 3)
		die("send");
	struct iovec iov[4] = { { "m1|", 3 }, { "m", 1 }, { "2|", 2 }, { "m3|", 3 } };
	struct mmsghdr m[3] = {
		{ .msg_hdr = { .msg_iov = &iov[0], .msg_iovlen = 1 } },
		{ .msg_hdr = { .msg_iov = &iov[1], .msg_iovlen = 2 } },
		{ .msg_hdr = { .msg_iov = &iov[3], .msg_iovlen = 1 } },
	};
	int n = sendmmsg(s, m, 3, 0);
	if (n < 0)
		printf("sendmmsg: %s\n", strerror(errno));
	else
		printf("sendmmsg: %d messages of %u, %u, %u bytes\n", n, m[0].msg_len, m[1].msg_len, m[2].msg_len);
	if (send(s, "z|", 2, 0) != 2)
		die("send");
	close(s);
	return 0;
}
