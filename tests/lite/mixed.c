/* SPDX-License-Identifier: MIT */
/*
 * tests/lite/mixed.c — ABI 3 and ABI 2 code in one hot event (include/perfgroup/abi.h,
 * history of the version): this program, built with one plugin (ABI 3: lite frames), calls
 * libmixed-<other>.so (mixed_lib.c), built with the other plugin in weak-hooks mode (ABI 2:
 * the hooks) and holding one function in ABI 2's inline sequence written out, from its lite
 * frames, and the library calls back into them (lite.mixed: the program GCC-built, the library
 * Clang-built; lite.mixed-clang: the other way). Per ping event, P loops ITERS times:
 *   0.5 us of its own; S (a lite frame in a hot event): 0.3 us, every odd i Q (the library,
 *   through the hooks: a runtime frame inside a lite frame), which runs 0.4 us, calls R (a
 *   lite frame inside that runtime frame) when i has bit 1, S's group again (ABI 2's inline
 *   check skipping a re-entry of a lite frame's group) when i has bit 2, 0.2 us; 0.2 us; and
 *   when i % 8 == 2, Q straight from P (R inside it); 0.3 us.
 * The driver runs itself as three children (PERFGROUP_ACCOUNTING=exact, unset: the default,
 * lite frames in hot events, exact again), as tests/lite/lite.c does. Checks (exit 1 on any):
 *   - the versions: this program's sites say 3, the library's 2, and both registered (the
 *     runtime accepts 2 to 3: a refused module would leave the runtime off, no activations);
 *   - activations of P, S, Q, R equal in every run, and as counted by the program;
 *   - most of the ABI 2 re-entries of S's group made no hook call (the inline check read the
 *     mask and sp that S's frames, lite or not, set);
 *   - most of S's and R's activations ran in lite frames in the default run (cur.top a bit in
 *     their bodies; R's inside Q's runtime frame), none in exact mode;
 *   - the default run estimated every ping event but those slow enough to stay exact;
 *   - per group, charged and self as shares of top in the default run against the exact runs'
 *     mean, within 2 % of the share (0.5 points under 5 %) + the exact runs' spread + the
 *     hooks' cost of every call pair whose cost lands in the figure (an exact call pair's cost,
 *     measured in a calibration phase of the exact runs, as tests/lite/lite.c's, + LITE_NS:
 *     here, unlike lite.c, Q's pairs go through the hooks in both modes, so the difference is
 *     bounded, not corrected) + the time stolen. A lite frame's time given to the runtime
 *     frame around it (S's to P, R's to Q) or lost at a runtime frame inside a lite frame
 *     moves 10-40 points, beyond that bound.
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
#define CAL_EVENTS 10
#define CAL_CALLS 20000
#define EVENTS 48
#define ITERS 8000
#define LITE_NS 8.0 /* a lite pair's own cost, at most (docs/accounting.md) */

/* libmixed-clang.so (mixed_lib.c) */
void mx_q(unsigned i, int in_s);
void mx_lib_init(double iters_per_ns, void (*burn)(uint64_t), void (*r)(void));
uint64_t mx_lib_calls(void);
uint64_t mx_lib_inline(void);
unsigned mx_lib_abi(void);

static double iters_per_ns;
static uint64_t n_s, n_r, n_q_in_s, n_q_p;
static uint64_t lite_s, lite_r; /* S's, R's bodies run in a lite frame (cur.top is a bit) */

#define cpu_ns() ((uint64_t)thread_cpu_ns())

PERF_GROUP_NONE static void burn_ns(double ns) { pg_burn_iters((uint64_t)(ns * iters_per_ns)); }

/* ---- the program ------------------------------------------------------------------------ */

