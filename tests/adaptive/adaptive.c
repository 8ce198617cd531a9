/* SPDX-License-Identifier: MIT */
/*
 * tests/adaptive/adaptive.c — the adaptive accounting against exact mode in the same binary
 * (docs/accounting.md, "Hot threads: estimated starts"). Built with the real plugins at -O2.
 *
 * The driver runs itself three times as a child: PERFGROUP_ACCOUNTING=exact, =adaptive,
 * =exact. Each child runs two phases and prints, per group, its CPU time, activations and
 * jank histogram (one snapshot diff per phase), and the count of events that estimated:
 *   mix   400 events; in each, A (0.3 us of its own per iteration) calls B 500 times (1.2 us,
 *         a re-entry of B every 4th call), B calls C every 2nd time (1 us), A calls D every
 *         8th iteration (0.6 us): ~800 stopwatches per event, one per ~1.4 us: hot. (Pieces
 *         of a microsecond or more: what the hooks themselves add to a group differs between
 *         the modes by a rdtsc, ~10 ns, which is 3 % of a 0.3 us piece.)
 *   jank  20 events of 20,000 short calls of J (~0.1 us); the 10th event's last call of J
 *         does 40 ms of CPU (the thread's CPU clock around it).
 *   stretch  the same events, but in the 10th 100 ms run outside any group, between two
 *         calls of J: a hook-free stretch before an estimated start, which the ticker's coarse
 *         clock (runtime/ticker.c) must catch — else J's start is estimated 100 ms early
 *         (caught while the longest tick interval stays below 56 ms: the check's bound).
 * Checks (exit 1 on any failure):
 *   - activations as called, in every run (A 1, B 500, C 250, D 63 per event; J 20,000);
 *   - each group's share of `top` in the adaptive run within 2 % of the exact runs' mean
 *     (0.5 points for a group under 5 %), beyond the spread of the two exact runs;
 *   - jank of J in every run: one event above 16 ms, in the bucket of the long activation's
 *     own CPU time (40 ms: (32, 64]) or the next;
 *   - stretch: J in no event above 2^b ms, 2^b >= 8 ms + the longest interval between two
 *     ticks (perfgroup_tick_max_ns: a shorter stretch may go unseen), in every run;
 *   - the adaptive run — the default: PERFGROUP_ACCOUNTING unset — estimated in every event
 *     (>= 440 events), the exact runs in none.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perfgroup.h"
#include "../runtime/task.h"
#include "../bounds/bounds.h"
#include "../bounds/modes.h"

#define NOINLINE __attribute__((noinline))
#define EVENTS 400
#define ITERS 500
#define JEVENTS 20
#define JCALLS 20000

static double iters_per_ns;

#define cpu_ns() ((uint64_t)thread_cpu_ns())

PERF_GROUP_NONE static void burn_ns(double ns) { pg_burn_iters((uint64_t)(ns * iters_per_ns)); }

PERF_GROUP("C") NOINLINE static void fc(void) { burn_ns(1000); }
PERF_GROUP("D") NOINLINE static void fd(void) { burn_ns(600); }
PERF_GROUP("B") NOINLINE static void fb(int i, int depth)
{
    burn_ns(depth ? 100 : 1200);
    if (depth == 0 && (i & 3) == 0)
        fb(i, 1); /* a re-entry: B runs */
    if (depth == 0 && (i & 1) == 0)
        fc();
}
PERF_GROUP("A") NOINLINE static void fa(void)
{
    for (int i = 0; i < ITERS; i++) {
        burn_ns(300);
        fb(i, 0);
        if ((i & 7) == 0)
            fd();
    }
}
PERF_GROUP("J") NOINLINE static void fj(int n) { pg_burn_iters((uint64_t)n); }

/* ---- child: run the phases, print what the snapshots say -------------------------------- */

static const char *groups[] = {"top", "A", "B", "C", "D", "J"};
#define NG (sizeof groups / sizeof *groups)

/* Each event's wall time, of the phase running: an event slow enough may stay exact
 * (pg_event_may_stay_exact, bounds.h). */
static double walls[EVENTS];

PERF_GROUP_NONE static double wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The phase's groups (its events' starts: the activations of groups[first..last]) over n
 * events; prints the snapshot's figures per group, its estimated events, and how many of
 * its events were slow enough to stay exact. */
