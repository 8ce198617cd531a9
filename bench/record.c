/* SPDX-License-Identifier: MIT */
/*
 * bench/record.c — what recording costs a hooked call and an event, through the shared
 * runtime (hooks through the PLT, as in bench/hooks.c), in ns per call/event.
 *
 *   bare        the call alone                                               (d)
 *   floor       the call between two inline rdtsc                            (e)
 *   pair        outermost stopwatch pair in an explicit event, not recording
 *   trace       the same pair recording in trace mode, steady state: a 16 MiB file that
 *               wraps every ~0.5 M pairs (recycling, CLOCK/DROPPED records included)
 *   trace_fresh the same, first pass through a fresh 256 MiB file (first-touch page
 *               faults of the file's pages included)
 *   ev_off      one explicit event holding one pair, not recording
 *   ev_stats    the same event recording in stats mode (one EVENT record per event)
 *
 * Recording is switched per configuration (perfgroup_record_open/close, untimed); files go
 * to $TMPDIR (default /tmp) and are removed. Repetitions are interleaved in rotated order,
 * timed with the thread CPU clock; medians are printed. Usage: record [N] [reps]
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "bench.h"
#include "perfgroup.h"
#include "perfgroup/abi.h"

static struct perfgroup_site site_a __attribute__((aligned(8))) =
    {PERFGROUP_ABI_VERSION, 0, 1, "bench\0", "leaf_a\0bench.c", 0, 0};

enum { BARE, FLOOR, PAIR, TRACE, TRACE_FRESH, EV_OFF, EV_STATS, NCONF };
static const char *names[NCONF] = {"bare", "floor", "pair", "trace", "trace_fresh",
                                   "ev_off", "ev_stats"};
static char path[512];

static void rec_open(int mode, uint64_t size) {
    int rc = perfgroup_record_open(path, mode, size, 0);
    if (rc) {
        fprintf(stderr, "perfgroup_record_open(%s): %d\n", path, rc);
        exit(1);
    }
}

static void rec_close(void) {
    perfgroup_record_close();
    unlink(path);
}

static double pairs(long n) {
    perfgroup_event_begin("bench");
    double t = bench_hooked_ns(&site_a, n);
    perfgroup_event_end();
    return t;
}

static double events(long n) {
    uint64_t tok;
    double t0 = bench_now_ns();
    for (long i = 0; i < n; i++) {
        perfgroup_event_begin("bench");
        tok = __perfgroup_enter(&site_a);
        bench_leaf();
        __perfgroup_exit(&site_a, tok);
        perfgroup_event_end();
    }
    return bench_now_ns() - t0;
}

static double run(int conf, long n) {
    double t = 0;
    switch (conf) {
    case BARE:
        t = bench_bare_ns(n);
        break;
    case FLOOR:
        t = bench_floor_ns(n);
        break;
    case PAIR:
        t = pairs(n);
        break;
    case TRACE:
        rec_open(PERFGROUP_RECORD_TRACE, 16u << 20);
        pairs(n); /* untimed: fill the file once, so the timed run is the steady state */
        t = pairs(n);
        rec_close();
        break;
    case TRACE_FRESH:
        rec_open(PERFGROUP_RECORD_TRACE, 256u << 20);
        t = pairs(n);
        rec_close();
        break;
    case EV_OFF:
        t = events(n / 10);
        n /= 10;
        break;
    default: /* EV_STATS */
        rec_open(PERFGROUP_RECORD_STATS, 16u << 20);
        t = events(n / 10);
        n /= 10;
        rec_close();
        break;
    }
    return t / (double)n;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 2000000;
    int reps = argc > 2 ? atoi(argv[2]) : 11;
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/bench-record.%d.pgm", tmp && *tmp ? tmp : "/tmp",
             (int)getpid());
    if (n * 29 > (200l << 20)) {
        fprintf(stderr, "N too large for trace_fresh's 256 MiB file\n");
        return 2;
    }
    double med[NCONF];
    bench_interleaved(NCONF, run, n, reps, med);
    printf("%-12s %9s %12s\n", "config", "ns/call", "over bare");
    for (int c = 0; c < NCONF; c++)
        printf("%-12s %9.2f %12.2f\n", names[c], med[c], med[c] - med[BARE]);
    double fl = med[FLOOR] - med[BARE];
    printf("\ntrace pair / floor:                    %.2f   (target <= 1.3)\n",
           med[TRACE] / med[FLOOR]);
    printf("trace pair over bare / floor over bare: %.2f\n", (med[TRACE] - med[BARE]) / fl);
    printf("recording adds to a pair (steady):      %+.2f ns\n", med[TRACE] - med[PAIR]);
    printf("recording adds to a pair (fresh file):  %+.2f ns\n", med[TRACE_FRESH] - med[PAIR]);
    printf("stats mode adds per event:              %+.2f ns (event: %.2f ns)\n",
           med[EV_STATS] - med[EV_OFF], med[EV_OFF]);
    printf("(N=%ld calls, N/10 events x %d interleaved repetitions, medians of thread CPU "
           "time)\n", n, reps);
    return 0;
}