PERF_GROUP_NONE NOINLINE static void fe_plain(void) { burn_ns(300); }
PERF_GROUP_NONE NOINLINE static void fw_plain(void)
{
    for (int i = 0; i < CAL_CALLS; i++) {
        burn_ns(200);
        fe_plain();
    }
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
    n_r++;
    lite_r += PERFGROUP_TLS_CUR.top < 64;
    burn_ns(300);
}
PERF_GROUP("S") NOINLINE static void fs(unsigned i)
{
    n_s++;
    lite_s += PERFGROUP_TLS_CUR.top < 64;
    burn_ns(300);
    if (i & 1) {
        n_q_in_s++;
        mx_q(i, 1);
    }
    burn_ns(200);
}
PERF_GROUP("P") NOINLINE static void fp(void)
{
    for (unsigned i = 0; i < ITERS; i++) {
        burn_ns(500);
        fs(i);
        if (i % 8 == 2) {
            n_q_p++;
            mx_q(i, 0);
        }
        burn_ns(300);
    }
}

/* ---- child ----------------------------------------------------------------------------- */

static const char *groups[] = {"top", "P", "S", "Q", "R", "W", "E"};
#define NG (sizeof groups / sizeof *groups)
enum { G_TOP, G_P, G_S, G_Q, G_R, G_W, G_E };
static double walls[EVENTS];

extern struct perfgroup_site __start_perfgroup_sites[] __attribute__((visibility("hidden")));
extern struct perfgroup_site __stop_perfgroup_sites[] __attribute__((visibility("hidden")));

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

PERF_GROUP_NONE static int child(void)
{
    unsigned v = 0;
    for (struct perfgroup_site *s = __start_perfgroup_sites; s < __stop_perfgroup_sites; s++)
        v = v == 0 || v == s->version ? s->version : 1000;
    printf("abi %u %u\n", v, mx_lib_abi());
    uint64_t t0 = cpu_ns();
    pg_burn_iters(20000000);
    iters_per_ns = 20000000.0 / (double)(cpu_ns() - t0);
    mx_lib_init(iters_per_ns, pg_burn_iters, fr);
    struct perfgroup_snapshot *s0 = perfgroup_snapshot_take();
    uint64_t w_plain = 0;
    for (int e = 0; e < CAL_EVENTS; e++) {
        uint64_t c0 = cpu_ns();
        fw_plain();
        w_plain += cpu_ns() - c0;
        double w0 = wall_ns();
        perfgroup_event_begin("hooks");
        fw();
        perfgroup_event_end();
        walls[e] = wall_ns() - w0;
    }
    printf("plain %llu\n", (unsigned long long)w_plain);
    print_phase("hooks", s0, CAL_EVENTS);
    perfgroup_snapshot_free(s0);
    s0 = perfgroup_snapshot_take();
    for (int e = 0; e < EVENTS; e++) {
        double w0 = wall_ns();
        perfgroup_event_begin("ping");
        fp();
        perfgroup_event_end();
        walls[e] = wall_ns() - w0;
    }
    printf("counts %llu %llu %llu %llu %llu %llu %llu %llu\n", (unsigned long long)n_s,
           (unsigned long long)n_r, (unsigned long long)n_q_in_s, (unsigned long long)n_q_p,
           (unsigned long long)mx_lib_calls(), (unsigned long long)lite_s,
           (unsigned long long)lite_r, (unsigned long long)mx_lib_inline());
    print_phase("ping", s0, EVENTS);
    perfgroup_snapshot_free(s0);
    return 0;
}

/* ---- driver ---------------------------------------------------------------------------- */

