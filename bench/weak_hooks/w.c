/* SPDX-License-Identifier: MIT */
/* bench/weak_hooks/w.c — the guard of -fplugin-arg-perfgroup-weak-hooks (docs/benchmarks.md):
 * one group transition per call of f, thread-CPU ns per call. Run by bench/weak_hooks/run.py.
 * The loop is in a PERF_GROUP("m") function of its own, not in main: main is a thread root
 * and opens no implicit event (docs/accounting.md), which would make every call of f an
 * event of its own; run()'s one implicit event keeps each call a stopwatch pair. */
#include <perfgroup.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
PERF_GROUP("g") __attribute__((noinline)) int f(int x) { return x * 3 + 1; }
PERF_GROUP("m") __attribute__((noinline)) double run(long n)
{
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    volatile int s = 0;
    for (long i = 0; i < n; i++) s += f((int)i);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    return ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n;
}
int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20000000;
    printf("%.3f ns/call\n", run(n));
    return 0;
}
