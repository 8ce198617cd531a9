/* SPDX-License-Identifier: MIT */
/*
 * tests/accuracy/accuracy.c — what perfgroup charges, against ground truth the program
 * measures itself (the thread CPU clock and CLOCK_MONOTONIC read inside each instrumented
 * function around its work), read through the public snapshot API. Built with the real
 * plugins (GCC and Clang) at -O2.
 *
 * Phases (each one snapshot diff):
 *   main    per event: A (1 u: 0.5 u own + a 0.5 u call of B), B (1.5 u more, called by the
 *           loop), C (4 u over 8 levels of recursion): charged 1:2:4. Checks per-group CPU
 *           share vs true share, A->B charges both, recursion charged once, top vs thread CPU.
 *   modal   A does 1 u, spins a nested loop of 3 events of N (2 u each), does 1 u: A must be
 *           charged 2 u and nothing of the 6 u.
 *   sleep   S does 0.25 u and nanosleep(2 ms) alone in an event: CPU, wall and blocked time.
 *   mixed   S (sleeping) and C (4 u) in one event: S charged at most 0.5 ms per event more
 *           than its own CPU time (none of C's), C its own.
 *   jank    J does 1.5 .. 48 ms of CPU in an event: histogram vs the buckets the true times
 *           fall in, exact; max = the longest true time.
 * Every group's CPU time is checked against its truth (--cpu-bound %, default 2), and, where
 * the kernel's clocksource is `tsc`, that nothing was discarded (a migration keeps its
 * measure). --snapshot FILE writes the final snapshot's CPU, jank and longest per group for
 * accuracy_summary.py to compare with `perfgroup-convert --summary --json` of the recording.
 *
 * Usage: accuracy [--bound POINTS] [--cpu-bound PCT] [--load] [--contend] [--busy-ok]
 *                 [--unit US] [--events N] [--syscalls] [--snapshot FILE]
 *   --bound  tolerance for shares / nested / blocked / top-vs-thread, in percentage points;
 *            while the thread ran on its CPU (off it < 10 % of its events' wall time) the
 *            shares must also be within 1.5 points of the old estimate's rule applied to the
 *            true clocks (event CPU shared by wall time: the fallback without rseq)
 *   --cpu-bound  tolerance for each group's CPU time against its truth, in % (default 2)
 *   --load   fork a process that spins on the other core for the whole run
 *   --contend  fork a spinning process per core (all cores busy, the thread preempted often)
 *   --busy-ok  accepted for older command lines; shares are checked against the truth
 *            whatever the load, CPU time being measured
 *   --syscalls  one syscall between handlers in the main phase (where a waiting thread
 *            tends to be preempted: shows what off-CPU time outside every group does)
 * Prints markdown tables; exit 0 when every check holds, 1 otherwise.
 */
#define _GNU_SOURCE
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dlfcn.h>

#include "perfgroup.h"
#include "../bounds/bounds.h"

#define NOINLINE __attribute__((noinline))

static double bound = 10.0;   /* percentage points */
static double cpu_bound = 2.0; /* % of a group's true CPU time */
static const char *snapshot_path;
static double design_bound = 1.5; /* points between measured and the design applied to true clocks */
static int busy_ok;
#define BUSY_OFF_CPU 0.10           /* off-CPU fraction of the events' wall: oversubscribed */
static uint64_t unit_ns = 150000;
static int nevents = 400;
static int failures;
static struct {                      /* one line at the end, for bench/accuracy/run.py */
    double cpu_err[3], mixed_extra_ms, reads_per_s;
    double share_err[3], design_err[3], top_err, outside_ms, waited_ms, rt_outside_ms, jank_outside_ms, nested_pct, nested_us, blocked_err, s_cpu_err;
    int jank_exact;
    unsigned long long discarded;
} sum;
static double iters_per_ns;
static volatile uint64_t sink;

static long own_cpu_reads, all_cpu_reads;
PERF_GROUP_NONE static uint64_t clk(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#define CPU() (own_cpu_reads++, clk(CLOCK_THREAD_CPUTIME_ID))

/* The thread's CPU-clock reads, counted: clock_gettime is interposed (the executable's
 * definition wins over libc's for libperfgroup.so too). The runtime's = all - the test's own
 * (CPU()); of them, 2 per explicit event (ev_begin) are the event API's, the rest the
 * hooks' — one after each deschedule (runtime/cputime.c). */
typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);
PERF_GROUP_NONE int clock_gettime(clockid_t id, struct timespec *ts)
{
    static clock_gettime_fn real;
    if (!real)
        real = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
    if (id == CLOCK_THREAD_CPUTIME_ID)
        all_cpu_reads++;
    return real(id, ts);
}
static long explicit_events;
PERF_GROUP_NONE static int ev_begin(const char *name)
{
    explicit_events++;
    return perfgroup_event_begin(name);
}
#define WALL() clk(CLOCK_MONOTONIC)