struct run {
    double cpu[2][NG], self[2][NG];
    uint64_t acts[2][NG];
    uint64_t estimated[2];
    double slow[2];
    double w_plain;
    unsigned abi_prog, abi_lib;
    unsigned long long n_s, n_r, n_q_in_s, n_q_p, n_q_lib, lite_s, lite_r, s_inline;
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
        unsigned long long v[3];
        double x;
        if (sscanf(line, "abi %u %u", &r->abi_prog, &r->abi_lib) == 2)
            continue;
        if (sscanf(line, "plain %lf", &r->w_plain) == 1)
            continue;
        if (sscanf(line, "counts %llu %llu %llu %llu %llu %llu %llu %llu", &r->n_s, &r->n_r,
                   &r->n_q_in_s, &r->n_q_p, &r->n_q_lib, &r->lite_s, &r->lite_r, &r->s_inline) == 8)
            continue;
        if (sscanf(line, "%15s slow %lf", ph, &x) == 2) {
            r->slow[strcmp(ph, "ping") == 0] = x;
            continue;
        }
        if (sscanf(line, "%15s estimated %llu", ph, &v[0]) == 2) {
            r->estimated[strcmp(ph, "ping") == 0] = v[0];
            continue;
        }
        if (sscanf(line, "%15s %15s %llu %llu %llu", ph, g, &v[0], &v[1], &v[2]) != 5)
            continue;
        int k = strcmp(ph, "ping") == 0;
        for (size_t i = 0; i < NG; i++)
            if (strcmp(g, groups[i]) == 0) {
                r->cpu[k][i] = (double)v[0];
                r->self[k][i] = (double)v[1];
                r->acts[k][i] = v[2];
            }
    }
    return pg_spawn_end(f, pid);
}

#define CHECK(cond, ...) pg_check((cond), __VA_ARGS__)

