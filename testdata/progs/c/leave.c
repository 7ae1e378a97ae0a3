/* leave: two storage members that send heartbeats over UDP, a router that
 * places writes on the first live member, and a client; the bug needs one
 * datagram of a kind sent once to be lost.
 *
 *   leave member PORT NAME ROUTER PEER [LEAVEAT]
 *                        every 20 ms "HB NAME" to the router and its peer;
 *                        "STORE k v" stores v under k and answers
 *                        "STORED k"; "FETCH k" answers "HAS k v" or
 *                        "NONE k". With LEAVEAT (ms after it starts) it
 *                        leaves then: "BYE NAME" once to the router and
 *                        its peer, no more heartbeats, and every later
 *                        STORE and FETCH ignored (it drains, and exits
 *                        600 ms later).
 *   leave router PORT M1 M2
 *                        counts a member live while its last "HB" is
 *                        under 150 ms old and it has not said "BYE".
 *                        "PUT k v" from the client: "STORE k v" to the
 *                        first live of M1, M2, and "OK k" to the client at
 *                        once. "GET k": "FETCH k" to the first live member,
 *                        its answer passed back; "RETRY k" when none is
 *                        live or none answers within 100 ms.
 *   leave client PORT ROUTER
 *                        at 100 ms puts k1 (again every 50 ms until
 *                        "OK k1"), at 300 ms gets it (again on "RETRY" or
 *                        after 50 ms); exits 1 when the router answers
 *                        "NONE k1" for a write it acknowledged, 0 when it
 *                        reads it back or at 700 ms.
 *
 * The bug: the router acknowledges a write when it sends it on, not when
 * the member has stored it (a fire-and-forget placement). Member b leaves
 * at 60 ms. If its BYE reaches the router, k1 goes to c and is read back
 * from c. If that one BYE is lost, the router still counts b live (its
 * last heartbeat, at 40 ms, is fresh until 190 ms), places k1 on b, which
 * is draining and ignores it, and says OK; at 300 ms b has expired, the
 * read goes to c, which has no k1: "NONE k1" for an acknowledged write.
 * The STORE itself lost on its way to c does the same. A heartbeat lost,
 * or any one message of a request the client repeats, does nothing. */
#include "common.h"
#include "udp.h"

static void say(int fd, const struct sockaddr_in *to, const char *fmt, const char *a, long v)
{
	char buf[96];
	int n = snprintf(buf, sizeof buf, fmt, a, v);
	if (sendto(fd, buf, n, 0, (const struct sockaddr *)to, sizeof *to) < 0)
		die("sendto");
}

#define KEYS 8

static __attribute__((noreturn)) void member(char **argv, long leave_at)
{
	int fd = bound_udp(argv[0]);
	const char *name = argv[1];
	struct sockaddr_in to[2] = { resolve(argv[2], argv[0]), resolve(argv[3], argv[0]) }, from;
	char keys[KEYS][16];
	long vals[KEYS];
	int nkeys = 0, left = 0;
	long t0 = now_ms(), next_hb = t0;
	char buf[128], k[16];
	for (;;) {
		long now = now_ms();
		if (leave_at > 0 && !left && now >= t0 + leave_at) {
			left = 1;
			for (int i = 0; i < 2; i++)
				say(fd, &to[i], "BYE %s", name, 0);
		}
		if (left && now >= t0 + leave_at + 600)
			exit(0);
		if (!left && now >= next_hb) {
			for (int i = 0; i < 2; i++)
				say(fd, &to[i], "HB %s", name, 0);
			next_hb += 20;
		}
		long until = left ? t0 + leave_at + 600 : next_hb;
		if (leave_at > 0 && !left && t0 + leave_at < until)
			until = t0 + leave_at;
		if (!hear(fd, until - now_ms(), buf, sizeof buf, &from) || left)
			continue;
		long v;
		if (sscanf(buf, "STORE %15s %ld", k, &v) == 2) {
			int i = 0;
			while (i < nkeys && strcmp(keys[i], k) != 0)
				i++;
			if (i == nkeys && nkeys < KEYS)
				strcpy(keys[nkeys++], k);
			if (i < KEYS)
				vals[i] = v;
			say(fd, &from, "STORED %s", k, 0);
		} else if (sscanf(buf, "FETCH %15s", k) == 1) {
			int i = 0;
			while (i < nkeys && strcmp(keys[i], k) != 0)
				i++;
			if (i < nkeys)
				say(fd, &from, "HAS %s %ld", k, vals[i]);
			else
				say(fd, &from, "NONE %s", k, 0);
		}
	}
}