PERF_GROUP_NONE static void print_phase(const char *phase, struct perfgroup_snapshot *before,
                                        int n, size_t first, size_t last)
{
    struct perfgroup_snapshot *after = perfgroup_snapshot_take();
    struct perfgroup_snapshot *d = perfgroup_snapshot_diff(after, before);
    double starts = 0;
    for (size_t i = first; i <= last; i++) {
        const struct perfgroup_stats *s = perfgroup_snapshot_find(d, groups[i]);
        starts += s ? (double)s->activations : 0;
    }
    int slow = 0;
    for (int e = 0; e < n; e++)
        slow += pg_event_may_stay_exact(walls[e], starts / n);
    printf("%s slow %d\n", phase, slow);
    for (size_t i = 0; i < NG; i++) {
        const struct perfgroup_stats *s = perfgroup_snapshot_find(d, groups[i]);
        if (!s)
            continue;
        printf("%s %s %llu %llu", phase, groups[i], (unsigned long long)s->cpu_ns,
               (unsigned long long)s->activations);
        for (int j = 0; j < PERFGROUP_JANK_BUCKETS; j++)
            printf(" %llu", (unsigned long long)s->jank[j]);
        printf("\n");
    }
    printf("%s estimated %llu\n", phase, (unsigned long long)perfgroup_snapshot_estimated(d));
    perfgroup_snapshot_free(after);
    perfgroup_snapshot_free(d);
}

PERF_GROUP_NONE static int child(void)
{
    uint64_t t0 = cpu_ns();
    pg_burn_iters(20000000);
    iters_per_ns = 20000000.0 / (double)(cpu_ns() - t0);
    struct perfgroup_snapshot *s0 = perfgroup_snapshot_take();
    for (int e = 0; e < EVENTS; e++) {
        double w0 = wall_ns();
        perfgroup_event_begin("mix");
        fa();
        perfgroup_event_end();
        walls[e] = wall_ns() - w0;
    }
    print_phase("mix", s0, EVENTS, 1, 4); /* A, B, C, D */
    perfgroup_snapshot_free(s0);
    s0 = perfgroup_snapshot_take();
    for (int e = 0; e < JEVENTS; e++) {
        double w0 = wall_ns();
        perfgroup_event_begin("jank");
        for (int i = 0; i < JCALLS; i++)
            fj(30);
        if (e == JEVENTS / 2) { /* one long activation among the hot short ones */
            uint64_t c0 = cpu_ns();
            fj((int)(40e6 * iters_per_ns));
            printf("long %llu\n", (unsigned long long)(cpu_ns() - c0));
        }
        perfgroup_event_end();
        walls[e] = wall_ns() - w0;
    }
    print_phase("jank", s0, JEVENTS, NG - 1, NG - 1); /* J */
    perfgroup_snapshot_free(s0);
    s0 = perfgroup_snapshot_take();
    for (int e = 0; e < JEVENTS; e++) {
        double w0 = wall_ns();
        perfgroup_event_begin("stretch");
        for (int i = 0; i < JCALLS; i++)
            fj(30);
        if (e == JEVENTS / 2) { /* 100 ms in no group, then J again */
            pg_burn_iters((uint64_t)(100e6 * iters_per_ns));
            for (int i = 0; i < 1000; i++)
                fj(30);
        }
        perfgroup_event_end();
        walls[e] = wall_ns() - w0;
    }
    print_phase("stretch", s0, JEVENTS, NG - 1, NG - 1);
    perfgroup_snapshot_free(s0);
    printf("tickmax %llu\n", (unsigned long long)perfgroup_tick_max_ns());
    return 0;
}

/* ---- driver --------------------------------------------------------------------------------- */

struct run {
    double cpu[2][NG];          /* [phase][group] */
    uint64_t acts[2][NG];
    uint64_t jank[NG][PERFGROUP_JANK_BUCKETS];
    uint64_t stretch[PERFGROUP_JANK_BUCKETS]; /* J's jank in the stretch phase */
    uint64_t estimated[3];
    double slow[3];             /* events slow enough to stay exact (pg_event_may_stay_exact) */
    double long_ms, tick_max_ms;
};

