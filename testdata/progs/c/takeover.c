/* takeover: three members that elect a leader by epochs over UDP, and a
 * driver that asks one of them to take over, with a bug that needs every
 * message to the new candidate held but its heartbeats, from when its
 * votes are on their way until a rival has won a later epoch.
 *
 *   takeover member PORT NAME P1 P2 TIMEOUT [lead]
 *                        a member; P1 and P2 are its peers. The leader
 *                        sends "BEAT e" to both every 20 ms. A member that
 *                        has heard no leader for TIMEOUT ms, or is told
 *                        "GO", campaigns: epoch e+1, "ASK e" to both
 *                        peers, leader at the first "YES e" (itself and one
 *                        peer are a majority of three). A member grants
 *                        "ASK e" once per epoch, for an epoch above its
 *                        own, and steps down. Each new leader reports
 *                        "LEADER e" to the driver ("WATCH").
 *   takeover driver PORT A B C
 *                        watches the three, tells C "GO" at 100 ms and
 *                        checks that no two members led one epoch: exits
 *                        1 when two did, 0 at 500 ms.
 *
 * The bug (hashicorp/raft#695's shape): a BEAT of a later epoch makes a
 * candidate a follower of that epoch but does not end its campaign, and a
 * YES counts when its epoch is not above the member's. So C, told GO,
 * campaigns for epoch 2; if both YES 2 wait while the old leader A, which
 * granted them and stepped down, times out, wins epoch 3 with B's vote and
 * sends BEAT 3, then C, a follower of epoch 3, counts a late YES 2 and
 * leads epoch 3 as well. It takes every message to C held (the YESes and
 * A's ASK 3) while A's BEATs reach it, from after GO until past A's win:
 * a hold of one kind leaves the other YES or the ASK through, a partition
 * of C stops the BEAT too (C then counts the YES in epoch 2, which no one
 * else led), and the window is the few steps between GO and the YESes. */
#include "common.h"
#include "udp.h"

static void say(int fd, const struct sockaddr_in *to, const char *fmt, long e)
{
	char buf[64];
	int n = snprintf(buf, sizeof buf, fmt, e);
	if (sendto(fd, buf, n, 0, (const struct sockaddr *)to, sizeof *to) < 0)
		die("sendto");
}

enum role { FOLLOWER, CANDIDATE, LEADER };

struct member {
	int fd;
	const char *name;
	struct sockaddr_in peer[2], watcher;
	int watched;
	enum role role;
	long epoch, voted, heard, next_beat;
	int campaigning, votes;
};

static void lead(struct member *m, long now)
{
	m->role = LEADER;
	m->campaigning = 0;
	m->next_beat = now;
	printf("%s: leader of epoch %ld\n", m->name, m->epoch);
	if (m->watched)
		say(m->fd, &m->watcher, "LEADER %ld", m->epoch);
}

static void campaign(struct member *m, long now)
{
	m->epoch++;
	m->voted = m->epoch;
	m->role = CANDIDATE;
	m->campaigning = 1;
	m->votes = 1;
	m->heard = now;
	printf("%s: campaigns for epoch %ld\n", m->name, m->epoch);
	for (int i = 0; i < 2; i++)
		say(m->fd, &m->peer[i], "ASK %ld", m->epoch);
}

static __attribute__((noreturn)) void member(char **argv, int leading)
{
	struct member m = {
		.fd = bound_udp(argv[0]), .name = argv[1],
		.peer = { resolve(argv[2], argv[0]), resolve(argv[3], argv[0]) },
		.role = FOLLOWER, .epoch = 1, .voted = 1,
	};
	long timeout = atol(argv[4]);
	m.heard = now_ms();
	if (leading)
		lead(&m, m.heard);
	char buf[128];
	struct sockaddr_in from;
	for (;;) {
		long now = now_ms();
		if (m.role == LEADER && now >= m.next_beat) {
			for (int i = 0; i < 2; i++)
				say(m.fd, &m.peer[i], "BEAT %ld", m.epoch);
			m.next_beat = now + 20;
		}
		if (m.role != LEADER && now - m.heard >= timeout)
			campaign(&m, now);
		long wait = m.role == LEADER ? m.next_beat - now : m.heard + timeout - now;
		if (!hear(m.fd, wait, buf, sizeof buf, &from))
			continue;
		now = now_ms();
		long e;
		if (strcmp(buf, "WATCH") == 0) {
			m.watcher = from;
			m.watched = 1;
		} else if (strcmp(buf, "GO") == 0) {
			if (m.role != LEADER)
				campaign(&m, now);
		} else if (sscanf(buf, "BEAT %ld", &e) == 1) {
			/* The fast path: a leader of this epoch or a later one is
			 * followed at once; the campaign is left to the YES handler. */
			if (e >= m.epoch) {
				m.epoch = e;
				m.role = FOLLOWER;
				m.heard = now;
			}
		} else if (sscanf(buf, "ASK %ld", &e) == 1) {
			if (e > m.epoch && e > m.voted) {
				m.epoch = m.voted = e;
				m.role = FOLLOWER;
				m.campaigning = 0;
				m.heard = now;
				say(m.fd, &from, "YES %ld", e);
			} else {
				say(m.fd, &from, "NO %ld", e);
			}
		} else if (sscanf(buf, "YES %ld", &e) == 1) {
			/* The bug: a vote of an earlier epoch counts for this one. */
			if (m.campaigning && e <= m.epoch && ++m.votes >= 2)
				lead(&m, now);
		}
	}
}

static int driver(char **argv)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket");
	struct sockaddr_in mem[3] = { resolve(argv[1], argv[0]), resolve(argv[2], argv[0]), resolve(argv[3], argv[0]) }, from;
	long led[3][8] = { { 0 } }; /* the epochs each member led, the first 8 */
	int nled[3] = { 0 };
	for (int i = 0; i < 3; i++)
		say(fd, &mem[i], "WATCH", 0);
	long t0 = now_ms(), go = t0 + 100, end = t0 + 500;
	char buf[128];
	for (;;) {
		long now = now_ms();
		if (go && now >= go) {
			say(fd, &mem[2], "GO", 0);
			go = 0;
		}
		if (now >= end)
			break;
		if (!hear(fd, (go ? go : end) - now, buf, sizeof buf, &from))
			continue;
		long e;
		if (sscanf(buf, "LEADER %ld", &e) != 1)
			continue;
		int i = 0;
		while (i < 3 && from.sin_addr.s_addr != mem[i].sin_addr.s_addr)
			i++;
		if (i == 3)
			continue;
		for (int j = 0; j < 3; j++)
			for (int k = 0; j != i && k < nled[j]; k++)
				if (led[j][k] == e) {
					printf("two leaders in epoch %ld: %s and %s\n", e, argv[1 + j], argv[1 + i]);
					return 1;
				}
		if (nled[i] < 8)
			led[i][nled[i]++] = e;
		printf("driver: %s leads epoch %ld\n", argv[1 + i], e);
	}
	printf("driver: one leader per epoch\n");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((argc == 7 || (argc == 8 && strcmp(argv[7], "lead") == 0)) && strcmp(argv[1], "member") == 0)
		member(argv + 2, argc == 8);
	if (argc == 6 && strcmp(argv[1], "driver") == 0)
		return driver(argv + 2);
	fprintf(stderr, "usage: takeover member PORT NAME P1 P2 TIMEOUT [lead] | driver PORT A B C\n");
	return 2;
}
