/* clone_race: two threads woken together each start a thread. Main starts
 * A, then B; both meet at a barrier, and B, the last to arrive, wakes A
 * and runs on: on one CPU under the real-time policy B reaches its
 * pthread_create while A waits its turn. Each new thread names itself
 * after its creator ("childA", "childB") and sleeps once, so that its
 * sleep shows its name beside its LPID. Under lockstep the clones run one
 * at a time in the order of their creators' LPIDs (A is n/0/t1, B
 * n/0/t2), so A's child is n/0/t3 in every run, whichever creator got
 * there first. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <time.h>

static pthread_barrier_t meet;

static void *child(void *arg)
{
	char name[16];
	snprintf(name, sizeof name, "child%s", (const char *)arg);
	prctl(PR_SET_NAME, name);
	struct timespec ts = {0, 1000000};
	nanosleep(&ts, NULL);
	return NULL;
}

static void *creator(void *arg)
{
	pthread_t t;
	pthread_barrier_wait(&meet);
	if (pthread_create(&t, NULL, child, arg) != 0)
		return (void *)1;
	pthread_join(t, NULL);
	return NULL;
}

int main(void)
{
	pthread_t a, b;
	pthread_barrier_init(&meet, NULL, 2);
	if (pthread_create(&a, NULL, creator, "A") != 0 || pthread_create(&b, NULL, creator, "B") != 0)
		return 2;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	puts("done");
	return 0;
}
