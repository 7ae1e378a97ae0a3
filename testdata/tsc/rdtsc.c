/* rdtsc: prints two time-stamp counter readings around a 1 s sleep, read
 * with rdtsc and rdtscp. Under lockstep both are virtual: exact and equal
 * in every run. `rdtsc --probe` exits 3 if this machine cannot trap rdtsc. */
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <x86intrin.h>

int main(int argc, char **argv) {
  unsigned aux;
  if (argc > 1 && strcmp(argv[1], "--probe") == 0) {
    /* Does this machine fault on rdtsc after PR_TSC_SIGSEGV? Some
     * hypervisors do not honour CR4.TSD: then exit 3. */
    prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0);
    (void)__rdtsc();
    return 3;
  }
  unsigned long long a = __rdtsc();
  struct timespec d = {1, 0};
  nanosleep(&d, NULL);
  unsigned long long b = __rdtscp(&aux);
  printf("tsc0=%llu tsc1=%llu delta=%llu\n", a, b, b - a);
  return 0;
}
