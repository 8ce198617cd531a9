// SPDX-License-Identifier: MIT
/*
 * tests/lite/exceptions.cc — lite.exceptions.<gcc|clang>: C++ exceptions thrown through lite
 * frames (docs/accounting.md "Lite frames"), built with each plugin at -O2. Both plugins put a
 * frame's exit in a cleanup (GCC: a try/finally around the body; Clang: the landing pad), so
 * the unwinder restores a lite frame's saved state as a return does. The program runs itself
 * as children: PERFGROUP_ACCOUNTING=exact, unset (the default: lite frames in hot events),
 * exact again. In each child, EVENTS explicit events, each under a frame of group O (so that
 * the calls below it may be lite): A calls B twice, B calls C, C throws every 7th call; the
 * first B's throw is caught in A, the second's in O, C's thrown object's destructor and a
 * guard's in B (run by the unwinder, in the cleanup) call group D. Checks, every run:
 *   - each group's activations equal the calls the program counted (a frame unwound ends as
 *     one that returned, in both modes);
 *   - no bit left in the thread's mask after each event (a lite frame the unwinder skipped
 *     would leave its bit);
 *   - each group charged at most top's CPU (+ 2 % + 1 ms); in the default run the self times
 *     add up to at most that too;
 *   - the default run made lite frames (C seen running in one) and called the enter hook at
 *     most a quarter as often as the exact runs (counted by a -Wl,--wrap tail call);
 *   - each group's charged share of top in the default run against the exact runs' mean:
 *     tests/lite/paths.c's bound (3 points + 10 % of the share + the exact runs' spread + the
 *     hook pairs exact mode charges + the time stolen from the thread in each run).
 * Exit 1 on any failure, the figures printed first.
 */
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "perfgroup.h"
#include "perfgroup/abi.h"
#include "../bounds/modes.h"
#include "../bounds/bounds.h"

#define NOINLINE __attribute__((noinline))
#define HOOK_NS 80.0 /* what exact mode charges for a hook pair, at most (paths.c) */
#define EVENTS 40
#define ITERS 3000

#include "hookcount.h" /* HOOK_CALLS: the enter hook's calls (-1: not counted) */

static double iters_per_ns;
PERF_GROUP_NONE static void burn_ns(double ns) { pg_burn_iters((uint64_t)(ns * iters_per_ns)); }
PERF_GROUP_NONE static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t n_a, n_b, n_c, n_d, n_o, thrown, lite_seen, stale_mask;
#define SEEN() (lite_seen += PERFGROUP_TLS_CUR.top < 64)

PERF_GROUP("D") NOINLINE static void fd(void)
{
    n_d++;
    burn_ns(150);
}

/* thrown by C: its destructor (run when the handler is done) calls D */
struct Thrown {
    int v;
    explicit Thrown(int x) : v(x) {}
    Thrown(const Thrown &o) : v(o.v) {}
    ~Thrown() { fd(); }
};
/* B's guard: its destructor runs as B returns or as the unwinder leaves B */
struct Guard {
    ~Guard() { fd(); }
};

PERF_GROUP("C") NOINLINE static void fc(int i)
{
    n_c++;
    SEEN();
    burn_ns(250);
    if (i % 7 == 0) {
        thrown++;
        throw Thrown(i);
    }
}

PERF_GROUP("B") NOINLINE static void fb(int i)
{
    n_b++;
    Guard g;
    burn_ns(200);
    fc(i);
    burn_ns(100);
}

/* the first B's throw caught here, the second's in O */
PERF_GROUP("A") NOINLINE static void fa(int i)
{
    n_a++;
    burn_ns(150);
    try {
        fb(i);
    } catch (const Thrown &t) {
        burn_ns(t.v % 2 ? 50 : 60);
    }
    fb(i + 3);
}

