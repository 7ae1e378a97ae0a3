/* posix_timer_tick: POSIX timers (timer_create) with SIGEV_SIGNAL,
 * SIGEV_THREAD_ID, SIGEV_NONE and glibc's SIGEV_THREAD; prints the monotonic
 * time since start (ns) at each expiry. See ../SPEC.md. */
#define _GNU_SOURCE
#include "common.h"
#include <semaphore.h>
#include <signal.h>
#include <sys/syscall.h>

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

static long long start;
static sem_t done;

static long long mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static struct itimerspec spec(long long interval, long long value)
{
	struct itimerspec s = { { interval / 1000000000, interval % 1000000000 },
				{ value / 1000000000, value % 1000000000 } };
	return s;
}

static long long ns(const struct timespec *ts) { return ts->tv_sec * 1000000000LL + ts->tv_nsec; }

static void on_timer(union sigval v)
{
	printf("thread_cb value=%d mono_ns=%lld\n", v.sival_int, mono() - start);
	fflush(stdout);
	sem_post(&done);
}

static void wait_for(int sig, const char *what)
{
	sigset_t set;
	siginfo_t si;
	sigemptyset(&set);
	sigaddset(&set, sig);
	if (sigwaitinfo(&set, &si) != sig)
		die("sigwaitinfo");
	printf("%s si_timer=%d value=%d mono_ns=%lld\n", what, si.si_code == SI_TIMER, si.si_value.sival_int,
	       mono() - start);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	start = mono();
	sigset_t block;
	sigemptyset(&block);
	sigaddset(&block, SIGRTMIN);
	sigaddset(&block, SIGRTMIN + 1);
	sigprocmask(SIG_BLOCK, &block, NULL);

	/* SIGEV_SIGNAL, one-shot 2 s. */
	timer_t t1, t2, t3, t4, t5;
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMIN, .sigev_value.sival_int = 7 };
	if (timer_create(CLOCK_MONOTONIC, &sev, &t1) < 0)
		die("timer_create");
	struct itimerspec s = spec(0, 2000000000LL), cur;
	timer_settime(t1, 0, &s, NULL);
	wait_for(SIGRTMIN, "signal");

	/* SIGEV_THREAD_ID to this thread, every second from +1 s. */
	sev = (struct sigevent){ .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGRTMIN + 1,
				 .sigev_value.sival_int = 8 };
	sev.sigev_notify_thread_id = syscall(SYS_gettid);
	if (timer_create(CLOCK_BOOTTIME, &sev, &t2) < 0)
		die("timer_create thread_id");
	s = spec(1000000000LL, 1000000000LL);
	timer_settime(t2, 0, &s, NULL);
	for (int i = 0; i < 3; i++)
		wait_for(SIGRTMIN + 1, "thread_id");
	timer_gettime(t2, &cur);
	printf("gettime interval_ns=%lld value_ns=%lld\n", ns(&cur.it_interval), ns(&cur.it_value));
	/* The 6 s expiry queues a signal; the 7 s one finds it queued: an overrun. */
	msleep(2500);
	wait_for(SIGRTMIN + 1, "late");
	printf("overrun=%d\n", timer_getoverrun(t2));
	timer_delete(t2);

	/* SIGEV_NONE: only timer_gettime shows it. */
	sev = (struct sigevent){ .sigev_notify = SIGEV_NONE };
	timer_create(CLOCK_MONOTONIC, &sev, &t3);
	s = spec(0, 1000000000LL);
	timer_settime(t3, 0, &s, NULL);
	timer_gettime(t3, &cur);
	long long before = ns(&cur.it_value);
	msleep(1500);
	timer_gettime(t3, &cur);
	printf("none before_ns=%lld after_ns=%lld mono_ns=%lld\n", before, ns(&cur.it_value), mono() - start);
	timer_delete(t3);

	/* SIGEV_THREAD: glibc's helper thread gets the signal and runs on_timer. */
	sem_init(&done, 0, 0);
	sev = (struct sigevent){ .sigev_notify = SIGEV_THREAD, .sigev_notify_function = on_timer,
				 .sigev_value.sival_int = 9 };
	if (timer_create(CLOCK_MONOTONIC, &sev, &t4) < 0)
		die("timer_create thread");
	s = spec(0, 2000000000LL);
	timer_settime(t4, 0, &s, NULL);
	while (sem_wait(&done) < 0)
		;
	printf("thread_done mono_ns=%lld\n", mono() - start);
	timer_delete(t4);

	/* CLOCK_REALTIME, absolute: one second after now. */
	sev = (struct sigevent){ .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMIN, .sigev_value.sival_int = 10 };
	timer_create(CLOCK_REALTIME, &sev, &t5);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	s = spec(0, ns(&now) + 1000000000LL);
	timer_settime(t5, TIMER_ABSTIME, &s, NULL);
	wait_for(SIGRTMIN, "absolute");
	timer_delete(t5);
	timer_delete(t1);
	return 0;
}
