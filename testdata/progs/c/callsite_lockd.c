/* callsite_lockd PORT: a tiny lock service for the call-site tests. It
 * accepts one connection and serves it on a worker thread named
 * "lockd-worker", printing "got REQUEST" for each request it reads
 * (read_request) until EOF, then "done". Its reads are made in a small
 * function of its own that -O2 keeps out of line (noinline), so each has
 * a named caller. Built twice: with -g (file:line from DWARF) and without
 * (callsite_lockd_nog: symbols only). */
#define _GNU_SOURCE
#include <pthread.h>
#include "common.h"

__attribute__((noinline)) static ssize_t read_request(int fd, char *buf, size_t cap)
{
	ssize_t n = read(fd, buf, cap - 1);
	if (n >= 0)
		buf[n] = 0;
	return n;
}

static void *serve(void *arg)
{
	int fd = *(int *)arg;
	char buf[256];
	/* Named by itself, before its first read (main's rename would race). */
	pthread_setname_np(pthread_self(), "lockd-worker");
	while (read_request(fd, buf, sizeof buf) > 0)
		printf("got %s\n", buf);
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	int lfd, fd;
	if (argc != 2) {
		fprintf(stderr, "usage: callsite_lockd PORT\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	lfd = listen_on(argv[1]);
	if ((fd = accept(lfd, NULL, NULL)) < 0)
		die("accept");
	if (pthread_create(&t, NULL, serve, &fd) != 0)
		die("pthread_create");
	pthread_join(t, NULL);
	printf("done\n");
	return 0;
}
