/* SPDX-License-Identifier: MIT */
/*
 * bench/bench.h — what every micro-benchmark here does the same way: thread-CPU time, one
 * pinned CPU, a warm-up, repetitions interleaved in rotated order, medians; the leaf they
 * all call, and the bare, floor and hooked loops around it.
 */
#ifndef PERFGROUP_BENCH_H
#define PERFGROUP_BENCH_H

#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

#include "perfgroup/abi.h"

static inline double bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* The leaf every configuration calls: never inlined, nothing known of it across the call. */
#if defined(__clang__)
#define BENCH_NOIPA_ /* clang has no noipa; noinline and the asm barrier suffice */
#else
#define BENCH_NOIPA_ __attribute__((noipa))
#endif
__attribute__((noinline, unused)) BENCH_NOIPA_ static void bench_leaf(void)
{
    __asm__ __volatile__("" ::: "memory");
}
static volatile uint64_t bench_sink __attribute__((unused));

/* Thread-CPU ns of n calls of bench_leaf: (d) bare. */
static inline double bench_bare_ns(long n)
{
    double t0 = bench_now_ns();
    for (long i = 0; i < n; i++)
        bench_leaf();
    return bench_now_ns() - t0;
}

/* (e) the floor: each call between two inline rdtsc. */
static inline double bench_floor_ns(long n)
{
    uint64_t acc = 0;
    double t0 = bench_now_ns();
    for (long i = 0; i < n; i++) {
        uint64_t a = __rdtsc();
        bench_leaf();
        acc += __rdtsc() - a;
    }
    double t = bench_now_ns() - t0;
    bench_sink += acc;
    return t;
}

/* Each call between the real hooks, as a plugin emits them (through the PLT when the
 * runtime is the shared library). */
static inline double bench_hooked_ns(struct perfgroup_site *site, long n)
{
    double t0 = bench_now_ns();
    for (long i = 0; i < n; i++) {
        uint64_t tok = __perfgroup_enter(site);
        bench_leaf();
        if (tok != 0) /* as the plugins call it (ABI 2) */
            __perfgroup_exit(site, tok);
    }
    return bench_now_ns() - t0;
}

static inline int bench_cmp_(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/*
 * Pin to the current CPU (a migration would discard stopwatches), warm every configuration
 * up with n/10 iterations, then run `reps` rounds of every configuration in rotated order;
 * med[c] = median over the rounds of run(c, n) (which returns ns per iteration).
 */
static inline void bench_interleaved(int nconf, double (*run)(int conf, long n), long n,
                                     int reps, double *med)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &set);
    sched_setaffinity(0, sizeof set, &set);
    double *r = calloc((size_t)reps * (size_t)nconf, sizeof *r);
    double *v = calloc((size_t)reps, sizeof *v);
    if (!r || !v)
        abort();
    for (int c = 0; c < nconf; c++)
        run(c, n / 10);
    for (int k = 0; k < reps; k++)
        for (int j = 0; j < nconf; j++) {
            int c = (j + k) % nconf;
            r[k * nconf + c] = run(c, n);
        }
    for (int c = 0; c < nconf; c++) {
        for (int k = 0; k < reps; k++)
            v[k] = r[k * nconf + c];
        qsort(v, (size_t)reps, sizeof *v, bench_cmp_);
        med[c] = v[reps / 2];
    }
    free(r);
    free(v);
}

#endif
