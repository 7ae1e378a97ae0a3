/*
 * epoll_server PORT WORKERS CONNS: a multi-threaded echo server. The main
 * thread runs an epoll loop: it accepts, reads what arrives and hands each
 * chunk to the worker thread that owns the connection (fd % WORKERS), which
 * writes it back. Per-connection order holds because one worker owns it.
 * After CONNS connections have closed it prints "served CONNS" and exits 0.
 */
#include "common.h"
#include <pthread.h>
#include <sys/epoll.h>

struct job {
	int fd;
	ssize_t n; /* 0: close the connection */
	char buf[4096];
	struct job *next;
};

struct worker {
	pthread_t th;
	int id;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *head, *tail;
	int quit;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	for (;;) {
		pthread_mutex_lock(&w->mu);
		while (!w->head && !w->quit)
			pthread_cond_wait(&w->cv, &w->mu);
		struct job *j = w->head;
		if (j) {
			w->head = j->next;
			if (!w->head)
				w->tail = NULL;
		}
		pthread_mutex_unlock(&w->mu);
		if (!j)
			return NULL;
		if (j->n == 0) {
			close(j->fd);
		} else if (write(j->fd, j->buf, j->n) != j->n) {
			die("write");
		}
		free(j);
	}
}

static void push(struct worker *w, int fd, const char *buf, ssize_t n)
{
	struct job *j = calloc(1, sizeof *j);
	j->fd = fd;
	j->n = n;
	memcpy(j->buf, buf, n);
	pthread_mutex_lock(&w->mu);
	if (w->tail)
		w->tail->next = j;
	else
		w->head = j;
	w->tail = j;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: epoll_server PORT WORKERS CONNS\n");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	int nw = atoi(argv[2]), want = atoi(argv[3]), served = 0;
	if (nw < 1 || nw > 16 || want < 1) {
		fprintf(stderr, "epoll_server: bad WORKERS or CONNS\n");
		return 1;
	}
	struct worker ws[16];
	for (int i = 0; i < nw; i++) {
		ws[i] = (struct worker){ .id = i };
		pthread_mutex_init(&ws[i].mu, NULL);
		pthread_cond_init(&ws[i].cv, NULL);
		if (pthread_create(&ws[i].th, NULL, work, &ws[i]) != 0)
			die("pthread_create");
	}
	int l = listen_on(argv[1]), ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = l }, evs[16];
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev) < 0)
		die("epoll");
	while (served < want) {
		int n = epoll_wait(ep, evs, 16, -1);
		if (n < 0)
			die("epoll_wait");
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == l) {
				int c = accept(l, NULL, NULL);
				if (c < 0)
					die("accept");
				ev = (struct epoll_event){ .events = EPOLLIN, .data.fd = c };
				if (epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev) < 0)
					die("epoll_ctl");
				printf("accepted fd %d for worker %d\n", c, c % nw);
				continue;
			}
			char buf[4096];
			ssize_t r = read(fd, buf, sizeof buf);
			if (r <= 0) {
				epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
				push(&ws[fd % nw], fd, NULL, 0);
				served++;
				continue;
			}
			push(&ws[fd % nw], fd, buf, r);
		}
	}
	for (int i = 0; i < nw; i++) {
		pthread_mutex_lock(&ws[i].mu);
		ws[i].quit = 1;
		pthread_cond_signal(&ws[i].cv);
		pthread_mutex_unlock(&ws[i].mu);
		pthread_join(ws[i].th, NULL);
	}
	printf("served %d\n", served);
	return 0;
}
