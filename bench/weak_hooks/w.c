/* SPDX-License-Identifier: MIT */
/* bench/weak_hooks/w.c — the guard of -fplugin-arg-perfgroup-weak-hooks (docs/benchmarks.md):
 * one group transition per call of f, thread-CPU ns per call. Build: see docs/benchmarks.md. */
#include <perfgroup.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
PERF_GROUP("g") __attribute__((noinline)) int f(int x) { return x * 3 + 1; }
PERF_GROUP("m") int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20000000;
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    volatile int s = 0;
    for (long i = 0; i < n; i++) s += f((int)i);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    printf("%.3f ns/call\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
    return 0;
}