PERF_GROUP_NONE static int run_child(const char *self, const char *mode, struct run *r)
{
    pid_t pid;
    FILE *f = pg_spawn_mode(self, mode, &pid);
    if (!f)
        return -1;
    char line[512], ph[16], g[16];
    memset(r, 0, sizeof *r);
    while (fgets(line, sizeof line, f)) {
        unsigned long long v[2 + PERFGROUP_JANK_BUCKETS];
        double lm;
        if (sscanf(line, "long %lf", &lm) == 1) {
            r->long_ms = lm / 1e6;
            continue;
        }
        if (sscanf(line, "tickmax %lf", &lm) == 1) {
            r->tick_max_ms = lm / 1e6;
            continue;
        }
        if (sscanf(line, "%15s slow %lf", ph, &lm) == 2) {
            r->slow[strcmp(ph, "jank") == 0 ? 1 : strcmp(ph, "stretch") == 0 ? 2 : 0] = lm;
            continue;
        }
        if (sscanf(line, "%15s estimated %llu", ph, &v[0]) == 2) {
            r->estimated[strcmp(ph, "jank") == 0 ? 1 : strcmp(ph, "stretch") == 0 ? 2 : 0] = v[0];
            continue;
        }
        int n = sscanf(line, "%15s %15s %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
                       ph, g, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9],
                       &v[10], &v[11]);
        if (n != 4 + PERFGROUP_JANK_BUCKETS)
            continue;
        if (strcmp(ph, "stretch") == 0) {
            if (strcmp(g, "J") == 0)
                memcpy(r->stretch, &v[2], sizeof r->stretch);
            continue;
        }
        int k = strcmp(ph, "jank") == 0;
        for (size_t i = 0; i < NG; i++)
            if (strcmp(g, groups[i]) == 0) {
                r->cpu[k][i] = (double)v[0];
                r->acts[k][i] = v[1];
                if (k)
                    memcpy(r->jank[i], &v[2], sizeof r->jank[i]);
            }
    }
    return pg_spawn_end(f, pid);
}

#define CHECK(cond, ...) pg_check((cond), __VA_ARGS__)

