/* SPDX-License-Identifier: MIT */
/*
 * tests/lite/lite.c — lite frames (abi3, the plugins' inline transitions) and the sampled
 * accounting of an event's hot part against exact mode in the same binary (docs/accounting.md,
 * "Lite frames: the hot part sampled by segment"). Built with each plugin at -O2 (lite.gcc,
 * lite.clang) and by scripts/compilers.sh with every compiler of its matrix.
 *
 * The driver runs itself three times as a child: PERFGROUP_ACCOUNTING=exact, unset (the
 * default: adaptive, lite frames in hot events), =exact. Each child runs two phases and
 * prints, per group, its charged CPU time, self time, activations and jank histogram:
 *   hooks  CAL_EVENTS events; in each W (0.2 us of its own) calls E (0.3 us) CAL_CALLS times:
 *          what one call pair costs in this mode, outside the callee's stopwatch (W's time per
 *          call) and inside it (E's), between the same pieces of work as below (a loop of
 *          empty calls measured half of what the hooks cost inside the callee there): exact
 *          mode charges the hooks' own time, ~40-60 ns a pair, which lite frames do not spend
 *          (a few ns inline);
 *   ping   EVENTS events; in each P loops ITERS times: 0.3 us of its own, a call of Q (0.25 us,
 *          a call of R every 2nd time (0.3 us), 0.15 us), a call of R every 4th time, 0.2 us:
 *          3.5 group transitions per ~1.1 us, 2.7 M in the phase; and Q calls P's function
 *          every 8th time (a re-entry). In event EVENTS / 2, P calls Q once more for 40 ms of
 *          CPU (the thread's CPU clock around it): one long activation among 770,000 short
 *          ones (Q's other events: ~8 ms each).
 * Checks (exit 1 on any failure):
 *   - activations equal in every run (and as called);
 *   - most of Q's and R's activations ran in lite frames in the default run (cur.top a bit in
 *     their bodies: the plugin emitted the lite sequence), none in the exact runs;
 *   - Q's jank in every run: one event above 16 ms, in the bucket of the long activation's
 *     own CPU time or the next;
 *   - the default run estimated every ping event (but those slow enough to stay exact,
 *     pg_event_may_stay_exact), the exact runs none;
 *   - per group (P, Q, R; top's self), charged and self as shares of top (the event's CPU) in
 *     the default run against the exact runs' less the hooks' cost they charged (the model
 *     below, from the hooks phase of the exact runs only), within 2 % of the share (0.5
 *     points under 5 %) + the two corrected exact runs' spread + 20 % of the correction +
 *     lite frames' own cost (LITE_NS a pair, not subtracted) + the time stolen.
 * The hooks' cost (docs/accounting.md): exact mode charges each call pair's hook time h to the
 * frames around it — x of it inside the callee's stopwatch (the enter hook after its counter
 * read, the exit hook before its), h - x to the caller's self time, h to every enclosing
 * group's charged time. So, with dh = h_exact - h_lite and dx = x_exact - x_lite measured in
 * the hooks phase: charged_exact(g) - charged_lite(g) = dh x (activations nested in g's
 * frames) + dx x acts(g); self_exact(g) - self_lite(g) = dx x acts(g) + (dh - dx) x (its
 * direct callees' activations).
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
#include "perfgroup/abi.h"
#include "../runtime/task.h"
#include "../bounds/bounds.h"
#include "../bounds/modes.h"

#define NOINLINE __attribute__((noinline))
#define CAL_EVENTS 20
#define CAL_CALLS 20000
#define EVENTS 64
#define ITERS 12000
#define LONG_EVENT (EVENTS / 2)
#define LITE_NS 8.0 /* a lite pair's own cost, at most (docs/accounting.md) */

static double iters_per_ns;
static uint64_t lite_q, lite_r; /* Q's, R's bodies run in a lite frame (cur.top is a bit) */

#define cpu_ns() ((uint64_t)thread_cpu_ns())

PERF_GROUP_NONE static void burn_ns(double ns) { pg_burn_iters((uint64_t)(ns * iters_per_ns)); }

/* ---- the program -------------------------------------------------------------------------- */

/* The hooks phase's loop without groups: what its work costs without any hook. */
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

