/* SPDX-License-Identifier: MIT */
/*
 * exit_prog.c — an implicit event still open when the process ends (issue 19): main enters
 * a group as an instrumented function `run` would (not as `main`: a thread's root frame opens
 * no implicit event, docs/accounting.md), works `ms` of CPU, and ends by
 *   r  returning from main (the exit hook runs first: the ordinary case)
 *   e  exit(0)         (the event is open: the runtime's destructor commits it)
 *   q  quick_exit(0)   (no destructor runs: at_quick_exit commits it)
 * It prints what it saw of its thread around the work (CPU, wall, involuntary switches): the
 * truth and the terms of its bound (tests/bounds) exit_test.py checks against.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../runtime/task.h"
#include "../../bounds/bounds.h"

SITE(site_main, "app", "run");

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    /* one CPU: a stopwatch that ends on another CPU is discarded (docs/accounting.md) */
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &set);
    sched_setaffinity(0, sizeof set, &set);
    uint64_t tok = __perfgroup_enter(&site_main);
    struct pg_obs o0 = pg_obs_now();
    burn(atol(argv[2]) * 1000000);
    struct pg_obs o1 = pg_obs_now();
    printf("cpu_ns %lld wall_ns %lld nivcsw %ld\n", (long long)(o1.cpu - o0.cpu),
           (long long)(o1.wall - o0.wall), o1.nivcsw - o0.nivcsw);
    fflush(stdout);
    switch (argv[1][0]) {
    case 'e': exit(0);
    case 'q': quick_exit(0);
    default: break;
    }
    __perfgroup_exit(&site_main, tok);
    return 0;
}
