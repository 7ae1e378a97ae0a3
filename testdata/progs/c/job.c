/* job: a scheduler that runs a job on one of two workers over UDP and
 * moves it to the other when told, and a client; the bug needs the one
 * datagram that cancels the job on the first worker to be lost.
 *
 *   job worker PORT SCHED   every 20 ms "HB" to the scheduler. "RUN j"
 *                           starts job j (again: ignored) and answers
 *                           "STARTED j"; 200 ms after it started, a job
 *                           not cancelled is done: "DONE j" to the
 *                           scheduler. "CANCEL j" stops it.
 *   job sched PORT W1 W2    "SUBMIT j" from the client: "RUN j" to W1,
 *                           again every 50 ms until "STARTED j". "MOVE j":
 *                           "CANCEL j" to W1 once (the bug: never
 *                           repeated, never acknowledged) and "RUN j" to
 *                           W2, repeated likewise. Each "DONE j" is passed
 *                           to the client.
 *   job client PORT SCHED   submits job 1 at 50 ms, moves it at 150 ms,
 *                           and counts the DONEs until 600 ms: exits 1
 *                           when the job was done twice, 0 otherwise.
 *
 * With the CANCEL delivered, W1 stops and only W2 finishes the job. With
 * it lost, W1 finishes too, at about 250 ms, and W2 at about 350 ms: the
 * job ran twice. A heartbeat lost, a RUN or STARTED lost (repeated), or
 * a DONE lost (one fewer) does nothing. */
#include "common.h"
#include "udp.h"

static void say(int fd, const struct sockaddr_in *to, const char *fmt, long j)
{
	char buf[64];
	int n = snprintf(buf, sizeof buf, fmt, j);
	if (sendto(fd, buf, n, 0, (const struct sockaddr *)to, sizeof *to) < 0)
		die("sendto");
}

static __attribute__((noreturn)) void worker(char **argv)
{
	int fd = bound_udp(argv[0]);
	struct sockaddr_in s = resolve(argv[1], argv[0]), from;
	long job = 0, done_at = 0, next_hb = now_ms();
	char buf[128];
	for (;;) {
		long now = now_ms();
		if (now >= next_hb) {
			say(fd, &s, "HB", 0);
			next_hb += 20;
		}
		if (job && now >= done_at) {
			say(fd, &s, "DONE %ld", job);
			job = 0;
		}
		long until = job && done_at < next_hb ? done_at : next_hb;
		if (!hear(fd, until - now_ms(), buf, sizeof buf, &from))
			continue;
		long j;
		if (sscanf(buf, "RUN %ld", &j) == 1) {
			if (job != j) {
				job = j;
				done_at = now_ms() + 200;
			}
			say(fd, &from, "STARTED %ld", j);
		} else if (sscanf(buf, "CANCEL %ld", &j) == 1 && job == j) {
			job = 0;
		}
	}
}

static __attribute__((noreturn)) void scheduler(char **argv)
{
	int fd = bound_udp(argv[0]);
	struct sockaddr_in w[2] = { resolve(argv[1], argv[0]), resolve(argv[2], argv[0]) }, from, client;
	long job = 0, resend = 0;
	int on = -1, started = 0; /* the worker the job is to run on */
	char buf[128];
	for (;;) {
		long wait = on >= 0 && !started ? resend - now_ms() : 1000;
		if (on >= 0 && !started && wait <= 0) {
			say(fd, &w[on], "RUN %ld", job);
			resend = now_ms() + 50;
			continue;
		}
		if (!hear(fd, wait, buf, sizeof buf, &from))
			continue;
		long j;
		if (sscanf(buf, "SUBMIT %ld", &j) == 1) {
			client = from;
			job = j, on = 0, started = 0, resend = 0;
		} else if (sscanf(buf, "MOVE %ld", &j) == 1 && j == job && on == 0) {
			say(fd, &w[0], "CANCEL %ld", j); /* the bug: once, unacknowledged */
			on = 1, started = 0, resend = 0;
		} else if (sscanf(buf, "STARTED %ld", &j) == 1 && j == job && on >= 0 &&
			   from.sin_addr.s_addr == w[on].sin_addr.s_addr) {
			started = 1;
		} else if (sscanf(buf, "DONE %ld", &j) == 1) {
			say(fd, &client, "DONE %ld", j);
		}
	}
}

static int client(char **argv)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket");
	struct sockaddr_in s = resolve(argv[1], argv[0]), from;
	long t0 = now_ms();
	int submitted = 0, moved = 0, done = 0;
	char buf[128];
	for (;;) {
		long now = now_ms();
		if (!submitted && now >= t0 + 50) {
			say(fd, &s, "SUBMIT %ld", 1);
			submitted = 1;
		}
		if (!moved && now >= t0 + 150) {
			say(fd, &s, "MOVE %ld", 1);
			moved = 1;
		}
		if (now >= t0 + 600)
			break;
		long until = !submitted ? t0 + 50 : !moved ? t0 + 150 : t0 + 600;
		if (!hear(fd, until - now_ms(), buf, sizeof buf, &from))
			continue;
		if (strcmp(buf, "DONE 1") == 0)
			done++;
	}
	if (done > 1) {
		printf("job 1 ran twice: %d DONEs after it was moved\n", done);
		return 1;
	}
	printf("job 1 done %d time(s)\n", done);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "worker") == 0)
		worker(argv + 2);
	if (argc == 5 && strcmp(argv[1], "sched") == 0)
		scheduler(argv + 2);
	if (argc == 4 && strcmp(argv[1], "client") == 0)
		return client(argv + 2);
	fprintf(stderr, "usage: job worker PORT SCHED | sched PORT W1 W2 | client PORT SCHED\n");
	return 2;
}
