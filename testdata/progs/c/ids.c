/* ids: prints what a process learns about itself at start: its pid, its
 * parent's, a child's and a thread's, and the kernel's 16 random bytes
 * (AT_RANDOM), for the PID namespace and seeding tests. */
#include "common.h"
#include <pthread.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static void *thread_main(void *arg)
{
	(void)arg;
	printf("thread tid=%ld\n", (long)syscall(SYS_gettid));
	return NULL;
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	printf("pid=%d\n", (int)getpid());
	const unsigned char *r = (const unsigned char *)getauxval(AT_RANDOM);
	printf("at_random=");
	for (int i = 0; i < 16; i++)
		printf("%02x", r[i]);
	printf("\n");
	pthread_t t;
	pthread_create(&t, NULL, thread_main, NULL);
	pthread_join(t, NULL);
	pid_t c = fork();
	if (c == 0) {
		printf("child pid=%d\n", (int)getpid());
		_exit(0);
	}
	waitpid(c, NULL, 0);
	return 0;
}
