/* SPDX-License-Identifier: MIT */
/*
 * bench/hooks.c — cost of an enter/exit pair around a tiny non-inlined call, in ns per call.
 *
 *   bare      the call alone                                              (d)
 *   floor     the call between two inline rdtsc                           (e)
 *   empty     the call between two calls of hooks that return at once (PLT, like the runtime)
 *   off       perfgroup_stop(): the real hooks, switched off              (a)
 *   reentry   the group already has a running stopwatch                   (b)
 *   pair      outermost stopwatch pair inside an explicit event           (c)
 *   implicit  outermost pair with no event API: each pair is an implicit event, committed
 *   inline    the group already runs, and the call is made as the plugins emit it: the inline
 *             re-entry check (include/perfgroup/abi.h) first, no hook call at all
 *   lite      a transition (the group does not run) in a hot event, made as the plugins emit
 *             it (ABI 3, abi.h "Lite frames"): an inline lite frame, one in PERFGROUP_LITE_R
 *             through the runtime (its countdown); the calls below a frame of another group,
 *             the event made hot first by 256 hook pairs. With PERFGROUP_ACCOUNTING=exact (or
 *             PERFGROUP_LITE_R=0) no lite frame is made: every call goes to the hooks.
 *
 * The hook pairs are called as the plugins call them (ABI 2): the exit hook only for a token
 * that is not 0. In the default (adaptive) accounting `pair`'s event goes hot after its first
 * 64 fast starts, and its calls of the hooks then are the runtime's frames of a lite event
 * (segment-accounted); PERFGROUP_ACCOUNTING=exact measures the exact pair.
 * Each configuration runs N calls per repetition; repetitions are interleaved (rotated
 * order) and timed with the thread's CPU clock; the median per configuration is printed,
 * with overheads over `bare` and the ratio of (c) to the floor. Usage: hooks [N] [reps]
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#include "bench.h"
#include "perfgroup.h"
#include "perfgroup/abi.h"

uint64_t empty_enter(struct perfgroup_site *s);
void empty_exit(struct perfgroup_site *s, uint64_t t);

/* registered as a module (main): the runtime gives them their re-entry keys */
static struct perfgroup_site sites[3] __attribute__((aligned(8))) = {
    {PERFGROUP_ABI_VERSION, 0, 1, "bench\0", "leaf_a\0bench.c", 0, 0},
    {PERFGROUP_ABI_VERSION, 0, 2, "bench\0", "outer\0bench.c", 0, 0},
    {PERFGROUP_ABI_VERSION, 0, 3, "driver\0", "driver\0bench.c", 0, 0},
};
#define site_a sites[0]
#define site_outer sites[1]
#define site_driver sites[2]

enum { BARE, FLOOR, EMPTY, OFF, REENTRY, PAIR, IMPLICIT, INLINE, LITE, NCONF };
static const char *names[NCONF] = {"bare",  "floor",    "empty", "off",
                                   "reentry", "pair", "implicit", "inline", "lite"};

/* The call as the plugins emit it (ABI 3: plugin-gcc/instrument.cc add_enter, add_exit; the
 * Clang plugin's is the same sequence): the re-entry check, else a lite frame if exactly one
 * group with a bit starts, the call is below the innermost frame and the thread has more
 * than one lite transition left; else the hooks. */
__attribute__((noinline)) static double bench_lite_ns(struct perfgroup_site *site, long n)
{
    double t0 = bench_now_ns();
    for (long i = 0; i < n; i++) {
        uint64_t tok = 0, smask = 0, stop = 0;
        uintptr_t ssp = 0;
        uint64_t both = __atomic_load_n(&site->key, __ATOMIC_RELAXED) | PERFGROUP_TLS_CUR.mask;
        uintptr_t at = (uintptr_t)__builtin_dwarf_cfa(), csp = PERFGROUP_TLS_CUR.sp;
        if (both != ~0ull) {
            uint64_t s = ~both;
            struct perfgroup_lite *ctl;
            uint64_t left;
            if ((s & (s - 1)) == 0 && s < PERFGROUP_TOKEN_LITE && at <= csp &&
                (left = (ctl = PERFGROUP_TLS_CUR.ctl)->left) > 1) {
                smask = PERFGROUP_TLS_CUR.mask;
                ssp = csp;
                stop = PERFGROUP_TLS_CUR.top;
                ctl->left = left - 1;
                PERFGROUP_TLS_CUR.sp = at;
                PERFGROUP_TLS_CUR.mask = smask | s;
                unsigned b = (unsigned)__builtin_ctzll(s);
                PERFGROUP_TLS_CUR.top = b;
                ctl->acts[b]++;
                tok = PERFGROUP_TOKEN_LITE;
            } else {
                tok = __perfgroup_enter(site);
            }
        } else if (at > csp) {
            tok = __perfgroup_enter(site);
        }
        bench_leaf();
        if (tok == PERFGROUP_TOKEN_LITE) {
            struct perfgroup_lite *ctl = PERFGROUP_TLS_CUR.ctl;
            uint64_t left = ctl->left;
            if (left > 1) {
                ctl->left = left - 1;
                PERFGROUP_TLS_CUR.top = stop;
                PERFGROUP_TLS_CUR.mask = smask;
                PERFGROUP_TLS_CUR.sp = ssp;
            } else {
                __perfgroup_exit_lite(site, smask, ssp, stop);
            }
        } else if (tok != 0) {
            __perfgroup_exit(site, tok);
        }
    }
    return bench_now_ns() - t0;
}

