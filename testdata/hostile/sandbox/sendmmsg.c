/* sendmmsg: a TCP connection written with send, then sendmmsg, then send
 * again (issue 45, item 8).
 *   sendmmsg serve PORT        print what one connection brought
 *   sendmmsg send HOST PORT    send "a1|"; sendmmsg "m1|", "m2|" (in two
 *                              pieces) and "m3|"; send "z|"; print what
 *                              sendmmsg returned and each msg_len
 *   sendmmsg udpserve PORT     print the five datagrams it receives, sorted
 *   sendmmsg udpsend HOST PORT sendto "u1"; sendmmsg "u2", "u3", "u4",
 *                              each with the address; sendto "u5"
 * Each message must be a delivery of its own, over TCP in order after
 * "a1|". */
#include "probe.h"
#include <sys/uio.h>

static int cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void udp_serve(const char *port)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(port)) };
	if (bind(s, (struct sockaddr *)&a, sizeof a) < 0)
		die("bind");
	char got[5][8] = { "" };
	for (int i = 0; i < 5; i++) {
		ssize_t n = recv(s, got[i], sizeof got[i] - 1, 0);
		got[i][n > 0 ? n : 0] = 0;
	}
	qsort(got, 5, sizeof got[0], cmp);
	printf("datagrams: %s %s %s %s %s\n", got[0], got[1], got[2], got[3], got[4]);
}

static void udp_send(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_DGRAM }, *res;
	if (getaddrinfo(host, port, &hints, &res))
		die("getaddrinfo");
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	sendto(s, "u1", 2, 0, res->ai_addr, res->ai_addrlen);
	struct iovec iov[3] = { { "u2", 2 }, { "u3", 2 }, { "u4", 2 } };
	struct mmsghdr m[3];
	memset(m, 0, sizeof m);
	for (int i = 0; i < 3; i++)
		m[i].msg_hdr = (struct msghdr){ .msg_name = res->ai_addr, .msg_namelen = res->ai_addrlen, .msg_iov = &iov[i], .msg_iovlen = 1 };
	int n = sendmmsg(s, m, 3, 0);
	if (n < 0)
		printf("udp sendmmsg: %s\n", strerror(errno));
	else
		printf("udp sendmmsg: %d messages of %u, %u, %u bytes\n", n, m[0].msg_len, m[1].msg_len, m[2].msg_len);
	sendto(s, "u5", 2, 0, res->ai_addr, res->ai_addrlen);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "serve")) {
		serve_tcp(argv[2]);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "udpserve")) {
		udp_serve(argv[2]);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "udpsend")) {
		udp_send(argv[2], argv[3]);
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
