/* lease: a leader, two replicas and a reader over UDP, with a bug that
 * needs one kind of message held on one link while the others flow.
 *
 *   lease leader PORT R1 R2     every 20 ms "HB" to each replica, every
 *                               100 ms "APPEND v" (v = 1, 2, ...); v is
 *                               committed at the first "ACK v" (the leader
 *                               and one replica are a majority of three),
 *                               and "AT v" tells the watcher ("WATCH").
 *   lease replica PORT          keeps the highest v appended, acks each
 *                               APPEND; serves "READ v" with "VAL v x"
 *                               while it holds a lease (a HB in the last
 *                               50 ms), else "NOLEASE v".
 *   lease reader PORT LEADER R1 R2 N
 *                               watches the commits; 70 ms after one it
 *                               reads both replicas and checks that a
 *                               replica serving the read has the commit.
 *                               Exits 0 after N checks, 1 on a stale read.
 *
 *   lease leader PORT R1 R2 async
 *                               commits v as it sends "APPEND v", without
 *                               waiting for an ACK.
 *   lease reader PORT LEADER R1 R2 N quorum
 *                               fails only when replicas served the read
 *                               and none of them had the commit.
 *
 * The bug: a heartbeat renews the lease but says nothing of the commit,
 * so a replica whose APPENDs are held while its heartbeats flow serves a
 * stale value. Holding every message to it (a partition, a hold of the
 * connection direction) ends its lease within 50 ms, before any read can
 * follow a commit it missed (70 ms), and it refuses the read. With async
 * and quorum, the stale read needs the APPENDs to both replicas held while
 * their heartbeats flow: held to one, the other serves the commit. */
#include "common.h"
#include "udp.h"

static void say(int fd, const struct sockaddr_in *to, const char *fmt, long v, long x)
{
	char buf[64];
	int n = snprintf(buf, sizeof buf, fmt, v, x);
	if (sendto(fd, buf, n, 0, (const struct sockaddr *)to, sizeof *to) < 0)
		die("sendto");
}

static __attribute__((noreturn)) void leader(char **argv, int async)
{
	int fd = bound_udp(argv[0]);
	struct sockaddr_in r[2] = { resolve(argv[1], argv[0]), resolve(argv[2], argv[0]) }, watcher, from;
	int watched = 0;
	long v = 0, committed = 0, t0 = now_ms(), next_hb = t0 + 20, next_append = t0 + 100;
	char buf[128];
	for (;;) {
		long now = now_ms();
		if (now >= next_hb) {
			for (int i = 0; i < 2; i++)
				say(fd, &r[i], "HB", 0, 0);
			next_hb += 20;
		}
		if (now >= next_append) {
			v++;
			for (int i = 0; i < 2; i++)
				say(fd, &r[i], "APPEND %ld", v, 0);
			next_append += 100;
			if (async) {
				committed = v;
				if (watched)
					say(fd, &watcher, "AT %ld", committed, 0);
			}
		}
		long wait = (next_hb < next_append ? next_hb : next_append) - now_ms();
		if (!hear(fd, wait, buf, sizeof buf, &from))
			continue;
		long a;
		if (strcmp(buf, "WATCH") == 0) {
			watcher = from;
			watched = 1;
		} else if (sscanf(buf, "ACK %ld", &a) == 1 && a > committed) {
			committed = a;
			if (watched)
				say(fd, &watcher, "AT %ld", committed, 0);
		}
	}
}

static __attribute__((noreturn)) void replica(char **argv)
{
	int fd = bound_udp(argv[0]);
	long val = 0, lease = 0;
	char buf[128];
	struct sockaddr_in from;
	for (;;) {
		if (!hear(fd, 1000, buf, sizeof buf, &from))
			continue;
		long v;
		if (strcmp(buf, "HB") == 0) {
			lease = now_ms() + 50;
		} else if (sscanf(buf, "APPEND %ld", &v) == 1) {
			if (v > val)
				val = v;
			say(fd, &from, "ACK %ld", v, 0);
		} else if (sscanf(buf, "READ %ld", &v) == 1) {
			if (now_ms() < lease)
				say(fd, &from, "VAL %ld %ld", v, val);
			else
				say(fd, &from, "NOLEASE %ld", v, 0);
		}
	}
}

static int reader(char **argv, int quorum)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket");
	struct sockaddr_in lead = resolve(argv[1], argv[0]), from;
	struct sockaddr_in r[2] = { resolve(argv[2], argv[0]), resolve(argv[3], argv[0]) };
	const char *names[2] = { argv[2], argv[3] };
	int n = atoi(argv[4]), checks = 0;
	long pending = 0, read_at = 0, reading = 0, deadline = 0;
	int served = 0, fresh = 0; /* of the read in progress (quorum) */
	char buf[128];
	say(fd, &lead, "WATCH", 0, 0);
	while (checks < n) {
		long now = now_ms(), wait = 1000;
		if (reading)
			wait = deadline - now;
		else if (pending)
			wait = read_at - now;
		if (!reading && pending && wait <= 0) {
			/* Read back the commit from both replicas. */
			reading = pending;
			pending = 0;
			deadline = now + 100;
			served = fresh = 0;
			for (int i = 0; i < 2; i++)
				say(fd, &r[i], "READ %ld", reading, 0);
			continue;
		}
		if (reading && wait <= 0) {
			if (quorum && served && !fresh) {
				printf("stale read: %d replicas served %ld, none had it\n", served, reading);
				return 1;
			}
			printf("check %ld: done\n", reading);
			reading = 0;
			checks++;
			continue;
		}
		if (!hear(fd, wait, buf, sizeof buf, &from))
			continue;
		long v, x;
		if (sscanf(buf, "AT %ld", &v) == 1) {
			if (!pending && v > reading) {
				pending = v;
				read_at = now_ms() + 70;
			}
		} else if (quorum && sscanf(buf, "VAL %ld %ld", &v, &x) == 2 && v == reading) {
			served++;
			fresh += x >= v;
		} else if (sscanf(buf, "VAL %ld %ld", &v, &x) == 2 && v == reading && x < v) {
			int i = from.sin_addr.s_addr == r[1].sin_addr.s_addr;
			printf("stale read: %s served %ld after %ld was committed\n", names[i], x, v);
			return 1;
		}
	}
	printf("reader: %d checks\n", checks);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((argc == 5 || (argc == 6 && strcmp(argv[5], "async") == 0)) && strcmp(argv[1], "leader") == 0)
		leader(argv + 2, argc == 6);
	if (argc == 3 && strcmp(argv[1], "replica") == 0)
		replica(argv + 2);
	if ((argc == 7 || (argc == 8 && strcmp(argv[7], "quorum") == 0)) && strcmp(argv[1], "reader") == 0)
		return reader(argv + 2, argc == 8);
	fprintf(stderr, "usage: lease leader PORT R1 R2 [async] | replica PORT | reader PORT LEADER R1 R2 N [quorum]\n");
	return 2;
}