PERF_GROUP("R") NOINLINE static void fr(void)
{
    lite_r += PERFGROUP_TLS_CUR.top < 64;
    burn_ns(300);
}
PERF_GROUP("P") NOINLINE static void fp_more(void) { burn_ns(50); }
PERF_GROUP("Q") NOINLINE static void fq(int i)
{
    lite_q += PERFGROUP_TLS_CUR.top < 64;
    burn_ns(250);
    if (i & 1)
        fr();
    if ((i & 7) == 0)
        fp_more(); /* P runs: a re-entry */
    burn_ns(150);
}
PERF_GROUP("Q") NOINLINE static void fq_long(double ns) { burn_ns(ns); }
static uint64_t long_cpu;
PERF_GROUP("P") NOINLINE static void fp(int e)
{
    for (int i = 0; i < ITERS; i++) {
        burn_ns(300);
        fq(i);
        if ((i & 3) == 0)
            fr();
        burn_ns(200);
    }
    if (e == LONG_EVENT) { /* one long activation of Q among the short ones */
        uint64_t c0 = cpu_ns();
        fq_long(40e6);
        long_cpu = cpu_ns() - c0;
    }
}

/* ---- child: run the phases, print what the snapshots say -------------------------------- */

static const char *groups[] = {"top", "P", "Q", "R", "W", "E"};
#define NG (sizeof groups / sizeof *groups)
enum { G_TOP, G_P, G_Q, G_R, G_W, G_E };

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
        if (!s)
            continue;
        printf("%s %s %llu %llu %llu", phase, groups[i], (unsigned long long)s->cpu_ns,
               (unsigned long long)s->self_ns, (unsigned long long)s->activations);
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
    uint64_t w_plain = 0, e_plain = 0;
    for (int e = 0; e < CAL_EVENTS; e++) { /* interleaved with the same loops without groups */
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
        perfgroup_event_begin("ping");
        fp(e);
        perfgroup_event_end();
        walls[e] = wall_ns() - w0;
    }
    printf("long %llu\n", (unsigned long long)long_cpu);
    printf("lite %llu %llu\n", (unsigned long long)lite_q, (unsigned long long)lite_r);
    print_phase("ping", s0, EVENTS);
    perfgroup_snapshot_free(s0);
    return 0;
}

/* ---- driver --------------------------------------------------------------------------------- */

struct run {
    double cpu[2][NG], self[2][NG]; /* [phase][group] */
    uint64_t acts[2][NG];
    uint64_t jank[NG][PERFGROUP_JANK_BUCKETS]; /* the ping phase's */
    uint64_t estimated[2];
    double slow[2];
    double long_ms;
    double w_plain, e_plain; /* the hooks phase's loops without groups, ns */
    unsigned long long lite_q, lite_r; /* the ping phase's activations in lite frames */
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
        unsigned long long v[3 + PERFGROUP_JANK_BUCKETS];
        double lm;
        if (sscanf(line, "plain %lf %lf", &r->w_plain, &r->e_plain) == 2)
            continue;
        if (sscanf(line, "lite %llu %llu", &r->lite_q, &r->lite_r) == 2)
            continue;
        if (sscanf(line, "long %lf", &lm) == 1) {
            r->long_ms = lm / 1e6;
            continue;
        }
        if (sscanf(line, "%15s slow %lf", ph, &lm) == 2) {
            r->slow[strcmp(ph, "ping") == 0] = lm;
            continue;
        }
        if (sscanf(line, "%15s estimated %llu", ph, &v[0]) == 2) {
            r->estimated[strcmp(ph, "ping") == 0] = v[0];
            continue;
        }
        int n = sscanf(line, "%15s %15s %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
                       ph, g, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9],
                       &v[10], &v[11], &v[12]);
        if (n != 5 + PERFGROUP_JANK_BUCKETS)
            continue;
        int k = strcmp(ph, "ping") == 0;
        for (size_t i = 0; i < NG; i++)
            if (strcmp(g, groups[i]) == 0) {
                r->cpu[k][i] = (double)v[0];
                r->self[k][i] = (double)v[1];
                r->acts[k][i] = v[2];
                if (k)
                    memcpy(r->jank[i], &v[3], sizeof r->jank[i]);
            }
    }
    return pg_spawn_end(f, pid);
}

#define CHECK(cond, ...) pg_check((cond), __VA_ARGS__)

/* Activations as called: the hooks phase's W and E, the ping phase's P, Q, R. */
static const uint64_t want_cal[NG] = {CAL_EVENTS, 0, 0, 0, CAL_EVENTS, (uint64_t)CAL_EVENTS * CAL_CALLS};
static const uint64_t want_ping[NG] = {EVENTS, EVENTS, (uint64_t)EVENTS * ITERS + 1,
                                       (uint64_t)EVENTS * (ITERS / 2 + ITERS / 4), 0, 0};

