/* clone_race: two threads woken together each start a thread. Main starts
 * A, then B; both meet at a barrier, and B, the last to arrive, wakes A
 * and runs on: on one CPU under the real-time policy B reaches its
 * pthread_create while A waits its turn. Each new thread names itself
 * after its creator ("childA", "childB") and sleeps once, so that its
 * sleep shows its name beside its LPID. Under lockstep a thread is named
 * by its creator (A is n/0/t0.1, B n/0/t0.2), so A's child is n/0/t0.1.1
 * in every run, whichever creator got there first; "bfirst" makes A wait
 * until B has started its child, so B's clone always runs first. */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
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

/* With "bfirst", A waits until B has started its child: B's clone then
 * always comes first, as when a creator blocks on a lock another holds. */
static int bfirst;
static sem_t bdone;

static void *creator(void *arg)
{
	pthread_t t;
	int is_a = *(const char *)arg == 'A';
	pthread_barrier_wait(&meet);
	if (bfirst && is_a)
		sem_wait(&bdone);
	if (pthread_create(&t, NULL, child, arg) != 0)
		return (void *)1;
	if (bfirst && !is_a)
		sem_post(&bdone);
	pthread_join(t, NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t a, b;
	bfirst = argc > 1 && strcmp(argv[1], "bfirst") == 0;
	sem_init(&bdone, 0, 0);
	pthread_barrier_init(&meet, NULL, 2);
	if (pthread_create(&a, NULL, creator, "A") != 0 || pthread_create(&b, NULL, creator, "B") != 0)
		return 2;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	puts("done");
	return 0;
}
