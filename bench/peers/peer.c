/* SPDX-License-Identifier: MIT */
/*
 * bench/peers/peer.c — one tiny non-inlined leaf called N times, timed with the thread CPU
 * clock; compiled once per instrumentation (bench/peers/CMakeLists.txt), run by run.py.
 *
 * Builds (one -D each): plain (none), PEER_PG (a perfgroup plugin: leaf is in group "leaf"),
 * PEER_FINSTR (-finstrument-functions on leaf only), PEER_XRAY (-fxray-instrument, every
 * function of >= 1 instruction; the driver is never instrumented).
 *
 * Modes (argv[1]); the loop runs N/10 untimed calls first, then N timed ones:
 *   bare     the calls alone (in an instrumented build: what that instrumentation costs)
 *   floor    the call between two inline rdtsc             (plain build)
 *   rdtscp   the call between two rdtscp                   (plain build)
 *   off      perfgroup_stop(), then the calls              (PEER_PG)
 *   reentry  the calls from inside a running "leaf" activation: every pair re-enters (PEER_PG)
 *   pair     the calls in explicit events of 100 000 calls (PEER_PG; recording or not is
 *            the environment's: PERFGROUP_OUTPUT / PERFGROUP_MODE)
 *   fdr      XRay FDR mode: __xray_log_init_mode("xray-fdr", every call recorded), patched,
 *            then finalized and flushed to the XRay log file        (PEER_XRAY)
 * Prints "ns_per_call=<x> calls=<total calls of leaf>" on stdout.
 * Usage: peer MODE [N]
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#if defined(PEER_PG)
#include "perfgroup.h"
#define LEAF_ATTR PERF_GROUP("leaf")
#define DRIVER_ATTR __attribute__((no_instrument_function))
#elif defined(PEER_XRAY)
/* <xray/xray_*.h> are C++ headers: the few extern "C" entry points used, as they declare them. */
enum { XRAY_LOG_INITIALIZED = 2, XRAY_LOG_FINALIZED = 4, XRAY_LOG_FLUSHED = 2, SUCCESS = 1 };
int __xray_log_select_mode(const char *mode);
int __xray_log_init_mode(const char *mode, const char *config);
int __xray_patch(void);
int __xray_unpatch(void);
int __xray_log_finalize(void);
int __xray_log_flushLog(void);
#define LEAF_ATTR __attribute__((xray_always_instrument))
#define DRIVER_ATTR __attribute__((xray_never_instrument))
#else
#define LEAF_ATTR
#define DRIVER_ATTR __attribute__((no_instrument_function))
#endif

#if defined(__clang__)
#define NOIPA_
#else
#define NOIPA_ __attribute__((noipa))
#endif

static volatile uint64_t sink;
static long total_calls;

/* The leaf: a call, an empty body the compiler may not remove, a return. */
__attribute__((noinline)) NOIPA_ LEAF_ATTR void peer_leaf(void)
{
    __asm__ __volatile__("" ::: "memory");
}

DRIVER_ATTR static double cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

DRIVER_ATTR static void calls(long n)
{
    for (long i = 0; i < n; i++)
        peer_leaf();
    total_calls += n;
}

DRIVER_ATTR static double timed(long n)
{
    calls(n / 10);
    double t0 = cpu_ns();
    calls(n);
    return cpu_ns() - t0;
}

DRIVER_ATTR static double floor_loop(long n, int rdtscp)
{
    uint64_t acc = 0;
    unsigned aux;
    double t0 = 0;
    for (int pass = 0; pass < 2; pass++) {
        long m = pass ? n : n / 10;
        if (pass)
            t0 = cpu_ns();
        for (long i = 0; i < m; i++) {
            uint64_t a = rdtscp ? __rdtscp(&aux) : __rdtsc();
            peer_leaf();
            acc += (rdtscp ? __rdtscp(&aux) : __rdtsc()) - a;
        }
        total_calls += m;
    }
    sink += acc;
    return cpu_ns() - t0;
}

#if defined(PEER_PG)
enum { EVENT_CALLS = 100000 };

DRIVER_ATTR static void event_calls(long n)
{
    for (long done = 0; done < n; done += EVENT_CALLS) {
        long m = n - done < EVENT_CALLS ? n - done : EVENT_CALLS;
        perfgroup_event_begin("peer");
        calls(m);
        perfgroup_event_end();
    }
}

/* The driver is itself in group "leaf": while it runs, every leaf call re-enters. */
__attribute__((noinline)) NOIPA_ PERF_GROUP("leaf") double reentry_driver(long n)
{
    return timed(n);
}
#endif

int main(int argc, char **argv) DRIVER_ATTR;
int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "bare";
    long n = argc > 2 ? atol(argv[2]) : 20000000;
    double t;
    if (!strcmp(mode, "bare"))
        t = timed(n);
    else if (!strcmp(mode, "floor"))
        t = floor_loop(n, 0);
    else if (!strcmp(mode, "rdtscp"))
        t = floor_loop(n, 1);
#if defined(PEER_PG)
    else if (!strcmp(mode, "off")) {
        perfgroup_stop();
        t = timed(n);
    } else if (!strcmp(mode, "reentry")) {
        perfgroup_event_begin("peer");
        t = reentry_driver(n);
        perfgroup_event_end();
    } else if (!strcmp(mode, "pair")) {
        event_calls(n / 10);
        double t0 = cpu_ns();
        event_calls(n);
        t = cpu_ns() - t0;
    }
#endif
#if defined(PEER_XRAY)
    else if (!strcmp(mode, "fdr")) {
        /* Every call recorded: no duration threshold (the default elides calls < 5 us). */
        if (__xray_log_select_mode("xray-fdr") != 0) {
            fprintf(stderr, "peer: __xray_log_select_mode(xray-fdr) failed\n");
            return 1;
        }
        int st = __xray_log_init_mode(
            "xray-fdr", "buffer_size=1048576:buffer_max=1024:func_duration_threshold_us=0");
        if (st != XRAY_LOG_INITIALIZED) {
            fprintf(stderr, "peer: __xray_log_init_mode: %d\n", st);
            return 1;
        }
        if (__xray_patch() != SUCCESS) {
            fprintf(stderr, "peer: __xray_patch failed\n");
            return 1;
        }
        t = timed(n);
        __xray_unpatch();
        if (__xray_log_finalize() != XRAY_LOG_FINALIZED ||
            __xray_log_flushLog() != XRAY_LOG_FLUSHED) {
            fprintf(stderr, "peer: XRay finalize/flush failed\n");
            return 1;
        }
    }
#endif
    else {
        fprintf(stderr, "peer: mode %s not in this build\n", mode);
        return 2;
    }
    printf("ns_per_call=%.3f calls=%ld\n", t / (double)n, total_calls);
    return 0;
}
