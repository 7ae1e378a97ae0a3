/* threads_exec: exec while another thread is still running. */
#include <pthread.h>
#include "common.h"

static void *spin(void *arg)
{
	(void)arg;
	for (;;)
		msleep(1);
	return NULL;
}

int main(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, spin, NULL))
		die("pthread_create");
	msleep(5);
	char *argv[] = { "echo", "exec-ok", NULL };
	execv("/bin/echo", argv);
	die("execv");
}
