/* links MODE VICTIM: a node that puts a symbolic link to VICTIM, a file of
 * the host's, where lockstep writes in the trial's directory, for the
 * hostile-node suite (engine/hostile_files_test.go). The directory is the
 * node's to write; lockstep, root on the host, must not write through it.
 * Modes:
 *   trace    links trace.jsonl, exits 1 (a failing trial writes its trace)
 *   threads  links threads.txt, then blocks in accept() with nothing to
 *            accept: a deadlock, whose thread states lockstep writes
 *   output   moves its own stdout file away, links client.out in its
 *            place, then prints past its 4 KiB output limit and exits 1:
 *            lockstep cuts the file back and appends its cut line
 *   checker  links checker.out and exits 0: the checker's output is
 *            written after a passing trial
 *   early    a server that tries to link late.out, the output of a node
 *            that starts after it, then waits for a connection forever
 *   replay, replay-lock, replay-trials, explain
 *            leave, for the commands run on the trace after the trial,
 *            a link to VICTIM's directory at replay (a replay's default
 *            output directory), a directory replay holding a link to
 *            VICTIM at .lockstep.lock (its lock file) or to VICTIM's
 *            directory at trials, or a directory explain holding a link
 *            to VICTIM's directory at runs (explain's reruns), and exit 1
 * Each prints what it did, or the error, and the trial's directory is
 * /run/lockstep/trial (tracer.TrialPath). */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define TRIAL "/run/lockstep/trial"

static int try_plant(const char *name, const char *victim) {
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", TRIAL, name);
	if (symlink(victim, path) != 0) {
		printf("symlink %s: %s\n", path, strerror(errno));
		fflush(stdout);
		return -1;
	}
	printf("linked %s to %s\n", name, victim);
	fflush(stdout);
	return 0;
}

static void plant(const char *name, const char *victim) {
	if (try_plant(name, victim) != 0)
		exit(3);
}

static void block_forever(void) {
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(7777)};
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 1) != 0) {
		printf("listen: %s\n", strerror(errno));
		exit(3);
	}
	accept(s, NULL, NULL);
	printf("accepted?\n");
	exit(3);
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: links trace|threads|output|checker|early|replay|replay-lock|replay-trials|explain VICTIM\n");
		return 2;
	}
	const char *mode = argv[1], *victim = argv[2];
	if (strcmp(mode, "trace") == 0) {
		plant("trace.jsonl", victim);
		return 1;
	}
	if (strcmp(mode, "threads") == 0) {
		plant("threads.txt", victim);
		block_forever();
	}
	if (strcmp(mode, "output") == 0) {
		if (rename(TRIAL "/client.out", TRIAL "/client.out.moved") != 0) {
			printf("rename: %s\n", strerror(errno));
			return 3;
		}
		plant("client.out", victim);
		char line[100];
		memset(line, 'x', sizeof line - 1);
		line[sizeof line - 1] = '\n';
		for (int i = 0; i < 200; i++) /* 20 KB */
			if (write(1, line, sizeof line) != sizeof line)
				return 3;
		return 1;
	}
	if (strcmp(mode, "early") == 0) {
		try_plant("late.out", victim);
		block_forever();
	}
	if (strcmp(mode, "checker") == 0) {
		plant("checker.out", victim);
		return 0;
	}
	if (strncmp(mode, "replay", 6) == 0 || strcmp(mode, "explain") == 0) {
		char dir[4096];
		snprintf(dir, sizeof dir, "%s", victim);
		*strrchr(dir, '/') = 0;
		if (strcmp(mode, "replay") == 0) {
			plant("replay", dir);
			return 1;
		}
		const char *sub = mode[0] == 'e' ? "explain" : "replay";
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", TRIAL, sub);
		if (mkdir(path, 0755) != 0) {
			printf("mkdir %s: %s\n", path, strerror(errno));
			return 3;
		}
		if (strcmp(mode, "replay-lock") == 0)
			plant("replay/.lockstep.lock", victim);
		else if (strcmp(mode, "replay-trials") == 0)
			plant("replay/trials", dir);
		else
			plant("explain/runs", dir);
		return 1;
	}
	fprintf(stderr, "links: unknown mode %s\n", mode);
	return 2;
}
