/* forker: the parent, a forked child and the child's second thread each
 * sleep 1 ms, so every logical thread issues a gated op. */
#include <pthread.h>
#include <sys/wait.h>
#include "common.h"

static void *nap(void *arg)
{
	(void)arg;
	msleep(1);
	return NULL;
}

int main(void)
{
	msleep(1);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		pthread_t t;
		if (pthread_create(&t, NULL, nap, NULL))
			die("pthread_create");
		msleep(1);
		pthread_join(t, NULL);
		_exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0)
		die("waitpid");
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
