/* SPDX-License-Identifier: MIT */
/*
 * tests/lite/env_r.c — PERFGROUP_LITE_R from the environment, whatever it says (a number
 * beyond 64 bits' range, 2^64 - 1, 1, 0, not a number): the program runs, its result is
 * right, and both groups' activations are the calls made (lite frames or not). Before the
 * clamp (lifecycle.c, PG_LITE_R_MAX), 18446744073709551615 made the countdown's reload divide
 * by zero: SIGFPE at the first hot event.
 */
#include <stdio.h>
#include <stdlib.h>

#include "perfgroup.h"

#define N 2000000

PERF_GROUP("a") __attribute__((noinline)) static int fa(int x) { return x * 3 + 1; }
PERF_GROUP("b") __attribute__((noinline)) static int fb(int x) { return fa(x) + 2; }

int main(void)
{
    long long s = 0;
    perfgroup_event_begin("e");
    for (int i = 0; i < N; i++)
        s += fb(i);
    perfgroup_event_end();
    struct perfgroup_snapshot *snap = perfgroup_snapshot_take();
    const struct perfgroup_stats *a = snap ? perfgroup_snapshot_find(snap, "a") : NULL;
    const struct perfgroup_stats *b = snap ? perfgroup_snapshot_find(snap, "b") : NULL;
    const char *r = getenv("PERFGROUP_LITE_R");
    int ok = s == 3LL * N * (N - 1) / 2 + 3LL * N && a && b && a->activations == N &&
             b->activations == N;
    printf("PERFGROUP_LITE_R=%s: sum %lld, a %llu, b %llu activations of %d: %s\n", r ? r : "",
           s, a ? (unsigned long long)a->activations : 0ULL,
           b ? (unsigned long long)b->activations : 0ULL, N, ok ? "ok" : "FAIL");
    perfgroup_snapshot_free(snap);
    return ok ? 0 : 1;
}
