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
 *   recycled_app STEPS
 */
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

PERF_GROUP("work") __attribute__((noinline)) static void step(void)
{
    for (int i = 0; i < 4; i++)
        leaf();
    long long end = now_ns() + 2000;
    do
        sink++;
    while (now_ns() < end);
}

PERF_GROUP("loop") __attribute__((noinline)) static void serve(long steps)
{
    for (long i = 0; i < steps; i++)
        step();
}

int main(int argc, char **argv)
{
    serve(argc > 1 ? atol(argv[1]) : 40000);
    return 0;
}