PERF_GROUP("O") NOINLINE static void fo(void)
{
    n_o++;
    for (int i = 1; i <= ITERS; i++) {
        try {
            fa(i);
        } catch (const Thrown &t) {
            burn_ns(t.v % 2 ? 40 : 50);
        }
    }
}

PERF_GROUP_NONE static int child(void)
{
    uint64_t t0 = cpu_ns();
    pg_burn_iters(20000000);
    iters_per_ns = 20000000.0 / (double)(cpu_ns() - t0);
    struct pg_obs o0 = pg_obs_now();
    struct perfgroup_snapshot *s0 = perfgroup_snapshot_take();
    for (int e = 0; e < EVENTS; e++) {
        perfgroup_event_begin("exc");
        fo();
        perfgroup_event_end();
        stale_mask |= PERFGROUP_TLS_CUR.mask;
    }
    struct pg_obs o1 = pg_obs_now();
    struct perfgroup_snapshot *s1 = perfgroup_snapshot_take();
    struct perfgroup_snapshot *d = perfgroup_snapshot_diff(s1, s0);
    for (size_t i = 0; i < perfgroup_snapshot_count(d); i++) {
        const struct perfgroup_stats *g = perfgroup_snapshot_at(d, i);
        printf("g %s %llu %llu %llu\n", g->name, (unsigned long long)g->cpu_ns,
               (unsigned long long)g->self_ns, (unsigned long long)g->activations);
    }
    printf("n A %llu\nn B %llu\nn C %llu\nn D %llu\nn O %llu\n", (unsigned long long)n_a,
           (unsigned long long)n_b, (unsigned long long)n_c, (unsigned long long)n_d,
           (unsigned long long)n_o);
    printf("v thrown %llu\nv lite %llu\nv hooks %llu\nv mask %llu\nv stolen %lld\n",
           (unsigned long long)thrown, (unsigned long long)lite_seen,
           (unsigned long long)HOOK_CALLS(),
           (unsigned long long)stale_mask, (long long)pg_stolen_thread(&o0, &o1));
    perfgroup_snapshot_free(d);
    perfgroup_snapshot_free(s1);
    perfgroup_snapshot_free(s0);
    return 0;
}

/* ---- driver ---------------------------------------------------------------------------------- */

static const char *const GROUPS[] = {"A", "B", "C", "D", "O"};
#define NG 5
struct run {
    double cpu[NG], self[NG], top_cpu, top_self;
    unsigned long long acts[NG], calls[NG], thrown, lite, hooks, mask;
    long long stolen;
};

PERF_GROUP_NONE static int gidx(const char *name)
{
    for (int i = 0; i < NG; i++)
        if (strcmp(GROUPS[i], name) == 0)
            return i;
    return -1;
}