PERF_GROUP_NONE static void check_run(const char *name, const struct run *r, int adaptive)
{
    for (size_t i = 1; i < NG; i++) {
        CHECK(r->acts[0][i] == want_cal[i], "%s: hooks phase: %s activations %llu, called %llu",
              name, groups[i], (unsigned long long)r->acts[0][i], (unsigned long long)want_cal[i]);
        CHECK(r->acts[1][i] == want_ping[i], "%s: ping phase: %s activations %llu, called %llu",
              name, groups[i], (unsigned long long)r->acts[1][i], (unsigned long long)want_ping[i]);
    }
    /* lite frames: most of Q's and R's activations in the default run, none in exact mode
     * (fails if the plugin emits no lite sequence: every transition through the hooks) */
    if (adaptive)
        CHECK(2 * r->lite_q > want_ping[G_Q] && 2 * r->lite_r > want_ping[G_R],
              "%s: activations in lite frames: Q %llu of %llu, R %llu of %llu, want most", name,
              r->lite_q, (unsigned long long)want_ping[G_Q], r->lite_r,
              (unsigned long long)want_ping[G_R]);
    else
        CHECK(r->lite_q + r->lite_r == 0, "%s: %llu activations in lite frames in exact mode",
              name, r->lite_q + r->lite_r);
    const uint64_t *j = r->jank[G_Q];
    int b = (int)floor(log2(r->long_ms));
    /* alone above 2^b ms (32 for ~40): a ping event (~8 ms of Q's CPU in exact mode) may pass
     * 16 ms where the VM's stolen time lands in it (490 ms stolen in one run of a loaded CI:
     * "exact #2 ... >16 2"), not 32 */
    CHECK(b >= 4 && b + 2 < PERFGROUP_JANK_BUCKETS && j[b] == 1 && j[b + 2] == 0,
          "%s: Q's long event (%.1f ms of CPU) not alone above %d ms, in (%d, %d] ms: >16 %llu, "
          ">32 %llu, >64 %llu, >128 %llu", name, r->long_ms, 1 << b, 1 << b, 4 << b,
          (unsigned long long)j[4], (unsigned long long)j[5], (unsigned long long)j[6],
          (unsigned long long)j[7]);
    if (adaptive)
        CHECK(r->estimated[1] + r->slow[1] >= EVENTS && r->estimated[0] + r->slow[0] >= CAL_EVENTS,
              "%s: events estimated %llu + %llu, want every one (%d + %d) but those slow enough "
              "to stay exact (%.0f + %.0f)", name, (unsigned long long)r->estimated[0],
              (unsigned long long)r->estimated[1], CAL_EVENTS, EVENTS, r->slow[0], r->slow[1]);
    else
        CHECK(r->estimated[0] + r->estimated[1] == 0, "%s: %llu events estimated in exact mode",
              name, (unsigned long long)(r->estimated[0] + r->estimated[1]));
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--child") == 0)
        return child();
    char path[4096];
    const char *self = pg_exe_path(path, sizeof path);
    struct run r[3];
    const char *modes[3] = {"exact", "", "exact"}; /* "": unset, the default */
    double stolen = (double)pg_steal_ns(); /* tests/bounds/bounds.h */
    for (int k = 0; k < 3; k++)
        if (run_child(self, modes[k], &r[k]) != 0) {
            printf("FAIL: the %s child failed\n", *modes[k] ? modes[k] : "default");
            return 1;
        }
    double now_stolen = (double)pg_steal_ns();
    stolen = stolen >= 0 && now_stolen >= stolen ? now_stolen - stolen + 1e7 : 0;
    for (int k = 0; k < 3; k++)
        check_run(k == 1 ? "default" : k ? "exact #2" : "exact #1", &r[k], k == 1);
    /* the hooks' cost per call pair in exact mode (the exact runs' mean): W's charged time per
     * call less its loop's without groups (the whole pair), E's less its body's (the part
     * inside the callee's stopwatch). Lite frames' own cost (a few ns a pair inline, and one
     * transition in R through the runtime) is not subtracted: it is in the bound (LITE_NS),
     * and nothing of the default run goes into the correction, so a broken estimator cannot
     * hide in it. */
    double calls = (double)CAL_EVENTS * CAL_CALLS;
    double dh = ((r[0].cpu[0][G_W] + r[2].cpu[0][G_W]) - (r[0].w_plain + r[2].w_plain)) / 2 / calls;
    double dx = ((r[0].cpu[0][G_E] + r[2].cpu[0][G_E]) - (r[0].e_plain + r[2].e_plain)) / 2 / calls;
    printf("hooks: a call pair costs %.1f ns in exact mode, %.1f ns of it inside the callee's "
           "stopwatch\n", dh, dx);
    CHECK(dh < 1000 && dx < 1000, "hooks: the exact runs' hook cost per pair %.1f ns, %.1f "
          "inside: not a hook's", dh, dx);
    /* (two CPU-time differences of ~0.2 s: on a loaded machine one can come out below 0) */
    dh = dh < 0 ? 0 : dh;
    dx = dx < 0 ? 0 : dx > dh ? dh : dx;
    /* the structure of the ping phase: activations nested in each group's frames, and its
     * direct callees' */
    double q = (double)want_ping[G_Q], rq = (double)EVENTS * (ITERS / 2), rp = (double)EVENTS * (ITERS / 4);
    double nested[NG] = {0}, children[NG] = {0}, acts[NG] = {0};
    nested[G_P] = q + rq + rp;
    children[G_P] = q + rp;
    nested[G_Q] = children[G_Q] = rq;
    children[G_TOP] = EVENTS;
    acts[G_P] = EVENTS, acts[G_Q] = q, acts[G_R] = rq + rp;
    /* shares of top (the event's CPU, two exact readings): this machine's speed varies by
     * 25 % between runs under load, the shares do not */
    double all = acts[G_P] + acts[G_Q] + acts[G_R]; /* every pair is inside top */
    double corr_top = dh * all;
    printf("| figure | exact #1 %% | exact #2 %% | default %% | hooks' correction (points) | "
           "default - (exact - correction) | bound |\n|---|---|---|---|---|---|---|\n");
    for (int what = 0; what < 2; what++)
        for (size_t i = 0; i < G_W; i++) {
            if (what == 0 && i == G_TOP)
                continue; /* top's charged time is the event's CPU: two exact readings */
            double v[3], top[3];
            for (int k = 0; k < 3; k++) {
                v[k] = what ? r[k].self[1][i] : r[k].cpu[1][i];
                top[k] = r[k].cpu[1][G_TOP];
            }
            double e1 = 100 * v[0] / top[0], e2 = 100 * v[2] / top[2], a = 100 * v[1] / top[1];
            double corr = what ? dx * acts[i] + (dh - dx) * children[i] : dh * nested[i] + dx * acts[i];
            /* each exact run less the hooks' cost, as a share of its top less all of it */
            double c1 = 100 * (v[0] - corr) / (top[0] - corr_top), c2 = 100 * (v[2] - corr) / (top[2] - corr_top);
            double ref = (c1 + c2) / 2, tmin = top[1] < top[0] ? top[1] : top[0];
            double pairs = what ? acts[i] + children[i] : acts[i] + nested[i];
            double bound = (ref >= 5 ? 0.02 * ref : 0.5) + fabs(c1 - c2) +
                           0.2 * fabs((e1 + e2) / 2 - ref) + 100 * (LITE_NS * pairs + stolen) / tmin;
            printf("| %s %s | %.2f | %.2f | %.2f | %.2f | %+.2f | %.2f |\n", groups[i],
                   what ? "self" : "charged", e1, e2, a, (e1 + e2) / 2 - ref, a - ref, bound);
            CHECK(fabs(a - ref) <= bound, "%s %s: default %.2f %% of top against exact %.2f %% "
                  "less the hooks' cost: %.2f %% (bound %.2f)", groups[i], what ? "self" : "charged",
                  a, (e1 + e2) / 2, ref, bound);
        }
    printf("Q's long activation: %.1f / %.1f / %.1f ms of CPU; ping events estimated %llu (default), "
           "%llu and %llu (exact); in lite frames (default): Q %llu, R %llu; stolen %.1f ms\n",
           r[0].long_ms, r[1].long_ms, r[2].long_ms, (unsigned long long)r[1].estimated[1],
           (unsigned long long)r[0].estimated[1], (unsigned long long)r[2].estimated[1],
           r[1].lite_q, r[1].lite_r, stolen / 1e6);
    printf(pg_failures ? "%d check(s) failed\n" : "ok\n", pg_failures);
    return pg_failures ? 1 : 0;
}
