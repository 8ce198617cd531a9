/* SPDX-License-Identifier: MIT */
/* tests/roots/roots_prog.c — built with a plugin and default=app (every function, main too,
 * in group "app"): main and the start routine `worker` (its address passed to pthread_create,
 * the plugin flags its site PERFGROUP_SITE_F_ROOT) open no implicit event, so each outermost
 * call they make is one event of its own (docs/accounting.md, "A thread's root frame").
 * Before, each root's activation was one implicit event spanning its thread's life and the
 * step() calls were re-entries inside it. Checks the process's snapshot after main's loop
 * (N events) and after the worker's thread ended (2N): "app" has exactly one event and one
 * activation per main_step()/worker_step() call (the roots' own activations are none), its
 * longest event is one step's, not a loop's. Exit 0 = pass. */
#include <perfgroup.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define N 40

__attribute__((no_instrument_function)) static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

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

static void *worker(void *arg)
{
    unsigned *acc = arg;
    for (unsigned i = 0; i < N; i++)
        *acc += worker_step(i);
    return NULL;
}

/* "app" must have `want` events and activations, none longer than a quarter of `loop_ms`. */
__attribute__((no_instrument_function)) static int check(const char *when, unsigned want,
                                                         double loop_ms)
{
    struct perfgroup_snapshot *s = perfgroup_snapshot_take();
    const struct perfgroup_stats *app = s ? perfgroup_snapshot_find(s, "app") : NULL;
    if (!app) {
        printf("FAIL %s: no group 'app' in the snapshot\n", when);
        perfgroup_snapshot_free(s);
        return 0;
    }
    double max_ms = app->max_event_ns / 1e6;
    int ok = app->events == want && app->activations == want && max_ms < loop_ms / 4;
    printf("%s %s: app events %llu activations %llu (want %u each), longest event %.3f ms, "
           "a loop of %u steps %.3f ms CPU\n", ok ? "ok  " : "FAIL", when,
           (unsigned long long)app->events, (unsigned long long)app->activations, want, max_ms,
           N, loop_ms);
    perfgroup_snapshot_free(s);
    return ok;
}

int main(void)
{
    double t0 = cpu_ms();
    unsigned acc = 0;
    for (unsigned i = 0; i < N; i++)
        acc += main_step(i);
    double loop = cpu_ms() - t0;
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
