/* inval: a database, a cache in front of it and a client over UDP; the
 * bug needs the one invalidation a write sends to the cache to be lost.
 *
 *   inval db PORT CACHE     holds k = 1. "WRITE k v" sets k, sends
 *                           "INVAL k" to the cache once (the bug: never
 *                           repeated, never acknowledged) and answers
 *                           "DONE k". "LOAD k" answers "DATA k v". Every
 *                           20 ms "PING" to the cache.
 *   inval cache PORT DB     "GET k": "VAL k v" from its copy, else "LOAD
 *                           k" to the db and, on "DATA k v", keeps the copy
 *                           and answers the client. "INVAL k" drops the
 *                           copy. "PING" is answered "PONG".
 *   inval client PORT CACHE DB
 *                           gets k at 50 ms (the cache loads 1), writes
 *                           k = 2 at 100 ms, gets k again at 200 ms; each
 *                           request again every 50 ms until answered.
 *                           Exits 1 when the second get reads 1 after the
 *                           write was done, 0 when it reads 2.
 *
 * With the INVAL delivered the cache loads 2 again; with it lost, the
 * cache serves its stale 1. A PING or PONG lost, any request or answer
 * lost (the client asks again), or the cache's LOAD or the db's DATA lost
 * (the client's next GET loads it) does nothing. */
#include "common.h"
#include "udp.h"

static void say(int fd, const struct sockaddr_in *to, const char *fmt, long v)
{
	char buf[64];
	int n = snprintf(buf, sizeof buf, fmt, v);
	if (sendto(fd, buf, n, 0, (const struct sockaddr *)to, sizeof *to) < 0)
		die("sendto");
}

static __attribute__((noreturn)) void db(char **argv)
{
	int fd = bound_udp(argv[0]);
	struct sockaddr_in cache = resolve(argv[1], argv[0]), from;
	long k = 1, next_ping = now_ms();
	char buf[128];
	for (;;) {
		if (now_ms() >= next_ping) {
			say(fd, &cache, "PING", 0);
			next_ping += 20;
		}
		if (!hear(fd, next_ping - now_ms(), buf, sizeof buf, &from))
			continue;
		long v;
		if (sscanf(buf, "WRITE k %ld", &v) == 1) {
			if (v != k) {
				k = v;
				say(fd, &cache, "INVAL k", 0); /* the bug: once, unacknowledged */
			}
			say(fd, &from, "DONE k", 0);
		} else if (strcmp(buf, "LOAD k") == 0) {
			say(fd, &from, "DATA k %ld", k);
		}
	}
}

static __attribute__((noreturn)) void cache(char **argv)
{
	int fd = bound_udp(argv[0]);
	struct sockaddr_in dbaddr = resolve(argv[1], argv[0]), from, client;
	long copy = 0; /* 0: none */
	int waiting = 0;
	char buf[128];
	for (;;) {
		if (!hear(fd, 1000, buf, sizeof buf, &from))
			continue;
		long v;
		if (strcmp(buf, "GET k") == 0) {
			if (copy) {
				say(fd, &from, "VAL k %ld", copy);
			} else {
				client = from;
				waiting = 1;
				say(fd, &dbaddr, "LOAD k", 0);
			}
		} else if (sscanf(buf, "DATA k %ld", &v) == 1) {
			copy = v;
			if (waiting)
				say(fd, &client, "VAL k %ld", copy);
			waiting = 0;
		} else if (strcmp(buf, "INVAL k") == 0) {
			copy = 0;
		} else if (strcmp(buf, "PING") == 0) {
			say(fd, &from, "PONG", 0);
		}
	}
}

static int client(char **argv)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket");
	struct sockaddr_in c = resolve(argv[1], argv[0]), d = resolve(argv[2], argv[0]), from;
	long t0 = now_ms(), next = t0 + 50;
	int step = 0; /* 0: first get, 1: write, 2: second get */
	char buf[128];
	while (now_ms() < t0 + 2000) {
		long now = now_ms();
		if (now >= next) {
			if (step == 0)
				say(fd, &c, "GET k", 0);
			else if (step == 1)
				say(fd, &d, "WRITE k %ld", 2);
			else
				say(fd, &c, "GET k", 0);
			next = now + 50;
		}
		if (!hear(fd, next - now_ms(), buf, sizeof buf, &from))
			continue;
		long v;
		if (step == 0 && sscanf(buf, "VAL k %ld", &v) == 1) {
			step = 1;
			next = t0 + 100;
		} else if (step == 1 && strcmp(buf, "DONE k") == 0) {
			step = 2;
			next = t0 + 200;
		} else if (step == 2 && sscanf(buf, "VAL k %ld", &v) == 1) {
			if (v != 2) {
				printf("stale read: k = %ld after the write of 2 was done\n", v);
				return 1;
			}
			printf("read k = 2\n");
			return 0;
		}
	}
	printf("no answer by 2 s\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "db") == 0)
		db(argv + 2);
	if (argc == 4 && strcmp(argv[1], "cache") == 0)
		cache(argv + 2);
	if (argc == 5 && strcmp(argv[1], "client") == 0)
		return client(argv + 2);
	fprintf(stderr, "usage: inval db PORT CACHE | cache PORT DB | client PORT CACHE DB\n");
	return 2;
}
