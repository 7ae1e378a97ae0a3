/* outlast: a primary and a backup over UDP, with a bug that needs an
 * outage longer than the backup's failure detector.
 *
 *   outlast primary PORT BACKUP   every 50 ms "HB" to the backup.
 *   outlast backup PORT MS        takes over after MS ms without a
 *                                 heartbeat ("taking over"); a heartbeat
 *                                 heard after that is a second primary:
 *                                 it says "two primaries" and exits 1.
 *   outlast client MS             exits 0 after MS ms (the trial's end).
 *
 * The bug: the primary is never told it was replaced, so a cut of it that
 * outlasts the detector leaves two primaries at the heal. A shorter cut
 * (most of those a plan drawing up to just past the detector draws) does
 * nothing. */
#include "common.h"
#include "udp.h"

static __attribute__((noreturn)) void primary(char **argv)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket");
	struct sockaddr_in b = resolve(argv[1], argv[0]), from;
	char buf[64];
	long next = now_ms();
	for (;;) {
		if (now_ms() >= next) {
			if (sendto(fd, "HB", 2, 0, (const struct sockaddr *)&b, sizeof b) < 0)
				die("sendto");
			next += 50;
		}
		hear(fd, next - now_ms(), buf, sizeof buf, &from);
	}
}

static int backup(char **argv)
{
	int fd = bound_udp(argv[0]);
	long ms = atol(argv[1]), last = now_ms();
	int primary = 0;
	char buf[64];
	struct sockaddr_in from;
	for (;;) {
		if (!primary && now_ms() - last >= ms) {
			printf("taking over after %ld ms without a heartbeat\n", now_ms() - last);
			primary = 1;
		}
		if (!hear(fd, primary ? 1000 : last + ms - now_ms(), buf, sizeof buf, &from))
			continue;
		if (strcmp(buf, "HB") != 0)
			continue;
		if (primary) {
			printf("two primaries: a heartbeat after the takeover\n");
			return 1;
		}
		last = now_ms();
	}
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && strcmp(argv[1], "primary") == 0)
		primary(argv + 2);
	if (argc == 4 && strcmp(argv[1], "backup") == 0)
		return backup(argv + 2);
	if (argc == 3 && strcmp(argv[1], "client") == 0) {
		struct timespec ts = { .tv_sec = atol(argv[2]) / 1000, .tv_nsec = atol(argv[2]) % 1000 * 1000000 };
		nanosleep(&ts, NULL);
		return 0;
	}
	fprintf(stderr, "usage: outlast primary PORT BACKUP | backup PORT MS | client MS\n");
	return 2;
}
