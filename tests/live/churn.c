/* SPDX-License-Identifier: MIT */
/*
 * churn.c — a recording that recycles its chunks as fast as it can: a group entered and left
 * millions of times a second (trace mode writes one 29-byte interval per call), an event
 * every 1000 calls. Runs for argv[1] seconds (default 3). The live tests read its file while
 * it runs.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <time.h>

#include <perfgroup.h>

static volatile unsigned sink;

PERF_GROUP("spell") __attribute__((noinline)) static void spell_check(unsigned x)
{
    sink += x * 2654435761u;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 3.0, end = now() + secs;
    perfgroup_thread_name("churn");
    while (now() < end) {
        perfgroup_event_begin("batch");
        for (unsigned i = 0; i < 1000; i++)
            spell_check(i);
        perfgroup_event_end();
    }
    return 0;
}
