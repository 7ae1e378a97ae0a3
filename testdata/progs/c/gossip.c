/*
 * gossip NAME PORT INTERVAL_MS [lead] [stop=N] [kinds[=K]] PEER...: a server that
 * tells every peer (listening on the same PORT) "NAME SEQ\n" each
 * INTERVAL_MS, for ever (or, with stop=N, N times, and exits 0), and prints
 * each chunk it reads from a peer as "got ..."; with "lead" it first prints
 * "leader NAME" (what a probe can read); with "kinds" it opens two
 * connections to each peer and tells it "NAME beat SEQ\n" on the first and
 * "NAME data SEQ\n" on the second (two kinds of message, for holds of one
 * kind); with kinds=K it says "beat NAME SEQ\n" and, only every K-th time,
 * "data NAME SEQ\n" (the verb first, as text protocols have it, so that the
 * two are two kinds, beats the commonest, for grays). One thread:
 * poll over the listener and the accepted connections, its timeout the
 * interval. The network faults' tests read who reached whom, and when, in
 * the trace's deliveries.
 */
#include <poll.h>
#include "common.h"

#define MAXC 16

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: gossip NAME PORT INTERVAL_MS [lead] [stop=N] PEER...\n");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *name = argv[1], *port = argv[2];
	long interval = atol(argv[3]);
	int first = 4;
	long stop = -1;
	long kinds = 0; /* with data every kinds-th time */
	for (; first < argc; first++) {
		if (strcmp(argv[first], "lead") == 0)
			printf("leader %s\n", name);
		else if (strcmp(argv[first], "kinds") == 0)
			kinds = 1;
		else if (strncmp(argv[first], "kinds=", 6) == 0 && atol(argv[first] + 6) > 0)
			kinds = atol(argv[first] + 6);
		else if (strncmp(argv[first], "stop=", 5) == 0)
			stop = atol(argv[first] + 5);
		else
			break;
	}
	struct pollfd in[MAXC + 1] = { { .fd = listen_on(port), .events = POLLIN } };
	int nin = 1, out[MAXC], nout = 0;
	for (int i = first; i < argc && nout + (kinds > 0) < MAXC; i++) {
		out[nout++] = connect_to(argv[i], port);
		if (kinds)
			out[nout++] = connect_to(argv[i], port);
	}
	long seq = 0, next = 0; /* ms of CLOCK_MONOTONIC */
	for (;;) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		long now = ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
		if (now >= next) {
			if (seq == stop)
				return 0;
			char msg[64];
			for (int i = 0; i < nout; i++) {
				if (kinds && i % 2 && seq % kinds)
					continue;
				const char *kind = !kinds ? "" : i % 2 ? "data " : "beat ";
				int m = kinds > 1 ? snprintf(msg, sizeof msg, "%s%s %ld\n", kind, name, seq)
						  : snprintf(msg, sizeof msg, "%s %s%ld\n", name, kind, seq);
				write_all(out[i], msg, m);
			}
			seq++;
			next = now + interval;
		}
		if (poll(in, nin, next - now > interval ? interval : next - now) < 0)
			die("poll");
		if ((in[0].revents & POLLIN) && nin <= MAXC) {
			int c = accept(in[0].fd, NULL, NULL);
			if (c < 0)
				die("accept");
			in[nin++] = (struct pollfd){ .fd = c, .events = POLLIN };
		}
		for (int i = 1; i < nin; i++) {
			if (!(in[i].revents & (POLLIN | POLLHUP)))
				continue;
			char buf[512];
			ssize_t n = read(in[i].fd, buf, sizeof buf - 1);
			if (n <= 0) {
				close(in[i].fd);
				in[i--] = in[--nin];
				continue;
			}
			buf[n] = 0;
			printf("got %s", buf);
		}
	}
}
