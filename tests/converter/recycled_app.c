/* SPDX-License-Identifier: MIT */
/*
 * recycled_app.c — the program behind converter.recycled_trace.<cc>: built with a real
 * plugin, recorded in trace mode into a buffer (1 MiB) far smaller than what it writes, as a
 * long trace recording of a server is. `serve` (group "loop") runs for the whole program,
 * the way an event loop does, and calls `step` (group "work") over and over; each step calls
 * `leaf` (group "leaf") four times. The buffer recycles the oldest chunks: the records of the
 * steps of then are gone, `serve`'s interval (written at its exit) stays. The profile must
 * not show the recycled stretch as `serve`'s own time (docs/converter.md, "Recycled
 * records"): serve does almost nothing itself, each step spins ~10 µs of wall time.
 *
 * The samples are wall time: a stall of the thread between two steps — descheduled, or
 * blocked inside the hooks (a trace recording's chunk switch touches the recycled chunk's
 * pages of the file mapping, which can wait on writeback on a loaded machine: 9.7 ms once in
 * CI) — is serve's own time in the profile, truly. The program measures it: around each call
 * of step, the time outside step's body (its hooks, the call) above STALL_NS; it prints each
 * (when, from serve's start, and how long), which the test adds to serve's bound where they
 * fall in the profile's samples.
 *
 *   recycled_app STEPS      prints "stall AT_NS NS" lines, then "stalls N"
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "perfgroup.h"

static volatile unsigned long sink;

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

PERF_GROUP("leaf") __attribute__((noinline)) static void leaf(void)
{
    long long end = now_ns() + 2000;
    do
        for (int i = 0; i < 50; i++)
            sink += (unsigned long)i;
    while (now_ns() < end);
}

static long long body_ns; /* the last step's body, first statement to last */

PERF_GROUP("work") __attribute__((noinline)) static void step(void)
{
    long long begin = now_ns();
    for (int i = 0; i < 4; i++)
        leaf();
    long long end = now_ns() + 2000, t;
    do
        sink++;
    while ((t = now_ns()) < end);
    body_ns = t - begin;
}

/* time outside step's body above this is a stall (the hooks and the call take < 2 us) */
#define STALL_NS 20000LL
#define STALLS_MAX 4096
static long long stall_at[STALLS_MAX], stall_ns[STALLS_MAX]; /* from serve's start */
static int stalls;

PERF_GROUP("loop") __attribute__((noinline)) static void serve(long steps)
{
    long long start = now_ns();
    for (long i = 0; i < steps; i++) {
        long long t0 = now_ns();
        step();
        long long t1 = now_ns(), outside = t1 - t0 - body_ns;
        if (outside > STALL_NS && stalls < STALLS_MAX) {
            stall_at[stalls] = t0 - start;
            stall_ns[stalls++] = outside;
        }
    }
}

int main(int argc, char **argv)
{
    serve(argc > 1 ? atol(argv[1]) : 40000);
    for (int i = 0; i < stalls; i++)
        printf("stall %lld %lld\n", stall_at[i], stall_ns[i]);
    printf("stalls %d%s\n", stalls, stalls == STALLS_MAX ? " (full)" : "");
    return 0;
}