/* The call as the plugins emit it. Not inlined: its CFA is below the frame that started the
 * group (the caller's enter hook), as a callee's is. */
__attribute__((noinline)) static double bench_inline_ns(struct perfgroup_site *site, long n)
{
    double t0 = bench_now_ns();
    for (long i = 0; i < n; i++) {
        uint64_t tok = 0;
        if ((__atomic_load_n(&site->key, __ATOMIC_RELAXED) | PERFGROUP_TLS_CUR.mask) != ~0ull ||
            (uintptr_t)__builtin_dwarf_cfa() > PERFGROUP_TLS_CUR.sp)
            tok = __perfgroup_enter(site);
        bench_leaf();
        if (tok != 0)
            __perfgroup_exit(site, tok);
    }
    return bench_now_ns() - t0;
}

static double run(int conf, long n)
{
    double t;
    switch (conf) {
    case BARE:
        t = bench_bare_ns(n);
        break;
    case FLOOR:
        t = bench_floor_ns(n);
        break;
    case EMPTY: {
        double t0 = bench_now_ns();
        for (long i = 0; i < n; i++) {
            uint64_t tok = empty_enter(&site_a);
            bench_leaf();
            if (tok != 0) /* never: an empty hook pair is one call, as the plugins call it */
                empty_exit(&site_a, tok);
        }
        t = bench_now_ns() - t0;
        break;
    }
    case OFF:
        perfgroup_stop();
        t = bench_hooked_ns(&site_a, n);
        perfgroup_start();
        break;
    case REENTRY: {
        perfgroup_event_begin("bench");
        uint64_t outer = __perfgroup_enter(&site_outer); /* group "bench" now running */
        t = bench_hooked_ns(&site_a, n);
        __perfgroup_exit(&site_outer, outer);
        perfgroup_event_end();
        break;
    }
    case INLINE: {
        perfgroup_event_begin("bench");
        uint64_t outer = __perfgroup_enter(&site_outer);
        t = bench_inline_ns(&site_a, n);
        __perfgroup_exit(&site_outer, outer);
        perfgroup_event_end();
        break;
    }
    case LITE: {
        perfgroup_event_begin("bench");
        uint64_t outer = __perfgroup_enter(&site_driver); /* the calls are below its frame */
        (void)bench_hooked_ns(&site_a, 256);             /* the event goes hot */
        t = bench_lite_ns(&site_a, n);
        __perfgroup_exit(&site_driver, outer);
        perfgroup_event_end();
        break;
    }
    case PAIR:
        perfgroup_event_begin("bench");
        t = bench_hooked_ns(&site_a, n);
        perfgroup_event_end();
        break;
    default: /* IMPLICIT */
        t = bench_hooked_ns(&site_a, n);
        break;
    }
    return t / (double)n;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 5000000;
    int reps = argc > 2 ? atoi(argv[2]) : 11;
    double med[NCONF];
    __perfgroup_register_module(PERFGROUP_ABI_VERSION, &sites[0], &sites[3]);
    bench_interleaved(NCONF, run, n, reps, med);
    printf("%-10s %9s %12s\n", "config", "ns/call", "over bare");
    for (int c = 0; c < NCONF; c++)
        printf("%-10s %9.2f %12.2f\n", names[c], med[c], med[c] - med[BARE]);
    double floor_ov = med[FLOOR] - med[BARE];
    printf("\n(c) pair over bare / floor over bare: %.2f   (target <= 1.15)\n",
           (med[PAIR] - med[BARE]) / floor_ov);
    printf("(b) reentry over empty hooks:         %+.2f ns (target <= +3; %+.2f ns over bare)\n",
           med[REENTRY] - med[EMPTY], med[REENTRY] - med[BARE]);
    printf("(a) off over empty hooks:             %+.2f ns (target <= +1)\n", med[OFF] - med[EMPTY]);
    printf("implicit event per pair:              %+.2f ns over pair\n", med[IMPLICIT] - med[PAIR]);
    printf("inline re-entry check:                %+.2f ns over bare (%+.2f ns under reentry)\n",
           med[INLINE] - med[BARE], med[REENTRY] - med[INLINE]);
    printf("lite transition pair (hot event):     %+.2f ns over bare, %.2f x the floor's\n",
           med[LITE] - med[BARE], (med[LITE] - med[BARE]) / floor_ov);
    printf("(N=%ld calls x %d interleaved repetitions, medians of thread CPU time)\n", n, reps);
    return 0;
}
