/* killparent: a hostile node program. It looks for the process that started
 * it, by getppid() and by the PPid line of /proc/self/status, and sends it
 * SIGKILL; under lockstep, which starts each node as pid 1 of a PID
 * namespace of its own, it finds no parent to kill. */
#include "common.h"
#include <signal.h>

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	pid_t pp = getppid();
	int status_ppid = -1;
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "PPid: %d", &status_ppid) == 1)
			break;
	if (f)
		fclose(f);
	printf("getppid=%d status_ppid=%d\n", (int)pp, status_ppid);
	if (pp > 1)
		kill(pp, SIGKILL);
	if (status_ppid > 1)
		kill(status_ppid, SIGKILL);
	printf("still here\n");
	return 0;
}
