/* sockflags_client HOST PORT: reads from a connection with nothing to read
 * while its blocking mode and receive timeout change between the reads
 * (fcntl O_NONBLOCK, ioctl FIONBIO, SO_RCVTIMEO), and prints how each
 * ended and after how many ms of CLOCK_MONOTONIC; then reads with a
 * low-water mark of 2 bytes (SO_RCVLOWAT) after two 1-byte sends. */
#include <fcntl.h>
#include <sys/ioctl.h>
#include "common.h"

static long long now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

static void try_read(int fd, const char *how)
{
	char b[8];
	long long t0 = now_ms();
	ssize_t n = read(fd, b, sizeof b);
	const char *r = n > 0 ? "data" : n == 0 ? "eof" : errno == EAGAIN ? "EAGAIN" : strerror(errno);
	printf("%s %s %lldms\n", how, r, now_ms() - t0);
}

/* echo sends one byte and reads its echo. */
static void echo(int fd)
{
	if (write(fd, "x", 1) != 1)
		die("write");
	try_read(fd, "blocking");
}

static void set_timeout(int fd, long ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0)
		die("setsockopt");
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: sockflags_client HOST PORT\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	int fd = connect_to(argv[1], argv[2]), on = 1, off = 0;
	/* Between the changes a blocking read of an echo, so that lockstep has
	 * seen the socket's settings again before each change. */
	echo(fd);
	int fl = fcntl(fd, F_GETFL);
	if (fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		die("fcntl");
	try_read(fd, "fcntl");
	if (fcntl(fd, F_SETFL, fl) < 0)
		die("fcntl");
	echo(fd);
	if (ioctl(fd, FIONBIO, &on) < 0)
		die("ioctl");
	try_read(fd, "fionbio");
	if (ioctl(fd, FIONBIO, &off) < 0)
		die("ioctl");
	echo(fd);
	set_timeout(fd, 200); /* whole jiffies at HZ 100, 250, 300 and 1000 */
	try_read(fd, "rcvtimeo");
	set_timeout(fd, 0);
	echo(fd);
	/* With a low-water mark of 2 a read waits for both echoes. */
	int two = 2;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &two, sizeof two) < 0)
		die("setsockopt");
	if (write(fd, "a", 1) != 1 || write(fd, "b", 1) != 1)
		die("write");
	try_read(fd, "rcvlowat");
	return 0;
}
