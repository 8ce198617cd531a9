/* SPDX-License-Identifier: MIT */
/*
 * tests/lite/tree.c — the program of lite.tree (tree_outputs.py drives it): groups nested
 * outer -> middle -> inner in hot events, so that in the default (adaptive) mode middle and
 * inner run in lite frames and first start after the event's switch to them (their parents
 * are learnt at the transitions the runtime sees: docs/accounting.md "Lite frames", the call
 * tree). Built with the GCC plugin (the one that emits lite frames) at -O2.
 *
 * Two phases, as tests/lite/lite.c's (whose bound the driver applies):
 *   hooks  CAL_EVENTS events; in each W (0.2 us of its own) calls E (0.3 us) CAL_CALLS times,
 *          and the same loops without groups, interleaved: what a call pair's hooks cost in
 *          this mode (exact mode charges them to the frames around each call);
 *   tree   EVENTS events "tree"; in each the event's own code calls warm (0.3 us) WARM times
 *          with 1 us of its own between (the switch to lite frames happens there: 64 fast
 *          starts; top's self time ~8 % of the event), then outer once: OUTER_ITERS times 0.3 us of its own and a call of middle
 *          (0.3 us, INNER calls of inner (0.3 us each), 0.2 us);
 *   sparse SPARSE_EVENTS events "sparse": the same with outer calling middle SPARSE_MIDDLE
 *          times only, each calling inner SPARSE_INNER times: the runtime rarely sees one of
 *          middle's few transitions there, so middle's parent in most of these events is the
 *          one its thread learnt in the tree events (perfgroup__lite_fold's fallback).
 * Prints per phase and group (top, W, E, warm, outer, middle, inner) the snapshot's charged
 * CPU, self time and activations, the events the phase estimated, and how many of its events
 * were slow enough to stay exact. With PERFGROUP_OUTPUT the run is recorded.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "perfgroup.h"
#include "../runtime/task.h"
#include "../bounds/bounds.h"
#include "../bounds/modes.h"

#define NOINLINE __attribute__((noinline))
#define CAL_EVENTS 20
#define CAL_CALLS 20000
#define EVENTS 40
#define WARM 400
#define OUTER_ITERS 2000
#define INNER 4
#define SPARSE_EVENTS 20
#define SPARSE_MIDDLE 3
#define SPARSE_INNER 600

static double iters_per_ns;

PERF_GROUP_NONE static void burn_ns(double ns) { pg_burn_iters((uint64_t)(ns * iters_per_ns)); }

PERF_GROUP_NONE static uint64_t cpu_ns(void) { return (uint64_t)thread_cpu_ns(); }

/* ---- the hooks phase (lite.c's) ------------------------------------------------------------ */
PERF_GROUP_NONE NOINLINE static void fe_plain(void) { burn_ns(300); }
PERF_GROUP_NONE NOINLINE static void fw_plain(void)
{
    for (int i = 0; i < CAL_CALLS; i++) {
        burn_ns(200);
        fe_plain();
    }
}
PERF_GROUP_NONE NOINLINE static void fe_plain_loop(void)
{
    for (int i = 0; i < CAL_CALLS; i++)
        fe_plain();
}
PERF_GROUP("E") NOINLINE static void fe(void) { burn_ns(300); }
PERF_GROUP("W") NOINLINE static void fw(void)
{
    for (int i = 0; i < CAL_CALLS; i++) {
        burn_ns(200);
        fe();
    }
}

/* ---- the tree ------------------------------------------------------------------------------ */
PERF_GROUP("warm") NOINLINE static void warm(void) { burn_ns(300); }
PERF_GROUP("inner") NOINLINE static void inner(void) { burn_ns(300); }
PERF_GROUP("middle") NOINLINE static void middle(void)
{
    burn_ns(300);
    for (int j = 0; j < INNER; j++)
        inner();
    burn_ns(200);
}
PERF_GROUP("outer") NOINLINE static void outer(void)
{
    for (int i = 0; i < OUTER_ITERS; i++) {
        burn_ns(300);
        middle();
    }
}
PERF_GROUP("middle") NOINLINE static void middle_sparse(void)
{
    burn_ns(300);
    for (int j = 0; j < SPARSE_INNER; j++)
        inner();
    burn_ns(200);
}
PERF_GROUP("outer") NOINLINE static void outer_sparse(void)
{
    for (int i = 0; i < SPARSE_MIDDLE; i++) {
        burn_ns(300);
        middle_sparse();
    }
}
PERF_GROUP_NONE static void tree_event(const char *name, void (*fn)(void))
{
    perfgroup_event_begin(name);
    for (int i = 0; i < WARM; i++) {
        burn_ns(1000);
        warm();
    }
    fn();
    perfgroup_event_end();
}