PERF_GROUP_NONE static int run_child(const char *self, const char *mode, struct run *r)
{
    pid_t pid;
    FILE *f = pg_spawn_mode(self, mode, &pid);
    if (!f)
        return -1;
    memset(r, 0, sizeof *r);
    char line[512], name[64], key[64];
    unsigned long long a, b, c;
    long long v;
    while (fgets(line, sizeof line, f)) {
        int i;
        if (sscanf(line, "g %63s %llu %llu %llu", name, &a, &b, &c) == 4) {
            if (strcmp(name, "top") == 0) {
                r->top_cpu = (double)a;
                r->top_self = (double)b;
            } else if ((i = gidx(name)) >= 0) {
                r->cpu[i] = (double)a;
                r->self[i] = (double)b;
                r->acts[i] = c;
            }
        } else if (sscanf(line, "n %63s %llu", name, &a) == 2 && (i = gidx(name)) >= 0) {
            r->calls[i] = a;
        } else if (sscanf(line, "v %63s %lld", key, &v) == 2) {
            if (!strcmp(key, "thrown"))
                r->thrown = (unsigned long long)v;
            else if (!strcmp(key, "lite"))
                r->lite = (unsigned long long)v;
            else if (!strcmp(key, "hooks"))
                r->hooks = (unsigned long long)v;
            else if (!strcmp(key, "mask"))
                r->mask = (unsigned long long)v;
            else if (!strcmp(key, "stolen"))
                r->stolen = v;
        }
    }
    return pg_spawn_end(f, pid);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--child") == 0)
        return child();
    char path[4096];
    const char *self = pg_exe_path(path, sizeof path);
    static struct run r[3];
    const char *modes[3] = {"exact", "", "exact"};
    const char *names[3] = {"exact #1", "default", "exact #2"};
    for (int k = 0; k < 3; k++)
        if (run_child(self, modes[k], &r[k]) != 0) {
            printf("FAIL: the %s child failed\n", names[k]);
            return 1;
        }
    for (int k = 0; k < 3; k++) {
        struct run *x = &r[k];
        double sum_self = x->top_self;
        printf("%s: %llu thrown, top %.3f ms, lite %llu, hook calls %llu, stolen %.3f ms\n",
               names[k], x->thrown, x->top_cpu / 1e6, x->lite, x->hooks, (double)x->stolen / 1e6);
        pg_check(x->thrown > 0 && x->top_cpu > 0, "%s: nothing thrown or no CPU", names[k]);
        for (int i = 0; i < NG; i++) {
            sum_self += x->self[i];
            pg_check(x->acts[i] == x->calls[i] && x->calls[i] > 0,
                     "%s: %s: %llu activations, %llu calls", names[k], GROUPS[i], x->acts[i],
                     x->calls[i]);
            pg_check(x->cpu[i] <= 1.02 * x->top_cpu + 1e6, "%s: %s charged %.3f ms, top %.3f ms",
                     names[k], GROUPS[i], x->cpu[i] / 1e6, x->top_cpu / 1e6);
        }
        pg_check(x->mask == 0, "%s: bits left in the mask after the events: %#llx", names[k], x->mask);
        if (k == 1)
            pg_check(sum_self <= 1.02 * x->top_cpu + 1e6 + (double)x->stolen,
                     "default: the self times add up to %.3f ms, top %.3f ms", sum_self / 1e6,
                     x->top_cpu / 1e6);
    }
    pg_check(r[1].lite > 0, "default: no lite frame made (C never seen running in one)");
    pg_check(r[0].lite == 0 && r[2].lite == 0, "exact: lite frames made");
    pg_check(HOOK_CALLS() < 0 || (r[0].hooks > 0 && r[1].hooks * 4 <= r[0].hooks),
             "default: %llu enter hook calls, exact %llu: not a quarter", r[1].hooks, r[0].hooks);
    printf("| group | exact #1 %% | exact #2 %% | default %% | bound |\n|---|---|---|---|---|\n");
    for (int i = 0; i < NG; i++) {
        double e1 = 100 * r[0].cpu[i] / r[0].top_cpu, e2 = 100 * r[2].cpu[i] / r[2].top_cpu;
        double a = 100 * r[1].cpu[i] / r[1].top_cpu, ref = (e1 + e2) / 2;
        double stolen = 100 * ((double)r[1].stolen / r[1].top_cpu +
                               ((double)r[0].stolen / r[0].top_cpu +
                                (double)r[2].stolen / r[2].top_cpu) / 2);
        /* each group's activations a hook pair in exact mode (charged to it and those below) */
        double pairs = 100 * HOOK_NS * (double)r[0].acts[i] / r[0].top_cpu;
        double bound = 3 + 0.1 * ref + fabs(e1 - e2) + pairs + stolen;
        printf("| %s | %.2f | %.2f | %.2f | %.2f |\n", GROUPS[i], e1, e2, a, bound);
        pg_check(fabs(a - ref) <= bound, "%s charged %.2f %% of top by default, %.2f %% exact "
                 "(bound %.2f)", GROUPS[i], a, ref, bound);
    }
    printf(pg_failures ? "%d check(s) failed\n" : "ok\n", pg_failures);
    return pg_failures ? 1 : 0;
}
