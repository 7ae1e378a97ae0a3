/* thread_order: which runs first after pthread_create, the creating thread
 * or the new one? Main creates four threads; it and each new thread log
 * their step in a shared array (no syscalls, so no stop orders them), and
 * main prints the log once all have ended. Under lockstep's serialized
 * threads the answer must be the same in every run. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#define N 4

static atomic_int next;
static char log_[4 * N];

static void mark(char c) { log_[atomic_fetch_add(&next, 1)] = c; }

static void *child(void *arg) {
  mark('0' + (int)(long)arg);
  return NULL;
}

int main(void) {
  pthread_t t[N];
  for (long i = 0; i < N; i++) {
    mark('P');
    if (pthread_create(&t[i], NULL, child, (void *)i) != 0) return 2;
  }
  for (int i = 0; i < N; i++) pthread_join(t[i], NULL);
  printf("order %.*s\n", atomic_load(&next), log_);
  return 0;
}
