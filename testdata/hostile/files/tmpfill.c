/* tmpfill DIR MIB: a node that writes MIB MiB to DIR/fill (its {{tmp}}),
 * for the hostile-node suite (engine/hostile_files_test.go). It prints
 * "wrote N MiB" and exits 0, or, when a write fails (ENOSPC at its
 * {{tmp}} limit), "write after N MiB: ERROR" and exits 1, leaving the
 * file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: tmpfill DIR MIB\n");
		return 2;
	}
	char path[4096];
	snprintf(path, sizeof path, "%s/fill", argv[1]);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		printf("open %s: %s\n", path, strerror(errno));
		return 3;
	}
	static char chunk[1 << 20];
	memset(chunk, 'f', sizeof chunk);
	long mib = atol(argv[2]);
	for (long i = 0; i < mib; i++) {
		size_t off = 0;
		while (off < sizeof chunk) {
			ssize_t n = write(fd, chunk + off, sizeof chunk - off);
			if (n < 0) {
				printf("write after %ld MiB: %s\n", i, strerror(errno));
				return 1;
			}
			off += n;
		}
	}
	printf("wrote %ld MiB\n", mib);
	return 0;
}
