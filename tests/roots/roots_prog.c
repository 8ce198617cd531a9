/* SPDX-License-Identifier: MIT */
/* tests/roots/roots_prog.c — built with a plugin and default=app (every function, main too,
 * in group "app"): main and the start routine `worker` (its address passed to pthread_create,
 * the plugin flags its site PERFGROUP_SITE_F_ROOT) open no implicit event, so each outermost
 * call they make is one event of its own (docs/accounting.md, "A thread's root frame").
 * Before, each root's activation was one implicit event spanning its thread's life and the
 * step() calls were re-entries inside it. Checks the process's snapshot after main's loop
 * (N events) and after the worker's thread ended (2N): "app" has exactly one event and one
 * activation per main_step()/worker_step() call (the roots' own activations are none), its
 * longest event is one step's, not a loop's. Exit 0 = pass.
 * bounds.h's functions (pg_*) are excluded from the group by the build
 * (tests/roots/CMakeLists.txt): they would be events of "app" too. */
#define _GNU_SOURCE
#include <perfgroup.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../bounds/bounds.h"

#define N 40

/* The work, static: its callers are all in "app" and neither is a root, so the plugins elide
 * its hooks (docs/plugins.md, "Elision"); it runs inside its caller's event. */
static unsigned spin(unsigned x)
{
    volatile unsigned s = x;
    for (unsigned i = 0; i < 200000; i++) /* ~0.2-0.5 ms */
        s = s * 1664525u + 1013904223u;
    return s;
}

/* Static too, but called from a root: each must keep its hooks, or a root's calls would
 * open no event at all (0 events where the checks want N). One for each kind of root, so
 * each rule is checked on its own: main by name, a start routine by its F_ROOT flag. */
static unsigned main_step(unsigned x) { return spin(x); }
static unsigned worker_step(unsigned x) { return spin(x + 1); }

static int64_t step_stolen; /* the most stolen from a step (written by one thread at a time) */

/* The time stolen from this thread between a and b (bounds.h), kept if the most so far */
__attribute__((no_instrument_function)) static void stolen_in(const struct pg_obs *a,
                                                              const struct pg_obs *b)
{
    int64_t st = pg_stolen(a, b);
    if (st > step_stolen)
        step_stolen = st;
}

static void *worker(void *arg)
{
    unsigned *acc = arg;
    for (unsigned i = 0; i < N; i++) {
        struct pg_obs o0 = pg_obs_now();
        *acc += worker_step(i);
        struct pg_obs o1 = pg_obs_now();
        stolen_in(&o0, &o1);
    }
    return NULL;
}

/* "app" must have `want` events and activations, none longer than a quarter of `loop_ms`
 * (the CPU clock's), + the most stolen from one step: a step's implicit event is a
 * stopwatch's, which counts it (docs/accounting.md, "Error bounds", stolen σ). An event
 * spanning a loop (a root that opened one) reads a whole loop's CPU. */
__attribute__((no_instrument_function)) static int check(const char *when, unsigned want,
                                                         double loop_ms)
{
    double stolen_ms = step_stolen / 1e6;
    struct perfgroup_snapshot *s = perfgroup_snapshot_take();
    const struct perfgroup_stats *app = s ? perfgroup_snapshot_find(s, "app") : NULL;
    if (!app) {
        printf("FAIL %s: no group 'app' in the snapshot\n", when);
        perfgroup_snapshot_free(s);
        return 0;
    }
    double max_ms = app->max_event_ns / 1e6;
    int ok = app->events == want && app->activations == want && max_ms < loop_ms / 4 + stolen_ms;
    printf("%s %s: app events %llu activations %llu (want %u each), longest event %.3f ms, "
           "a loop of %u steps %.3f ms CPU, at most %.3f ms stolen from a step\n", ok ? "ok  " : "FAIL", when,
           (unsigned long long)app->events, (unsigned long long)app->activations, want, max_ms,
           N, loop_ms, stolen_ms);
    perfgroup_snapshot_free(s);
    return ok;
}

int main(void)
{
    double loop = 0;
    unsigned acc = 0;
    for (unsigned i = 0; i < N; i++) {
        struct pg_obs o0 = pg_obs_now();
        acc += main_step(i);
        struct pg_obs o1 = pg_obs_now();
        loop += (o1.cpu - o0.cpu) / 1e6;
        stolen_in(&o0, &o1);
    }
    int ok = check("main's calls", N, loop);
    pthread_t t;
    if (pthread_create(&t, NULL, worker, &acc) != 0 || pthread_join(t, NULL) != 0) {
        printf("FAIL: pthread_create\n");
        return 1;
    }
    ok &= check("and the worker thread's", 2 * N, loop);
    printf("acc %u\n", acc);
    return ok ? 0 : 1;
}
