/* child_wait: forks a child that sleeps 100 ms and exits, and waits for it
 * as Erlang's erl_child_setup waits for its helpers: SIGCHLD blocked except
 * inside a pselect6 on no descriptor and without a timeout, which only the
 * signal ends (EINTR); the handler notes it, then the parent reaps the
 * child and prints "reaped status 7". */
#include "common.h"
#include <signal.h>
#include <sys/select.h>
#include <sys/wait.h>

static volatile sig_atomic_t got;

static void on_chld(int sig)
{
	(void)sig;
	got = 1;
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	sigset_t chld, none;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigemptyset(&none);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_chld;
	sigaction(SIGCHLD, &sa, NULL);
	pid_t c = fork();
	if (c < 0)
		die("fork");
	if (c == 0) {
		msleep(100);
		_exit(7);
	}
	while (!got) {
		if (pselect(0, NULL, NULL, NULL, NULL, &none) < 0 && errno != EINTR)
			die("pselect");
	}
	int st;
	if (waitpid(c, &st, 0) != c)
		die("waitpid");
	printf("reaped status %d\n", WEXITSTATUS(st));
	return 0;
}
