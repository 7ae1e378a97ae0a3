/* tracedir: a node that makes a directory where lockstep writes the
 * trial's trace (trace.jsonl in the trial's directory) and exits 1, for
 * the hostile-node suite (engine/hostile_files_test.go): lockstep must
 * write the trace elsewhere and go on with the campaign, not stop it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int main(void) {
	if (mkdir("/run/lockstep/trial/trace.jsonl", 0755) != 0) {
		printf("mkdir: %s\n", strerror(errno));
		return 3;
	}
	printf("made a directory at trace.jsonl\n");
	return 1;
}