PERF_GROUP_NONE NOINLINE static void burn_iters(uint64_t n)
{
    uint64_t x = sink;
    for (uint64_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        __asm__ __volatile__("" : "+r"(x));
    }
    sink = x;
}

PERF_GROUP_NONE static void burn_ns(uint64_t ns) { burn_iters((uint64_t)(ns * iters_per_ns)); }

/* What a truth misses of its own reads. A piece's truth is the thread CPU clock between two
 * CPU() calls inside the group's function, but the group's stopwatch around the piece holds
 * those calls whole: the part of the first before its reading and of the second after it (one
 * whole call, about) and, for a struct piece, its two WALL() calls. They are CPU time the
 * group's code used, so each truth gets their cost: the median of 7 trials of 200 calls,
 * measured by the thread's CPU clock (a read costs 0.6 us on one host of this machine kind,
 * 1.75 us on another, whose clocksource is kvm-clock: +0.3 % or +1.2 % of B's 150 us pieces). */
static uint64_t cpu_read_ns, wall_read_ns;

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

PERF_GROUP_NONE static void calibrate_reads(void)
{
    uint64_t c[7], w[7];
    for (int k = 0; k < 7; k++) {
        uint64_t t0 = CPU();
        for (int i = 0; i < 200; i++)
            (void)CPU();
        c[k] = (CPU() - t0) / 201;
        t0 = CPU();
        for (int i = 0; i < 200; i++)
            (void)WALL();
        w[k] = (CPU() - t0) / 200;
    }
    qsort(c, 7, sizeof c[0], cmp_u64);
    qsort(w, 7, sizeof w[0], cmp_u64);
    cpu_read_ns = c[3];
    wall_read_ns = w[3];
}

/* Iterations per ns of thread CPU time: the fastest of 7 short trials. */
PERF_GROUP_NONE static void calibrate(void)
{
    calibrate_reads();
    const uint64_t n = 2000000;
    uint64_t best = UINT64_MAX;
    for (int k = 0; k < 7; k++) {
        uint64_t t0 = CPU();
        burn_iters(n);
        uint64_t t = CPU() - t0;
        if (t < best)
            best = t;
    }
    iters_per_ns = (double)n / (double)best;
}

/* ---- Ground truth ---------------------------------------------------------------------- */
/* A piece of work's true thread CPU time and wall time, read inside the instrumented
 * function around its work: the clock syscalls (where a waiting thread is often preempted)
 * then fall inside the group that is running, never between groups — unless --syscalls
 * asks for one between handlers, as an event loop that polls would make. */
struct piece {
    uint64_t cpu, wall;
};
static struct {
    struct piece a, b, b_in_a, c, event; /* main */
    uint64_t a_own, nested;              /* modal */
    struct piece s, m_s, m_c;            /* sleep, mixed */
    uint64_t all_a, all_b, all_c, all_s; /* every phase's true CPU, per group */
} tru;
static uint64_t jank_truth[64];
static int jank_n;
static int between_syscalls;

static inline void piece_start(struct piece *st)
{
    st->wall = WALL();
    st->cpu = CPU();
}

static inline void piece_add(struct piece *acc, const struct piece *st)
{
    uint64_t c = CPU(), w = WALL();
    acc->cpu += c - st->cpu + cpu_read_ns + 2 * wall_read_ns; /* its reads: calibrate_reads */
    acc->wall += w - st->wall;
}

/* ---- The instrumented workload ------------------------------------------------------- */
NOINLINE PERF_GROUP("B") void b_work(uint64_t ns, struct piece *t)
{
    struct piece st;
    piece_start(&st);
    burn_ns(ns);
    piece_add(t, &st);
}

NOINLINE PERF_GROUP("A") void a_work(struct piece *t)
{
    struct piece st;
    piece_start(&st);
    burn_ns(unit_ns / 2);
    b_work(unit_ns / 2, &tru.b_in_a); /* A calls B: both charged */
    piece_add(t, &st);
}

/* Only the outermost level measures (t != NULL). */
NOINLINE PERF_GROUP("C") void c_rec(int depth, uint64_t ns, struct piece *t)
{
    struct piece st;
    if (t)
        piece_start(&st);
    burn_ns(ns);
    if (depth > 1)
        c_rec(depth - 1, ns, NULL); /* recursion: C charged once */
    if (t)
        piece_add(t, &st);
    __asm__ __volatile__("" ::: "memory");
}

NOINLINE PERF_GROUP("N") void n_work(uint64_t ns)
{
    uint64_t t0 = CPU();
    burn_ns(ns);
    tru.nested += CPU() - t0 + cpu_read_ns;
}