PERF_GROUP_NONE static void check_run(const char *name, const struct run *r, int adaptive)
{
    CHECK(r->abi_prog == PERFGROUP_ABI_VERSION && r->abi_lib == PERFGROUP_ABI_VERSION_NO_LITE,
          "%s: the sites' versions: program %u (want %u), library %u (want %u)", name,
          r->abi_prog, PERFGROUP_ABI_VERSION, r->abi_lib, PERFGROUP_ABI_VERSION_NO_LITE);
    uint64_t want[NG] = {EVENTS, EVENTS, r->n_s, r->n_q_in_s + r->n_q_p, r->n_r, 0, 0};
    CHECK(r->n_s == (uint64_t)EVENTS * ITERS && r->n_q_lib == want[G_Q] && r->n_r > 0,
          "%s: the program's counts: S %llu, Q %llu (the library's %llu), R %llu", name, r->n_s,
          (unsigned long long)want[G_Q], r->n_q_lib, r->n_r);
    for (size_t i = 0; i < G_W; i++)
        CHECK(r->acts[1][i] == want[i], "%s: ping phase: %s activations %llu, called %llu", name,
              groups[i], (unsigned long long)r->acts[1][i], (unsigned long long)want[i]);
    /* ABI 2's inline check: S's group again (i % 8 == 5 or 7, from S) mostly without a hook
     * call (the first calls, before the runtime keyed the site, call it) */
    unsigned long long s_again = (unsigned long long)EVENTS * ITERS / 4;
    CHECK(2 * r->s_inline > s_again && r->s_inline <= s_again, "%s: ABI 2 re-entries of S "
          "skipped inline: %llu of %llu, want most", name, r->s_inline, s_again);
    /* lite frames: most of S's and R's activations in the default run (R inside Q's runtime
     * frame), none in exact mode */
    if (adaptive)
        CHECK(2 * r->lite_s > r->n_s && 2 * r->lite_r > r->n_r, "%s: activations in lite frames: "
              "S %llu of %llu, R %llu of %llu, want most", name, r->lite_s, r->n_s, r->lite_r, r->n_r);
    else
        CHECK(r->lite_s + r->lite_r == 0, "%s: %llu activations in lite frames in exact mode", name,
              r->lite_s + r->lite_r);
    if (adaptive)
        CHECK(r->estimated[1] + r->slow[1] >= EVENTS, "%s: ping events estimated %llu, want every "
              "one (%d) but those slow enough to stay exact (%.0f)", name,
              (unsigned long long)r->estimated[1], EVENTS, r->slow[1]);
    else
        CHECK(r->estimated[1] == 0, "%s: %llu events estimated in exact mode", name,
              (unsigned long long)r->estimated[1]);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--child") == 0)
        return child();
    char path[4096];
    const char *self = pg_exe_path(path, sizeof path);
    struct run r[3];
    const char *modes[3] = {"exact", "", "exact"};
    double stolen = (double)pg_steal_ns();
    for (int k = 0; k < 3; k++)
        if (run_child(self, modes[k], &r[k]) != 0) {
            printf("FAIL: the %s child failed\n", *modes[k] ? modes[k] : "default");
            return 1;
        }
    double now_stolen = (double)pg_steal_ns();
    stolen = stolen >= 0 && now_stolen >= stolen ? now_stolen - stolen + 1e7 : 0;
    for (int k = 0; k < 3; k++)
        check_run(k == 1 ? "default" : k ? "exact #2" : "exact #1", &r[k], k == 1);
    /* an exact call pair's cost: W's charged time per call less its loop's without groups */
    double calls = (double)CAL_EVENTS * CAL_CALLS;
    double dh = ((r[0].cpu[0][G_W] + r[2].cpu[0][G_W]) - (r[0].w_plain + r[2].w_plain)) / 2 / calls;
    printf("hooks: a call pair costs %.1f ns in exact mode\n", dh);
    CHECK(dh < 1000, "hooks: the exact runs' hook cost per pair %.1f ns: not a hook's", dh);
    dh = dh < 0 ? 0 : dh;
    /* call pairs whose cost lands in each figure (the default run's counts: equal in all) */
    double s = (double)r[1].n_s, q = (double)(r[1].n_q_in_s + r[1].n_q_p), rr = (double)r[1].n_r;
    double nested[NG] = {0}, children[NG] = {0}, acts[NG] = {0};
    acts[G_P] = EVENTS, acts[G_S] = s, acts[G_Q] = q, acts[G_R] = rr;
    nested[G_P] = s + q + rr, children[G_P] = s + (double)r[1].n_q_p;
    nested[G_S] = (double)r[1].n_q_in_s + rr; /* (R's calls from P's own Q too: above) */
    children[G_S] = (double)r[1].n_q_in_s;
    nested[G_Q] = children[G_Q] = rr;
    children[G_TOP] = EVENTS;
    printf("| figure | exact #1 %% | exact #2 %% | default %% | default - exact | bound |\n"
           "|---|---|---|---|---|---|\n");
    for (int what = 0; what < 2; what++)
        for (size_t i = 0; i < G_W; i++) {
            if (what == 0 && i == G_TOP)
                continue;
            double v[3], top[3];
            for (int k = 0; k < 3; k++) {
                v[k] = what ? r[k].self[1][i] : r[k].cpu[1][i];
                top[k] = r[k].cpu[1][G_TOP];
            }
            double e1 = 100 * v[0] / top[0], e2 = 100 * v[2] / top[2], a = 100 * v[1] / top[1];
            double ref = (e1 + e2) / 2, tmin = top[1] < top[0] ? top[1] : top[0];
            double pairs = what ? acts[i] + children[i] : acts[i] + nested[i];
            double bound = (ref >= 5 ? 0.02 * ref : 0.5) + fabs(e1 - e2) +
                           100 * ((dh + LITE_NS) * pairs + stolen) / tmin;
            printf("| %s %s | %.2f | %.2f | %.2f | %+.2f | %.2f |\n", groups[i],
                   what ? "self" : "charged", e1, e2, a, a - ref, bound);
            CHECK(fabs(a - ref) <= bound, "%s %s: default %.2f %% of top against exact %.2f %% "
                  "(bound %.2f)", groups[i], what ? "self" : "charged", a, ref, bound);
        }
    printf("ping events estimated %llu (default), %llu and %llu (exact); in lite frames (default): "
           "S %llu of %llu, R %llu of %llu; ABI 2 re-entries skipped inline %llu; stolen %.1f ms\n",
           (unsigned long long)r[1].estimated[1], (unsigned long long)r[0].estimated[1],
           (unsigned long long)r[2].estimated[1], r[1].lite_s, r[1].n_s, r[1].lite_r, r[1].n_r,
           r[1].s_inline, stolen / 1e6);
    printf(pg_failures ? "%d check(s) failed\n" : "ok\n", pg_failures);
    return pg_failures ? 1 : 0;
}