static __attribute__((noreturn)) void router(char **argv)
{
	int fd = bound_udp(argv[0]);
	const char *names[2] = { argv[1], argv[2] };
	struct sockaddr_in m[2] = { resolve(argv[1], argv[0]), resolve(argv[2], argv[0]) }, from, client;
	long heard[2] = { -1000, -1000 }, asked_at = 0;
	int bye[2] = { 0, 0 }, asking = 0;
	char buf[128], k[16], who[16], key[16] = "";
	for (;;) {
		long wait = asking ? asked_at + 100 - now_ms() : 1000;
		if (asking && wait <= 0) {
			asking = 0;
			say(fd, &client, "RETRY %s", key, 0);
			continue;
		}
		if (!hear(fd, wait, buf, sizeof buf, &from))
			continue;
		long now = now_ms(), v;
		int live = -1;
		for (int i = 1; i >= 0; i--)
			if (!bye[i] && now - heard[i] < 150)
				live = i;
		if (sscanf(buf, "HB %15s", who) == 1 || sscanf(buf, "BYE %15s", who) == 1) {
			for (int i = 0; i < 2; i++)
				if (strcmp(who, names[i]) == 0) {
					if (buf[0] == 'H')
						heard[i] = now;
					else
						bye[i] = 1;
				}
		} else if (sscanf(buf, "PUT %15s %ld", k, &v) == 2) {
			client = from;
			if (live >= 0) {
				char store[64];
				snprintf(store, sizeof store, "STORE %s %ld", k, v);
				if (sendto(fd, store, strlen(store), 0, (struct sockaddr *)&m[live], sizeof m[live]) < 0)
					die("sendto");
				say(fd, &client, "OK %s", k, 0); /* the bug: before STORED */
			}
		} else if (sscanf(buf, "GET %15s", k) == 1) {
			client = from;
			if (live < 0) {
				say(fd, &client, "RETRY %s", k, 0);
				continue;
			}
			strcpy(key, k);
			asking = 1;
			asked_at = now;
			say(fd, &m[live], "FETCH %s", k, 0);
		} else if (strncmp(buf, "HAS ", 4) == 0 || strncmp(buf, "NONE ", 5) == 0) {
			if (asking) {
				asking = 0;
				if (sendto(fd, buf, strlen(buf), 0, (struct sockaddr *)&client, sizeof client) < 0)
					die("sendto");
			}
		}
	}
}

static int client(char **argv)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket");
	struct sockaddr_in r = resolve(argv[1], argv[0]), from;
	long t0 = now_ms(), next = t0 + 100;
	int acked = 0;
	char buf[128];
	while (now_ms() < t0 + 700) {
		long now = now_ms();
		if (now >= next) {
			if (!acked) {
				say(fd, &r, "PUT %s %ld", "k1", 1);
				next = now + 50;
			} else if (now >= t0 + 300) {
				say(fd, &r, "GET %s", "k1", 0);
				next = now + 50;
			} else {
				next = t0 + 300;
			}
		}
		long end = next < t0 + 700 ? next : t0 + 700;
		if (!hear(fd, end - now_ms(), buf, sizeof buf, &from))
			continue;
		long v;
		if (strcmp(buf, "OK k1") == 0 && !acked) {
			acked = 1;
			next = t0 + 300;
		} else if (acked && sscanf(buf, "HAS k1 %ld", &v) == 1) {
			printf("read k1 = %ld\n", v);
			return 0;
		} else if (acked && strcmp(buf, "NONE k1") == 0) {
			printf("lost write: the router acknowledged k1, and the member it reads has none\n");
			return 1;
		} else if (strncmp(buf, "RETRY", 5) == 0) {
			next = now_ms();
		}
	}
	printf("no answer to the read by 700 ms\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 6 && strcmp(argv[1], "member") == 0)
		member(argv + 2, argc >= 7 ? atol(argv[6]) : 0);
	if (argc == 5 && strcmp(argv[1], "router") == 0)
		router(argv + 2);
	if (argc == 4 && strcmp(argv[1], "client") == 0)
		return client(argv + 2);
	fprintf(stderr, "usage: leave member PORT NAME ROUTER PEER [LEAVEAT] | router PORT M1 M2 | client PORT ROUTER\n");
	return 2;
}