NOINLINE PERF_GROUP("A") void a_modal(void)
{
    uint64_t t0 = CPU();
    burn_ns(unit_ns);
    tru.a_own += CPU() - t0 + cpu_read_ns;
    perfgroup_nested_loop_begin();
    for (int i = 0; i < 3; i++) {
        ev_begin("nested");
        n_work(2 * unit_ns);
        perfgroup_event_end();
    }
    perfgroup_nested_loop_end();
    t0 = CPU();
    burn_ns(unit_ns);
    tru.a_own += CPU() - t0 + cpu_read_ns;
}

NOINLINE PERF_GROUP("S") void s_block(struct piece *t)
{
    struct piece st;
    piece_start(&st);
    burn_ns(unit_ns / 4);
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
    piece_add(t, &st);
}

NOINLINE PERF_GROUP("J") void j_work(uint64_t ns)
{
    uint64_t t0 = CPU();
    burn_ns(ns);
    jank_truth[jank_n++] = CPU() - t0 + cpu_read_ns;
}

/* An event loop's own syscall between two handlers (--syscalls). */
static void between(void)
{
    if (between_syscalls)
        (void)CPU();
}

/* ---- Reading the snapshots ------------------------------------------------------------- */
static struct perfgroup_snapshot *snap_prev;

/* Time the hypervisor stole from the machine's vCPUs (pg_steal_ns, tests/bounds/bounds.h).
 * A stopwatch cannot tell stolen time from its thread's own (no deschedule happens in the
 * guest), while the thread's CPU clock, with paravirtual steal accounting,
 * leaves it out: docs/accounting.md ("Error bounds") adds what was stolen during a phase to
 * its groups' bounds. System-wide, so an upper bound for this thread's share. */
static double steal_prev, phase_steal; /* ns stolen during the phase just diffed (+ 1 tick) */

/* The diff since the previous call (the caller frees it). */
static struct perfgroup_snapshot *phase_diff(void)
{
    double st = (double)pg_steal_ns(); /* tests/bounds/bounds.h */
    long hz = sysconf(_SC_CLK_TCK);
    phase_steal = st > steal_prev
                      ? st - steal_prev + 1e9 / (double)(hz > 0 ? hz : 100) /* its resolution */
                      : 0;
    steal_prev = st;
    struct perfgroup_snapshot *now = perfgroup_snapshot_take();
    struct perfgroup_snapshot *d = perfgroup_snapshot_diff(now, snap_prev);
    perfgroup_snapshot_free(snap_prev);
    snap_prev = now;
    if (!now || !d) {
        fprintf(stderr, "accuracy: snapshot failed\n");
        exit(2);
    }
    return d;
}

static const struct perfgroup_stats *group(const struct perfgroup_snapshot *s, const char *name)
{
    static const struct perfgroup_stats zero;
    const struct perfgroup_stats *g = perfgroup_snapshot_find(s, name);
    return g ? g : &zero;
}

static void check(int ok, const char *what)
{
    if (!ok) {
        failures++;
        printf("FAIL: %s\n", what);
    }
}

static double pct(double x, double of) { return of > 0 ? 100.0 * x / of : 0; }
static double ms(uint64_t ns) { return (double)ns / 1e6; }

/* Nothing discarded where the kernel keeps `tsc` as its clocksource (a migration keeps its
 * measure); the final snapshot for accuracy_summary.py. */
static void whole_run(struct perfgroup_snapshot *first)
{
    struct perfgroup_snapshot *now = perfgroup_snapshot_take();
    struct perfgroup_snapshot *d = perfgroup_snapshot_diff(now, first);
    if (!d) {
        fprintf(stderr, "accuracy: snapshot failed\n");
        exit(2);
    }
    char cs[32] = "";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (f) {
        if (!fgets(cs, sizeof cs, f))
            cs[0] = '\0';
        fclose(f);
    }
    uint64_t disc = 0;
    for (size_t i = 0; i < perfgroup_snapshot_count(d); i++)
        disc += perfgroup_snapshot_at(d, i)->discarded;
    printf("Measures discarded in the whole run: %llu (clocksource %s)\n\n", (unsigned long long)disc,
           cs[0] ? strtok(cs, "\n") : "unknown");
    if (strcmp(cs, "tsc") == 0)
        check(disc == 0, "a measure was discarded on clocksource tsc");
    FILE *o = snapshot_path ? fopen(snapshot_path, "w") : NULL;
    if (snapshot_path && !o) {
        perror(snapshot_path);
        exit(2);
    }
    for (size_t i = 0; o && i < perfgroup_snapshot_count(d); i++) {
        const struct perfgroup_stats *g = perfgroup_snapshot_at(d, i);
        fprintf(o, "%s %llu %llu", g->name, (unsigned long long)g->cpu_ns, (unsigned long long)g->max_event_ns);
        for (int b = 0; b < PERFGROUP_JANK_BUCKETS; b++)
            fprintf(o, " %llu", (unsigned long long)g->jank[b]);
        fprintf(o, "\n");
    }
    if (o)
        fclose(o);
    perfgroup_snapshot_free(d);
    perfgroup_snapshot_free(now);
    perfgroup_snapshot_free(first);
}

