/* SPDX-License-Identifier: MIT */
/* tests/roots/roots_prog.c — built with a plugin and default=app (every function, main too,
 * in group "app"): main opens no implicit event, so each outermost call it makes is one event
 * of its own (docs/accounting.md, "A thread's root frame"). Before, main's activation was one
 * implicit event spanning the whole run and step() calls were re-entries inside it.
 * Checks the process's snapshot: "app" has exactly N events and N activations (main's own
 * activation is none), its longest event is one step's, not the run's. Exit 0 = pass. */
#include <perfgroup.h>
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

__attribute__((noinline)) unsigned step(unsigned x)
{
    volatile unsigned s = x;
    for (unsigned i = 0; i < 200000; i++) /* ~0.2-0.5 ms */
        s = s * 1664525u + 1013904223u;
    return s;
}

int main(void)
{
    double t0 = cpu_ms();
    unsigned acc = 0;
    for (unsigned i = 0; i < N; i++)
        acc += step(i);
    double whole = cpu_ms() - t0;
    struct perfgroup_snapshot *s = perfgroup_snapshot_take();
    const struct perfgroup_stats *app = s ? perfgroup_snapshot_find(s, "app") : NULL;
    if (!app) {
        printf("FAIL: no group 'app' in the snapshot\n");
        return 1;
    }
    double max_ms = app->max_event_ns / 1e6;
    printf("app: events %llu activations %llu max event %.3f ms; the loop took %.3f ms CPU "
           "(acc %u)\n", (unsigned long long)app->events, (unsigned long long)app->activations,
           max_ms, whole, acc);
    int ok = app->events == N && app->activations == N && max_ms < whole / 4;
    printf("%s\n", ok ? "ok" : "FAIL: expected one event per step() call (N = 40)");
    perfgroup_snapshot_free(s);
    return ok ? 0 : 1;
}
