/* SPDX-License-Identifier: MIT */
/*
 * tests/runtime/task.h — typed asserts that print both values (after libuv's test/task.h),
 * hand-built sites, and busy work measured by the thread's CPU clock.
 */
#ifndef PERFGROUP_TEST_TASK_H
#define PERFGROUP_TEST_TASK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perfgroup.h"
#include "perfgroup/abi.h"

#define FAIL(...) do { fprintf(stderr, "%s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define ASSERT(c) do { if (!(c)) FAIL("assertion failed: %s", #c); } while (0)
#define ASSERT_U64(a, op, b) do { uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b); \
    if (!(a_ op b_)) FAIL("%s %s %s: %" PRIu64 " vs %" PRIu64, #a, #op, #b, a_, b_); } while (0)
#define ASSERT_I64(a, op, b) do { int64_t a_ = (int64_t)(a), b_ = (int64_t)(b); \
    if (!(a_ op b_)) FAIL("%s %s %s: %" PRId64 " vs %" PRId64, #a, #op, #b, a_, b_); } while (0)
#define ASSERT_NEAR(a, b, tol) do { double a_ = (double)(a), b_ = (double)(b); \
    if (a_ < b_ - (tol) || a_ > b_ + (tol)) FAIL("%s ~ %s: %g vs %g (tol %g)", #a, #b, a_, b_, (double)(tol)); } while (0)

/* A site as a plugin would emit it: "attr\0file\0", "function\0file\0". */
#define SITE(var, groups, func) static SITE_SHARED(var, groups, func)
/* the same, seen by the other files of a test program (declared extern there) */
#define SITE_SHARED(var, groups, func) \
    struct perfgroup_site var __attribute__((aligned(8))) = { \
        PERFGROUP_ABI_VERSION, 0, __LINE__, groups "\0", func "\0" __FILE__, 0, 0 }

static inline int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spin for `ns` of this thread's CPU time. */
static _Thread_local volatile uint64_t burn_sink; /* per thread: burn() runs in many */
static inline void burn(int64_t ns)
{
    int64_t end = thread_cpu_ns() + ns;
    while (thread_cpu_ns() < end)
        for (int i = 0; i < 200; i++)
            burn_sink += (uint64_t)i;
}

/* CLOCK_MONOTONIC in ns (vDSO: no syscall). */
static inline int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spin for `ns` of wall time without a syscall (burn() reads the thread's CPU clock). */
static inline void spin_ns(int64_t ns)
{
    int64_t end = mono_ns() + ns;
    while (mono_ns() < end)
        ;
}

static inline void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static inline const struct perfgroup_stats *stats(struct perfgroup_snapshot *s, const char *g)
{
    const struct perfgroup_stats *st = perfgroup_snapshot_find(s, g);
    if (!st)
        FAIL("no group %s in the snapshot", g);
    return st;
}

#endif