PERF_GROUP_NONE static void check_run(const char *name, const struct run *r, int adaptive)
{
    static const uint64_t want[NG] = {EVENTS, EVENTS, EVENTS * ITERS, EVENTS * ITERS / 2,
                                      EVENTS * ((ITERS + 7) / 8), 0};
    for (size_t i = 1; i < NG - 1; i++)
        CHECK(r->acts[0][i] == want[i], "%s: %s activations %llu, called %llu", name, groups[i],
              (unsigned long long)r->acts[0][i], (unsigned long long)want[i]);
    CHECK(r->acts[1][NG - 1] == (uint64_t)JEVENTS * JCALLS + 1, "%s: J activations %llu, called %d",
          name, (unsigned long long)r->acts[1][NG - 1], JEVENTS * JCALLS + 1);
    /* the bucket of the long activation's own CPU time (the thread's clock around it): its
     * event's J is that plus the short calls', in that bucket or the next */
    const uint64_t *j = r->jank[NG - 1];
    int b = (int)floor(log2(r->long_ms));
    pg_check(b >= 4 && b + 2 < PERFGROUP_JANK_BUCKETS && j[4] == 1 && j[b] == 1 && j[b + 2] == 0,
          "%s: J's long event (%.1f ms of CPU) not alone above 16 ms, in (%d, %d] ms: >16 %llu, "
          ">32 %llu, >64 %llu, >128 %llu", name, r->long_ms, 1 << b, 4 << b,
          (unsigned long long)j[4], (unsigned long long)j[5], (unsigned long long)j[6],
          (unsigned long long)j[7]);
    /* a stretch the coarse clock did not see is shorter than its longest tick interval */
    int sb = 3;
    while (sb + 1 < PERFGROUP_JANK_BUCKETS && (double)(1 << sb) < 8 + r->tick_max_ms)
        sb++;
    pg_check(r->stretch[sb] == 0,
          "%s: J charged the 100 ms stretch outside any group: an event above %d ms (longest tick "
          "interval %.2f ms): >8 %llu, >16 %llu, >32 %llu, >64 %llu", name, 1 << sb,
          r->tick_max_ms, (unsigned long long)r->stretch[3], (unsigned long long)r->stretch[4],
          (unsigned long long)r->stretch[5], (unsigned long long)r->stretch[6]);
    /* the ticker runs by default (two ticks at least in these phases), not in exact mode */
    CHECK(adaptive ? r->tick_max_ms > 0 : r->tick_max_ms == 0,
          "%s: longest tick interval %.2f ms (a ticker %s)", name, r->tick_max_ms,
          adaptive ? "expected" : "in exact mode");
    uint64_t est = r->estimated[0] + r->estimated[1] + r->estimated[2];
    /* every event estimates but those whose wall time was long enough for each of their
     * windows to take 64 x 2 us (pg_event_may_stay_exact, bounds.h): time stolen, a run queue,
     * a busy SMT sibling */
    if (adaptive)
        CHECK(r->estimated[0] + r->slow[0] >= EVENTS && r->estimated[1] + r->slow[1] >= JEVENTS &&
                  r->estimated[2] + r->slow[2] >= JEVENTS,
              "%s: events estimated %llu + %llu + %llu, want every one (%d + %d + %d) but those "
              "slow enough to stay exact (%.0f + %.0f + %.0f)", name,
              (unsigned long long)r->estimated[0], (unsigned long long)r->estimated[1],
              (unsigned long long)r->estimated[2], EVENTS, JEVENTS, JEVENTS, r->slow[0],
              r->slow[1], r->slow[2]);
    else
        CHECK(est == 0, "%s: %llu events estimated in exact mode", name, (unsigned long long)est);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--child") == 0)
        return child();
    char path[4096];
    const char *self = pg_exe_path(path, sizeof path);
    struct run r[3];
    const char *modes[3] = {"exact", "", "exact"}; /* "": unset, the default (adaptive) */
    double stolen = (double)pg_steal_ns(); /* tests/bounds/bounds.h */
    for (int k = 0; k < 3; k++)
        if (run_child(self, modes[k], &r[k]) != 0) {
            printf("FAIL: the %s child failed\n", *modes[k] ? modes[k] : "default");
            return 1;
        }
    /* time the hypervisor stole from the vCPUs meanwhile (every CPU, + 1 tick): a stopwatch
     * counts it, the CPU clock does not, and it falls on whichever run and group it hits
     * (docs/accounting.md, "Error bounds") */
    double now_stolen = (double)pg_steal_ns();
    stolen = stolen >= 0 && now_stolen >= stolen ? now_stolen - stolen + 1e7 : 0;
    for (int k = 0; k < 3; k++)
        check_run(k == 1 ? "adaptive" : k ? "exact #2" : "exact #1", &r[k], k == 1);
    printf("| group | exact #1 %% | exact #2 %% | adaptive %% | spread | adaptive - exact | bound |\n"
           "|---|---|---|---|---|---|---|\n");
    for (size_t i = 1; i < NG - 1; i++) {
        double e1 = 100 * r[0].cpu[0][i] / r[0].cpu[0][0], e2 = 100 * r[2].cpu[0][i] / r[2].cpu[0][0];
        double a = 100 * r[1].cpu[0][i] / r[1].cpu[0][0], ref = (e1 + e2) / 2;
        double spread = fabs(e1 - e2);
        double bound = (ref >= 5 ? 0.02 * ref : 0.5) + spread + /* points */
                       100 * stolen / (r[1].cpu[0][0] < r[0].cpu[0][0] ? r[1].cpu[0][0] : r[0].cpu[0][0]);
        printf("| %s | %.2f | %.2f | %.2f | %.2f | %+.2f | %.2f |\n", groups[i], e1, e2, a, spread,
               a - ref, bound);
        CHECK(fabs(a - ref) <= bound, "%s: adaptive share %.2f %% against exact %.2f %% (bound %.2f)",
              groups[i], a, ref, bound);
    }
    printf("J's long activation: %.1f / %.1f / %.1f ms of CPU; events estimated (mix, jank, "
           "stretch): %llu + %llu + %llu adaptive, %llu + %llu + %llu and %llu + %llu + %llu exact; "
           "longest tick interval of the adaptive run %.2f ms\n",
           r[0].long_ms, r[1].long_ms, r[2].long_ms, (unsigned long long)r[1].estimated[0],
           (unsigned long long)r[1].estimated[1], (unsigned long long)r[1].estimated[2],
           (unsigned long long)r[0].estimated[0], (unsigned long long)r[0].estimated[1],
           (unsigned long long)r[0].estimated[2], (unsigned long long)r[2].estimated[0],
           (unsigned long long)r[2].estimated[1], (unsigned long long)r[2].estimated[2],
           r[1].tick_max_ms);
    printf(pg_failures ? "%d check(s) failed\n" : "ok\n", pg_failures);
    return pg_failures ? 1 : 0;
}
