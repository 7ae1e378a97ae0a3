/* hog: a node that takes all it can of the host, to test lockstep's
 * per-node limits (testdata/specs/limits). In this order: it fills its
 * private /tmp, /dev/shm and /var/tmp until a write fails, creates
 * threads until one cannot be created, prints OUTPUT_MIB MiB to stdout,
 * then allocates memory (and touches it) until it is killed. What each
 * step met goes to stderr, one line each. "nofill" leaves the files out:
 * a node run natively (--native) writes to the host's own /tmp.
 *   hog [OUTPUT_MIB [nofill]] */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char chunk[1 << 20];

static void fill(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) {
    fprintf(stderr, "fill %s: open: %s\n", path, strerror(errno));
    return;
  }
  long total = 0;
  for (;;) {
    ssize_t n = write(fd, chunk, sizeof chunk);
    if (n < 0) {
      fprintf(stderr, "fill %s: %ld MiB, then %s\n", path, total >> 20, strerror(errno));
      break;
    }
    total += n;
    if (n < (ssize_t)sizeof chunk) {
      /* A short write: the next one fails. */
      continue;
    }
  }
  close(fd);
}

static void *sleeper(void *arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}

int main(int argc, char **argv) {
  long out_mib = argc > 1 ? atol(argv[1]) : 64;
  memset(chunk, 'x', sizeof chunk);
  if (argc < 3 || strcmp(argv[2], "nofill") != 0) {
    fill("/tmp/hog");
    fill("/dev/shm/hog");
    fill("/var/tmp/hog");
  }

  int threads = 0;
  for (;;) {
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 << 10);
    int e = pthread_create(&t, &a, sleeper, NULL);
    pthread_attr_destroy(&a);
    if (e != 0) {
      fprintf(stderr, "threads: %d, then %s\n", threads, strerror(e));
      break;
    }
    threads++;
  }

  for (long i = 0; i < out_mib; i++) {
    if (fwrite(chunk, 1, sizeof chunk, stdout) != sizeof chunk) {
      fprintf(stderr, "output: %ld MiB, then %s\n", i, strerror(errno));
      break;
    }
  }
  fflush(stdout);
  fprintf(stderr, "output: %ld MiB written\n", out_mib);

  long mib = 0;
  for (;;) {
    char *p = malloc(1 << 20);
    if (p == NULL) {
      fprintf(stderr, "memory: %ld MiB, then malloc failed\n", mib);
      return 3;
    }
    memset(p, 'y', 1 << 20);
    mib++;
  }
}