/* ---- Phases ------------------------------------------------------------------------------ */
static void phase_main(void)
{
    double predicted[3] = {0, 0, 0};
    for (int e = 0; e < nevents; e++) {
        struct piece ev;
        struct piece a0 = tru.a, b0 = tru.b, bi0 = tru.b_in_a, c0 = tru.c, e0 = tru.event;
        piece_start(&ev);
        ev_begin("main");
        between();
        a_work(&tru.a);
        between();
        b_work(3 * unit_ns / 2, &tru.b);
        between();
        c_rec(8, 4 * unit_ns / 8, &tru.c);
        between();
        perfgroup_event_end();
        piece_add(&tru.event, &ev);
        /* What the design itself would charge from these true clocks: the event's CPU
         * shared by stopwatch (wall) time. */
        double ecpu = (double)(tru.event.cpu - e0.cpu), ewall = (double)(tru.event.wall - e0.wall);
        if (ewall > 0) {
            predicted[0] += ecpu * (double)(tru.a.wall - a0.wall) / ewall;
            predicted[1] += ecpu * (double)(tru.b.wall - b0.wall + tru.b_in_a.wall - bi0.wall) / ewall;
            predicted[2] += ecpu * (double)(tru.c.wall - c0.wall) / ewall;
        }
    }
    struct perfgroup_snapshot *d = phase_diff();
    const struct perfgroup_stats *top = group(d, "top");
    const char *names[3] = {"A", "B", "C"};
    struct piece b_all = {tru.b.cpu + tru.b_in_a.cpu, tru.b.wall + tru.b_in_a.wall};
    const struct piece *truth[3] = {&tru.a, &b_all, &tru.c};
    printf("### main: %d events of A (1 u, calls B 0.5 u), B (1.5 u more), C (4 u, 8-deep recursion); u = %.0f us%s\n\n",
           nevents, unit_ns / 1e3, between_syscalls ? "; a syscall between handlers" : "");
    printf("| group | true CPU ms | measured CPU ms | true share %% | measured share %% | error (points) | true wall ms | measured wall ms | design's share from true clocks %% | activations | events | discarded |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    uint64_t sum_meas = 0, sum_true = 0;
    double off_all = (double)tru.event.wall - (double)tru.event.cpu;
    int busy = off_all > BUSY_OFF_CPU * (double)tru.event.wall;
    for (int i = 0; i < 3; i++) {
        const struct perfgroup_stats *g = group(d, names[i]);
        double ts = pct((double)truth[i]->cpu, (double)tru.event.cpu);
        double ms_ = pct((double)g->cpu_ns, (double)top->cpu_ns);
        printf("| %s | %.2f | %.2f | %.2f | %.2f | %+.2f | %.2f | %.2f | %.2f | %llu | %llu | %llu |\n", names[i],
               ms(truth[i]->cpu), ms(g->cpu_ns), ts, ms_, ms_ - ts, ms(truth[i]->wall), ms(g->wall_ns),
               pct(predicted[i], (double)tru.event.cpu),
               (unsigned long long)g->activations, (unsigned long long)g->events,
               (unsigned long long)g->discarded);
        char what[96];
        double sb = bound + pct(phase_steal, (double)tru.event.cpu);
        snprintf(what, sizeof what, "main: %s share off by %+.2f points (bound %.2f)", names[i], ms_ - ts, sb);
        check(fabs(ms_ - ts) <= sb, what); /* measured: holds busy or not */
        sum.share_err[i] = ms_ - ts;
        sum.design_err[i] = pct(predicted[i], (double)tru.event.cpu) - ts;
        /* Whatever the load, the runtime must charge what its own rule gives from the true
         * clocks: this is the check that fails when the accounting itself breaks. */
        /* A discarded measure (CPU migration) drops at most one event's share of the group. */
        double dbound = design_bound + 100.0 * (double)g->discarded / nevents +
                        pct(phase_steal, (double)tru.event.cpu);
        snprintf(what, sizeof what, "main: %s share %+.2f points from the design's own (bound %.1f)", names[i],
                 ms_ - pct(predicted[i], (double)tru.event.cpu), dbound);
        check(fabs(ms_ - pct(predicted[i], (double)tru.event.cpu)) <= dbound || busy, what);
        double cerr = pct((double)g->cpu_ns - (double)truth[i]->cpu, (double)truth[i]->cpu);
        sum.cpu_err[i] = cerr;
        printf("main: %s CPU %.3f ms measured, %.3f ms true: %+.2f %% (stolen from the vCPUs "
               "meanwhile, at most: %.1f ms)\n\n", names[i], ms(g->cpu_ns), ms(truth[i]->cpu), cerr,
               phase_steal / 1e6);
        double cb = cpu_bound + pct(phase_steal, (double)truth[i]->cpu); /* stolen: above */
        snprintf(what, sizeof what, "main: %s CPU %+.2f %% off its truth (bound %.2f %%)", names[i], cerr, cb);
        check(fabs(cerr) <= cb, what);
        sum.discarded += g->discarded;
        sum_meas += g->cpu_ns;
        sum_true += truth[i]->cpu;
    }
    sum.top_err = pct((double)top->cpu_ns - (double)tru.event.cpu, (double)tru.event.cpu);
    printf("| top | %.2f (thread CPU) | %.2f | 100 | 100 | %+.2f %% of thread CPU | %.2f | %.2f | 100 | %llu | %llu | %llu |\n\n",
           ms(tru.event.cpu), ms(top->cpu_ns), sum.top_err, ms(tru.event.wall), ms(top->wall_ns),
           (unsigned long long)top->activations, (unsigned long long)top->events,
           (unsigned long long)top->discarded);
    double in_groups = (double)(tru.a.cpu + tru.b.cpu + tru.c.cpu);
    printf("Per event: thread CPU %.1f us, top %.1f us; Σ A+B+C measured %.1f us, true %.1f us (A includes the "
           "B it calls); A + B(direct) + C hold %.2f %% of the thread CPU\n\n",
           tru.event.cpu / 1e3 / nevents, top->cpu_ns / 1e3 / nevents, sum_meas / 1e3 / nevents,
           sum_true / 1e3 / nevents, pct(in_groups, (double)tru.event.cpu));
    check(fabs(sum.top_err) <= bound, "main: top CPU vs thread CPU");
    double off_in = (double)(tru.a.wall + tru.b.wall + tru.c.wall) - in_groups;
    sum.waited_ms = off_all / 1e6;
    sum.outside_ms = (off_all - off_in) / 1e6;
    printf("Off-CPU waits (true wall − CPU) in the events: %.1f ms, of which %.1f ms between groups (%.1f %%)\n\n",
           sum.waited_ms, sum.outside_ms, pct(off_all - off_in, off_all));
    if (busy)
        printf("The thread was off its CPU for %.1f %% of its events' wall time (more runnable threads "
               "than cores): the design, which shares event CPU by wall time, can be off the truth by up to that; "
               "shares vs the truth %s, shares vs the design's own figure checked.\n\n",
               pct(off_all, (double)tru.event.wall), busy_ok ? "reported (--busy-ok)" : "checked");
    const struct perfgroup_stats *c = group(d, "C"), *b = group(d, "B"), *a = group(d, "A");
    /* The runtime's own event wall outside A, B(direct), C: ~0 unless the thread waited
     * inside the event window before the first group or after the last one. */
    sum.rt_outside_ms = ((double)top->wall_ns - (double)a->wall_ns - (double)c->wall_ns -
                         ((double)b->wall_ns - (double)tru.b_in_a.wall)) / 1e6;
    printf("Event wall outside every group, as the runtime measured it: %.1f ms (%.1f %% of its event wall)\n\n",
           sum.rt_outside_ms, pct(sum.rt_outside_ms * 1e6, (double)top->wall_ns));
    check(c->activations + c->discarded == (uint64_t)nevents, "main: recursion in C charged once per event");
    check(b->activations + b->discarded == 2 * (uint64_t)nevents, "main: B charged when A calls it and when called alone");
    check(a->events == (uint64_t)nevents && b->events == (uint64_t)nevents && c->events == (uint64_t)nevents,
          "main: A, B, C executed in every event");
    perfgroup_snapshot_free(d);
}

static void phase_modal(void)
{
    int n = nevents / 8 > 0 ? nevents / 8 : 1;
    for (int e = 0; e < n; e++) {
        ev_begin("modal");
        a_modal();
        perfgroup_event_end();
    }
    struct perfgroup_snapshot *d = phase_diff();
    const struct perfgroup_stats *a = group(d, "A"), *nn = group(d, "N");
    double leak = (double)a->cpu_ns - (double)tru.a_own;
    printf("### modal: %d events; A runs 1 u, a nested loop of 3 events of N (2 u each), 1 u\n\n", n);
    printf("| | true ms | measured ms |\n|---|---|---|\n");
    printf("| A (own work only) | %.3f | %.3f |\n", ms(tru.a_own), ms(a->cpu_ns));
    printf("| N (nested events) | %.3f | %.3f |\n\n", ms(tru.nested), ms(nn->cpu_ns));
    printf("Nested-loop time charged to A: %+.1f us per event = %+.3f %% of the nested loop's %.0f us "
           "(A − A's own work)\n\n", leak / 1e3 / n, pct(leak, (double)tru.nested), tru.nested / 1e3 / n);
    sum.nested_pct = pct(leak, (double)tru.nested);
    sum.nested_us = leak / 1e3 / n;
    char what[96];
    snprintf(what, sizeof what, "modal: nested time charged to A %+.2f %% of it (bound %.1f)", pct(leak, (double)tru.nested), bound);
    check(fabs(pct(leak, (double)tru.nested)) <= bound, what);
    check(fabs(pct((double)nn->cpu_ns - (double)tru.nested, (double)tru.nested)) <= bound,
          "modal: nested events charge N");
    perfgroup_snapshot_free(d);
}

static void phase_sleep(void)
{
    int n = nevents / 8 > 0 ? nevents / 8 : 1;
    for (int e = 0; e < n; e++) {
        ev_begin("sleep");
        s_block(&tru.s);
        perfgroup_event_end();
    }
    struct perfgroup_snapshot *d = phase_diff();
    const struct perfgroup_stats *s = group(d, "S");
    uint64_t blocked = tru.s.wall - tru.s.cpu;
    printf("### sleep: %d events of S alone: 0.25 u of work, nanosleep(2 ms)\n\n", n);
    printf("| S | true ms | measured ms | error %% of wall |\n|---|---|---|---|\n");
    printf("| CPU | %.3f | %.3f | %+.2f |\n", ms(tru.s.cpu), ms(s->cpu_ns),
           pct((double)s->cpu_ns - (double)tru.s.cpu, (double)tru.s.wall));
    printf("| wall | %.3f | %.3f | %+.2f |\n", ms(tru.s.wall), ms(s->wall_ns),
           pct((double)s->wall_ns - (double)tru.s.wall, (double)tru.s.wall));
    printf("| blocked | %.3f | %.3f | %+.2f |\n\n", ms(blocked), ms(s->blocked_ns),
           pct((double)s->blocked_ns - (double)blocked, (double)tru.s.wall));
    sum.blocked_err = pct((double)s->blocked_ns - (double)blocked, (double)tru.s.wall);
    sum.s_cpu_err = pct((double)s->cpu_ns - (double)tru.s.cpu, (double)tru.s.wall);
    printf("S measures discarded (woke on another CPU, by design): %llu of %d\n\n",
           (unsigned long long)s->discarded, n);
    sum.discarded += s->discarded;
    /* A discarded measure loses that event's whole stopwatch: allow its share of the wall. */
    double lost = 100.0 * (double)s->discarded / n * 1.5;
    check(sum.blocked_err <= bound && sum.blocked_err >= -bound - lost, "sleep: blocked time");
    check(sum.s_cpu_err <= bound && sum.s_cpu_err >= -bound - lost, "sleep: CPU time");
    perfgroup_snapshot_free(d);

    /* S and C in one event: event CPU is shared by stopwatch (wall) time — by design. */
    for (int e = 0; e < n; e++) {
        ev_begin("mixed");
        s_block(&tru.m_s);
        c_rec(4, unit_ns, &tru.m_c);
        perfgroup_event_end();
    }
    d = phase_diff();
    const struct perfgroup_stats *s2 = group(d, "S"), *c = group(d, "C");
    printf("### mixed: %d events of S (sleeps 2 ms) then C (4 u): S charged its own CPU only\n\n", n);
    printf("| group | true CPU ms | measured CPU ms | measured blocked ms |\n|---|---|---|---|\n");
    printf("| S | %.3f | %.3f | %.3f |\n", ms(tru.m_s.cpu), ms(s2->cpu_ns), ms(s2->blocked_ns));
    printf("| C | %.3f | %.3f | %.3f |\n\n", ms(tru.m_c.cpu), ms(c->cpu_ns), ms(c->blocked_ns));
    double extra = ((double)s2->cpu_ns - (double)tru.m_s.cpu) / n;
    sum.mixed_extra_ms = extra / 1e6;
    printf("S charged %+.3f ms per event over its own CPU time (bound 0.5); C %+.2f %% off its truth\n\n",
           extra / 1e6, pct((double)c->cpu_ns - (double)tru.m_c.cpu, (double)tru.m_c.cpu));
    /* S's CPU is its stopwatch's on-CPU time, C's in the same event does not cap it: what was
     * stolen in S's own stretches is in it (docs/accounting.md "Error bounds", stolen σ), at
     * most the phase's, spread over its events. Charging C's 4 u to S is 4 u per event. */
    check(extra <= 500000 + phase_steal / n,
          "mixed: the sleeping group is charged more than 0.5 ms per event of the worker's CPU "
          "(+ the time stolen meanwhile)");
    check(fabs(pct((double)c->cpu_ns - (double)tru.m_c.cpu, (double)tru.m_c.cpu)) <=
              cpu_bound + pct(phase_steal, (double)tru.m_c.cpu),
          "mixed: the worker's CPU off its truth (bound: 2 % + the time stolen meanwhile)");
    perfgroup_snapshot_free(d);
}

static const double jank_ms[] = {1.5, 3, 6, 12, 24, 48};
#define NJ (sizeof jank_ms / sizeof jank_ms[0])

static void phase_jank(void)
{
    const int reps = 3;
    for (int r = 0; r < reps; r++)
        for (size_t k = 0; k < NJ; k++) {
            ev_begin("jank");
            j_work((uint64_t)(jank_ms[k] * 1e6));
            perfgroup_event_end();
        }
    struct perfgroup_snapshot *d = phase_diff();
    const struct perfgroup_stats *j = group(d, "J");
    uint64_t expect[PERFGROUP_JANK_BUCKETS] = {0};
    int clear = 1;
    double closest = 1e9;
    for (int i = 0; i < jank_n; i++)
        for (int b = 0; b < PERFGROUP_JANK_BUCKETS; b++) {
            double edge = (double)(1000000ull << b);
            if ((double)jank_truth[i] > edge)
                expect[b]++;
            double dist = fabs((double)jank_truth[i] - edge) / edge;
            if (dist < closest)
                closest = dist;
            if (dist < 0.10) /* within 10 % of an edge: the check below would not be fair */
                clear = 0;
        }
    printf("### jank: %d events of J at %g .. %g ms (%d each); bucket i counts events > 2^i ms\n\n",
           jank_n, jank_ms[0], jank_ms[NJ - 1], reps);
    printf("| bucket | > 1 | > 2 | > 4 | > 8 | > 16 | > 32 | > 64 |\n|---|---|---|---|---|---|---|---|\n");
    printf("| expected (true CPU) |");
    for (int b = 0; b < 7; b++)
        printf(" %llu |", (unsigned long long)expect[b]);
    printf("\n| measured |");
    for (int b = 0; b < 7; b++)
        printf(" %llu |", (unsigned long long)j->jank[b]);
    printf("\n\nClosest true time to a bucket edge: %.1f %% away; max %.3f ms, min %.3f ms\n\n",
           closest * 100, ms(j->max_event_ns), ms(j->min_event_ns));
    sum.jank_exact = memcmp(expect, j->jank, sizeof expect) == 0;
    sum.discarded += j->discarded;
    const struct perfgroup_stats *jtop = group(d, "top");
    uint64_t jtrue = 0;
    for (int i = 0; i < jank_n; i++)
        jtrue += jank_truth[i];
    sum.jank_outside_ms = ((double)jtop->wall_ns - (double)j->wall_ns) / 1e6;
    printf("J CPU measured %.3f ms vs true %.3f ms; event wall outside J (J alone in its events): %.3f ms\n\n",
           ms(j->cpu_ns), ms(jtrue), sum.jank_outside_ms);
    printf("J measures discarded (CPU migration, by design): %llu\n\n", (unsigned long long)j->discarded);
    uint64_t jmax = 0;
    for (int i = 0; i < jank_n; i++)
        jmax = jank_truth[i] > jmax ? jank_truth[i] : jmax;
    printf("J longest: %.3f ms measured, %.3f ms true\n\n", ms(j->max_event_ns), ms(jmax));
    check(fabs((double)j->max_event_ns - (double)jmax) <= 0.02 * (double)jmax, "jank: longest event off its truth by > 2 %");
    if (clear && j->discarded == 0)
        check(memcmp(expect, j->jank, sizeof expect) == 0, "jank: histogram differs from the true buckets");
    else if (clear) {
        /* A discarded measure leaves its event with less time: it may be missing from any
         * bucket it belonged to, never added to one. With loose bounds (CI on a busy machine)
         * one more event per bucket may be short: a preemption just after the event's TSC
         * read in perfgroup_event_begin (docs/benchmarks.md, accuracy findings). */
        uint64_t slack = j->discarded + (bound >= 5 ? 1 : 0);
        int ok = 1;
        for (int b = 0; b < PERFGROUP_JANK_BUCKETS; b++)
            ok &= j->jank[b] <= expect[b] && expect[b] - j->jank[b] <= slack;
        check(ok, "jank: histogram differs from the true buckets by more than the discarded measures");
    } else
        printf("(an event fell within 10 %% of an edge: histogram reported, not checked)\n\n");
    check(j->events == (uint64_t)jank_n, "jank: J executed in every event");
    perfgroup_snapshot_free(d);
}

int main(int argc, char **argv)
{
    int load = 0, contend = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bound") && i + 1 < argc)
            bound = atof(argv[++i]);
        else if (!strcmp(argv[i], "--syscalls"))
            between_syscalls = 1;
        else if (!strcmp(argv[i], "--load"))
            load = 1;
        else if (!strcmp(argv[i], "--contend"))
            contend = 1;
        else if (!strcmp(argv[i], "--cpu-bound") && i + 1 < argc)
            cpu_bound = atof(argv[++i]);
        else if (!strcmp(argv[i], "--snapshot") && i + 1 < argc)
            snapshot_path = argv[++i];
        else if (!strcmp(argv[i], "--busy-ok"))
            busy_ok = 1;
        else if (!strcmp(argv[i], "--unit") && i + 1 < argc)
            unit_ns = (uint64_t)(atof(argv[++i]) * 1e3);
        else if (!strcmp(argv[i], "--events") && i + 1 < argc)
            nevents = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--bound POINTS] [--cpu-bound PCT] [--load] [--contend] [--busy-ok] "
                    "[--unit US] [--events N] [--syscalls] [--snapshot FILE]\n", argv[0]);
            return 2;
        }
    }
    pid_t spinner[64];
    long nspin = contend ? sysconf(_SC_NPROCESSORS_ONLN) : load;
    if (nspin > 64)
        nspin = 64;
    for (long k = 0; k < nspin; k++) {
        spinner[k] = fork();
        if (spinner[k] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            for (;;)
                __asm__ __volatile__("");
        }
    }
    struct perfgroup_snapshot *first = perfgroup_snapshot_take();
    uint64_t run_start = WALL();
    calibrate();
    steal_prev = (double)pg_steal_ns();
    snap_prev = perfgroup_snapshot_take();
    printf("## accuracy: %s, %s, bound ±%.1f points\n\n",
#if defined(__clang__)
           "clang " __clang_version__,
#else
           "gcc " __VERSION__,
#endif
           contend ? "every core contended (a spinning process per core)"
           : load ? "other core loaded (a spinning process)" : "no extra load", bound);
    printf("Each truth includes its own clock reads, which the stopwatches hold: CPU() %llu ns, "
           "WALL() %llu ns of CPU a read (median of 7 trials).\n\n",
           (unsigned long long)cpu_read_ns, (unsigned long long)wall_read_ns);
    phase_main();
    phase_modal();
    phase_sleep();
    phase_jank();
    for (long k = 0; k < nspin; k++) {
        if (spinner[k] > 0) {
            kill(spinner[k], SIGKILL);
            waitpid(spinner[k], NULL, 0);
        }
    }
    double run_s = (double)(WALL() - run_start) / 1e9;
    long rt_reads = all_cpu_reads - own_cpu_reads, hook_reads = rt_reads - 2 * explicit_events;
    printf("CPU-clock reads by the runtime: %ld in %.2f s (%ld by the event API for %ld explicit events, "
           "%ld by the hooks after a deschedule: %.0f per second)\n\n", rt_reads, run_s,
           2 * explicit_events, explicit_events, hook_reads, hook_reads / run_s);
    sum.reads_per_s = hook_reads / run_s;
    whole_run(first);
    perfgroup_snapshot_free(snap_prev);
    printf("summary: cpuA=%+.2f cpuB=%+.2f cpuC=%+.2f mixed_ms=%+.3f reads_s=%.0f A=%+.2f B=%+.2f C=%+.2f dA=%+.2f dB=%+.2f dC=%+.2f top=%+.2f nested_pct=%+.3f nested_us=%+.1f "
           "blocked=%+.2f s_cpu=%+.2f jank_exact=%d discarded=%llu waited_ms=%.1f outside_ms=%.1f "
           "rt_outside_ms=%.1f jank_outside_ms=%.3f failures=%d\n",
           sum.cpu_err[0], sum.cpu_err[1], sum.cpu_err[2], sum.mixed_extra_ms, sum.reads_per_s,
           sum.share_err[0], sum.share_err[1], sum.share_err[2], sum.design_err[0], sum.design_err[1],
           sum.design_err[2], sum.top_err, sum.nested_pct,
           sum.nested_us, sum.blocked_err, sum.s_cpu_err, sum.jank_exact, sum.discarded, sum.waited_ms, sum.outside_ms, sum.rt_outside_ms,
           sum.jank_outside_ms, failures);
    printf("%s: %d check(s) failed\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
