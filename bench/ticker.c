/* SPDX-License-Identifier: MIT */
/*
 * bench/ticker.c — what the adaptive accounting's ticker (runtime/ticker.c, the
 * perfgroup-tick thread) costs: the CPU time of that thread while one thread runs events of
 * fast transitions (estimating: the ticker runs at its period), then while the program sleeps
 * (after a second nobody looked, it slows down), read from /proc/self/task/<tid>/schedstat.
 * Beside it: the main thread's CPU, and the longest interval between two ticks.
 *
 *   bench_ticker [seconds]     (default 5)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "perfgroup.h"
#include "perfgroup/abi.h"

static struct perfgroup_site sites[1] __attribute__((aligned(8))) = {
    {PERFGROUP_ABI_VERSION, 0, 1, "bench\0", "leaf_a\0ticker.c", 0, 0},
};

static double clock_s(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The ticker thread's run time (ns, schedstat's first field); -1 if there is none. */
static double ticker_run_ns(void)
{
    DIR *d = opendir("/proc/self/task");
    double r = -1;
    for (struct dirent *e; d && (e = readdir(d));) {
        char p[300], comm[64] = {0};
        snprintf(p, sizeof p, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(p, "r");
        if (!f)
            continue;
        int ok = fgets(comm, sizeof comm, f) && strncmp(comm, "perfgroup-tick", 14) == 0;
        fclose(f);
        snprintf(p, sizeof p, "/proc/self/task/%s/schedstat", e->d_name);
        unsigned long long run = 0;
        if (ok && (f = fopen(p, "r"))) {
            if (fscanf(f, "%llu", &run) == 1)
                r = (double)run;
            fclose(f);
        }
    }
    if (d)
        closedir(d);
    return r;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 5;
    __perfgroup_register_module(PERFGROUP_ABI_VERSION, &sites[0], &sites[1]);
    struct timespec named = {0, 20000000}; /* the ticker names itself when it first runs */
    nanosleep(&named, NULL);
    double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    double k0 = ticker_run_ns();
    long pairs = 0;
    while (clock_s(CLOCK_MONOTONIC) - w0 < secs) {
        perfgroup_event_begin("bench");
        bench_hooked_ns(&sites[0], 100000); /* 100,000 transitions: the event estimates */
        perfgroup_event_end();
        pairs += 100000;
    }
    double w = clock_s(CLOCK_MONOTONIC) - w0, c = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
    double k1 = ticker_run_ns();
    struct perfgroup_snapshot *s = perfgroup_snapshot_take();
    printf("busy  %.2f s wall, main thread %.2f s CPU, %.1f M transitions, %llu events "
           "estimated\n", w, c, pairs / 1e6, (unsigned long long)perfgroup_snapshot_estimated(s));
    perfgroup_snapshot_free(s);
    if (k0 < 0) {
        printf("no perfgroup-tick thread (PERFGROUP_ACCOUNTING=exact?)\n");
        return 0;
    }
    printf("      ticker %.3f ms CPU: %.3f %% of one core, %.4f %% of the main thread's CPU; "
           "longest tick interval %.2f ms\n", (k1 - k0) / 1e6, (k1 - k0) / 1e9 / w * 100,
           (k1 - k0) / 1e9 / c * 100, (double)perfgroup_tick_max_ns() / 1e6);
    for (int phase = 0; phase < 2; phase++) { /* the second after the last look, then idle */
        k0 = ticker_run_ns();
        struct timespec ts = {phase ? 3 : 1, phase ? 0 : 100000000};
        nanosleep(&ts, NULL);
        k1 = ticker_run_ns();
        printf("%s ticker %.3f ms CPU over %s\n", phase ? "idle " : "after", (k1 - k0) / 1e6,
               phase ? "the next 3 s" : "the first 1.1 s");
    }
    return 0;
}
