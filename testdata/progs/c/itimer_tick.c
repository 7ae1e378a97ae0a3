/* itimer_tick: alarm and setitimer(ITIMER_REAL), one-shot and periodic; a
 * SIGALRM handler counts expiries and the program prints the monotonic time
 * since start (ns) at each one. See ../SPEC.md. */
#include "common.h"
#include <poll.h>
#include <signal.h>
#include <sys/time.h>

static volatile sig_atomic_t alarms;

static void on_alarm(int sig) { (void)sig; alarms++; }

static long long mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	long long start = mono();
	struct sigaction sa = { .sa_handler = on_alarm };
	sigaction(SIGALRM, &sa, NULL);
	sigset_t alrm, open;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	sigprocmask(SIG_BLOCK, &alrm, &open);

	printf("alarm old=%u\n", alarm(2));
	sigsuspend(&open);
	printf("alarm fired=%d mono_ns=%lld\n", alarms, mono() - start);

	alarm(5);
	printf("alarm old=%u\n", alarm(1)); /* replaces the 5 s alarm */
	sigsuspend(&open);
	printf("alarm fired=%d mono_ns=%lld\n", alarms, mono() - start);

	/* Periodic: first after 1 s, then every 0.5 s. */
	struct itimerval v = { { 0, 500000 }, { 1, 0 } }, cur;
	setitimer(ITIMER_REAL, &v, NULL);
	for (int i = 0; i < 3; i++) {
		sigsuspend(&open);
		printf("itimer fired=%d mono_ns=%lld\n", alarms, mono() - start);
	}
	getitimer(ITIMER_REAL, &cur);
	printf("get interval_us=%ld value_us=%ld\n", cur.it_interval.tv_usec + cur.it_interval.tv_sec * 1000000L,
	       cur.it_value.tv_usec + cur.it_value.tv_sec * 1000000L);
	struct itimerval zero = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &zero, &cur);
	printf("stop old_value_us=%ld\n", cur.it_value.tv_usec + cur.it_value.tv_sec * 1000000L);

	/* Taken synchronously: sigwaitinfo while SIGALRM is blocked. */
	alarm(1);
	siginfo_t si;
	if (sigwaitinfo(&alrm, &si) != SIGALRM)
		die("sigwaitinfo");
	printf("waited fired=%d mono_ns=%lld\n", alarms, mono() - start);

	/* Gated blocking calls are interrupted too: a 5 s sleep after 1 s, a
	 * poll on an empty pipe after 1 s. */
	sigprocmask(SIG_SETMASK, &open, NULL);
	alarm(1);
	struct timespec req = { 5, 0 }, rem = { 0, 0 };
	int r = nanosleep(&req, &rem);
	printf("sleep r=%d eintr=%d rem_ns=%lld fired=%d mono_ns=%lld\n", r, errno == EINTR,
	       rem.tv_sec * 1000000000LL + rem.tv_nsec, alarms, mono() - start);
	int pfd[2];
	if (pipe(pfd) < 0)
		die("pipe");
	alarm(1);
	struct pollfd p = { .fd = pfd[0], .events = POLLIN };
	r = poll(&p, 1, -1);
	printf("poll r=%d eintr=%d fired=%d mono_ns=%lld\n", r, errno == EINTR, alarms, mono() - start);
	return 0;
}