/* ---- per phase, what the snapshots say -------------------------------------------------------- */
static const char *groups[] = {"top", "W", "E", "warm", "outer", "middle", "inner"};
#define NG (sizeof groups / sizeof *groups)
static double walls[EVENTS];

PERF_GROUP_NONE static double wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

PERF_GROUP_NONE static void print_phase(const char *phase, struct perfgroup_snapshot *before, int n)
{
    struct perfgroup_snapshot *after = perfgroup_snapshot_take();
    struct perfgroup_snapshot *d = perfgroup_snapshot_diff(after, before);
    double starts = 0;
    for (size_t i = 1; i < NG; i++) {
        const struct perfgroup_stats *s = perfgroup_snapshot_find(d, groups[i]);
        starts += s ? (double)s->activations : 0;
    }
    int slow = 0;
    for (int e = 0; e < n; e++)
        slow += pg_event_may_stay_exact(walls[e], starts / n);
    printf("%s slow %d\n", phase, slow);
    for (size_t i = 0; i < NG; i++) {
        const struct perfgroup_stats *s = perfgroup_snapshot_find(d, groups[i]);
        if (s)
            printf("%s %s %llu %llu %llu\n", phase, groups[i], (unsigned long long)s->cpu_ns,
                   (unsigned long long)s->self_ns, (unsigned long long)s->activations);
    }
    printf("%s estimated %llu\n", phase, (unsigned long long)perfgroup_snapshot_estimated(d));
    perfgroup_snapshot_free(after);
    perfgroup_snapshot_free(d);
}

int main(void)
{
    uint64_t t0 = cpu_ns();
    pg_burn_iters(20000000);
    iters_per_ns = 20000000.0 / (double)(cpu_ns() - t0);
    struct perfgroup_snapshot *s0 = perfgroup_snapshot_take();
    uint64_t w_plain = 0, e_plain = 0;
    for (int e = 0; e < CAL_EVENTS; e++) {
        uint64_t c0 = cpu_ns();
        fw_plain();
        uint64_t c1 = cpu_ns();
        fe_plain_loop();
        w_plain += c1 - c0;
        e_plain += cpu_ns() - c1;
        double w0 = wall_ns();
        perfgroup_event_begin("hooks");
        fw();
        perfgroup_event_end();
        walls[e] = wall_ns() - w0;
    }
    printf("plain %llu %llu\n", (unsigned long long)w_plain, (unsigned long long)e_plain);
    print_phase("hooks", s0, CAL_EVENTS);
    perfgroup_snapshot_free(s0);
    s0 = perfgroup_snapshot_take();
    for (int e = 0; e < EVENTS; e++) {
        double w0 = wall_ns();
        tree_event("tree", outer);
        walls[e] = wall_ns() - w0;
    }
    print_phase("tree", s0, EVENTS);
    perfgroup_snapshot_free(s0);
    s0 = perfgroup_snapshot_take();
    for (int e = 0; e < SPARSE_EVENTS; e++) {
        double w0 = wall_ns();
        tree_event("sparse", outer_sparse);
        walls[e] = wall_ns() - w0;
    }
    print_phase("sparse", s0, SPARSE_EVENTS);
    perfgroup_snapshot_free(s0);
    printf("shape %d %d %d %d %d %d %d %d %d\n", CAL_EVENTS, CAL_CALLS, EVENTS, WARM, OUTER_ITERS,
           INNER, SPARSE_EVENTS, SPARSE_MIDDLE, SPARSE_INNER);
    return 0;
}
