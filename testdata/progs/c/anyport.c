/* anyport serve FILE: listens on a port the kernel picks (a bind to port
 * 0, as RabbitMQ's nodes and many services listen), writes it to FILE, and
 * echoes one line to each connection.
 * anyport dial HOST FILE: waits for FILE (every 10 ms, 500 times at
 * most), connects to HOST at the port it names, sends a line and prints
 * the port and the echo. */
#include "common.h"

static __attribute__((noreturn)) void serve(const char *file)
{
	int l = listen_on("0");
	struct sockaddr_in a;
	socklen_t n = sizeof a;
	if (getsockname(l, (struct sockaddr *)&a, &n) < 0)
		die("getsockname");
	char tmp[512];
	snprintf(tmp, sizeof tmp, "%s.tmp", file);
	FILE *f = fopen(tmp, "w");
	if (!f)
		die("fopen");
	fprintf(f, "%d\n", ntohs(a.sin_port));
	fclose(f);
	/* Renamed in place: the dialer never reads half a number. */
	if (rename(tmp, file) < 0)
		die("rename");
	printf("listening on port %d\n", ntohs(a.sin_port));
	for (;;) {
		int c = accept(l, NULL, NULL);
		if (c < 0)
			die("accept");
		char buf[128];
		ssize_t r = read(c, buf, sizeof buf);
		if (r > 0 && write(c, buf, r) != r)
			die("write");
		close(c);
	}
}

static int dial(const char *host, const char *file)
{
	char port[16] = "";
	for (int i = 0; i < 500 && !port[0]; i++) {
		FILE *f = fopen(file, "r");
		if (!f) {
			msleep(10);
			continue;
		}
		if (!fgets(port, sizeof port, f))
			port[0] = 0;
		fclose(f);
	}
	if (!port[0]) {
		fprintf(stderr, "no port in %s\n", file);
		return 1;
	}
	port[strcspn(port, "\n")] = 0;
	int fd = connect_to(host, port);
	if (write(fd, "hello\n", 6) != 6)
		die("write");
	char buf[128];
	ssize_t r = read(fd, buf, sizeof buf - 1);
	if (r <= 0)
		die("read");
	buf[r] = 0;
	printf("port %s echoed %s", port, buf);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "serve"))
		serve(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "dial"))
		return dial(argv[2], argv[3]);
	fprintf(stderr, "usage: anyport serve FILE | anyport dial HOST FILE\n");
	return 2;
}
