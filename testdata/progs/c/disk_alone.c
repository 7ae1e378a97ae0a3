/* disk_alone FILE: the main thread wakes a second thread, then truncates
 * FILE to the length it has (0: the call returns at once) and notes that
 * it is past it; the woken thread notes that it woke. The notes take no
 * syscall; main prints their order.
 * On one CPU under the real-time policy main goes on while the woken thread
 * waits its turn: "synced woken" (had the call slept on the disk, the other
 * order). Under lockstep the call runs once the woken thread has nothing
 * left to do: "woken synced" in every run. */
#define _GNU_SOURCE
#include "common.h"
#include <fcntl.h>
#include <pthread.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go, seq, woken_at, synced_at;

static void *waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	while (!go)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	woken_at = __atomic_add_fetch(&seq, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc != 2) {
		fprintf(stderr, "usage: disk_alone FILE\n");
		return 1;
	}
	int fd = open(argv[1], O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0)
		die("open");
	if (fsync(fd) < 0)
		die("fsync");
	pthread_t t;
	pthread_create(&t, NULL, waiter, NULL);
	msleep(1); /* the waiter is asleep on the condition by then */
	pthread_mutex_lock(&mu);
	go = 1;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	if (ftruncate(fd, 0) < 0)
		die("ftruncate");
	synced_at = __atomic_add_fetch(&seq, 1, __ATOMIC_SEQ_CST);
	pthread_join(t, NULL);
	printf("%s\n", woken_at < synced_at ? "woken synced" : "synced woken");
	return 0;
}
