/* SPDX-License-Identifier: MIT */
/*
 * bench/tasks.c — cost of the task API (perfgroup_task_*, issue 27), in ns per call:
 *
 *   bare        the empty leaf call alone (the baseline)
 *   capture     perfgroup_task_capture() inside a running group (the value kept), + the leaf
 *   task        perfgroup_task_begin(k, "job") + leaf + perfgroup_task_end(), no event open:
 *               the task is an explicit event of its own, one captured group charged
 *   task-part   the same inside an open explicit event: the task is a part of it
 *   event       perfgroup_event_begin("job") + leaf + perfgroup_event_end(): what a task of
 *               its own costs beyond an explicit event
 *
 * Interleaved repetitions (rotated order), medians of thread CPU time (bench/bench.h).
 * Usage: bench_tasks [N] [reps]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "perfgroup.h"
#include "perfgroup/abi.h"

static struct perfgroup_site sites[1] __attribute__((aligned(8))) = {
    {PERFGROUP_ABI_VERSION, 0, 1, "addon\0", "queue\0tasks.c", 0, 0},
};

static perfgroup_task cap;
static volatile uint64_t keep;

static double run(int c, long n)
{
    double t0 = bench_now_ns();
    switch (c) {
    case 0:
        for (long i = 0; i < n; i++)
            bench_leaf();
        break;
    case 1: {
        uint64_t tok = __perfgroup_enter(&sites[0]);
        for (long i = 0; i < n; i++) {
            perfgroup_task k = perfgroup_task_capture();
            keep += k.opaque[0];
            bench_leaf();
        }
        if (tok)
            __perfgroup_exit(&sites[0], tok);
        break;
    }
    case 2:
        for (long i = 0; i < n; i++) {
            perfgroup_task_begin(cap, "job");
            bench_leaf();
            perfgroup_task_end();
        }
        break;
    case 3:
        perfgroup_event_begin("loop");
        for (long i = 0; i < n; i++) {
            perfgroup_task_begin(cap, "job");
            bench_leaf();
            perfgroup_task_end();
        }
        perfgroup_event_end();
        break;
    default:
        for (long i = 0; i < n; i++) {
            perfgroup_event_begin("job");
            bench_leaf();
            perfgroup_event_end();
        }
        break;
    }
    return (bench_now_ns() - t0) / (double)n;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    int reps = argc > 2 ? atoi(argv[2]) : 11;
    __perfgroup_register_module(PERFGROUP_ABI_VERSION, &sites[0], &sites[1]);
    uint64_t tok = __perfgroup_enter(&sites[0]);
    cap = perfgroup_task_capture();
    if (tok)
        __perfgroup_exit(&sites[0], tok);
    if (!cap.opaque[0]) {
        fprintf(stderr, "bench_tasks: nothing captured\n");
        return 1;
    }
    static const char *names[] = {"bare", "capture", "task", "task-part", "event"};
    double med[5];
    bench_interleaved(5, run, n, reps, med);
    printf("(N=%ld calls x %d interleaved repetitions, medians of thread CPU time)\n", n, reps);
    for (int c = 0; c < 5; c++)
        printf("%-10s %9.1f ns/call  %+9.1f ns over bare  %7.2f x bare\n", names[c], med[c],
               med[c] - med[0], med[c] / med[0]);
    return 0;
}
