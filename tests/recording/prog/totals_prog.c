/* SPDX-License-Identifier: MIT */
/*
 * totals_prog.c — whole-run totals in the recording (issue 32, totals_test.py), built with
 * each plugin. Modes (argv[1]), each then N (argv[2]):
 *   one N      one thread: one janky event (~40 ms of CPU in "parse") first, then N short
 *              events in "parse", "render" and "net"
 *   threads N  N short-lived threads, one after another (at most 4 at once), each 20 events
 *              in the three groups
 *   many N     N events each of which runs every one of 2,000 groups ("g1000" … "g2999")
 * and then, whatever the mode, the in-process snapshot as JSON lines on stdout
 * ({"group":…,"cpu_ns":…,"wall_ns":…,"activations":…,"events":…,"max_event_ns":…,
 * "jank":[…]}), then "done"; with argv[3] "hold" it then sleeps, with no event, until it is
 * killed (the test's SIGKILL: the file stays RECORDING, totals as of the last commits).
 * With TOTALS_UNTIL=PATH in its environment, "one" goes on with short events after its N
 * until PATH exists (looked for every 1,024 events): a run as long as the test needs
 * (live.prometheus_totals restarts the sidecar while it runs).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <perfgroup.h>

static volatile uint64_t sink;

static uint64_t cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

PERF_GROUP("parse") __attribute__((noinline)) static void parse(unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        sink += i;
}
PERF_GROUP("render") __attribute__((noinline)) static void render(unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        sink ^= i;
}
PERF_GROUP("net") __attribute__((noinline)) static void net(unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        sink += i * 3u;
}

/* parse's CPU for at least ms of the thread's CPU clock */
PERF_GROUP("parse") __attribute__((noinline)) static void parse_for(unsigned ms)
{
    uint64_t end = cpu_now() + ms * 1000000ull;
    while (cpu_now() < end)
        sink++;
}

static void short_event(unsigned i)
{
    perfgroup_event_begin("short");
    parse(200 + i % 7);
    render(100);
    if (i % 3 == 0)
        net(50);
    perfgroup_event_end();
}

/* 2,000 groups, one function each */
#define G1(n) PERF_GROUP("g" #n) __attribute__((noinline)) static void f##n(void) { sink++; }
#define G10(p) G1(p##0) G1(p##1) G1(p##2) G1(p##3) G1(p##4) G1(p##5) G1(p##6) G1(p##7) G1(p##8) G1(p##9)
#define G100(p) G10(p##0) G10(p##1) G10(p##2) G10(p##3) G10(p##4) G10(p##5) G10(p##6) G10(p##7) G10(p##8) G10(p##9)
#define G1000(p) G100(p##0) G100(p##1) G100(p##2) G100(p##3) G100(p##4) G100(p##5) G100(p##6) G100(p##7) G100(p##8) G100(p##9)
G1000(1)
G1000(2)
#define P1(n) f##n,
#define P10(p) P1(p##0) P1(p##1) P1(p##2) P1(p##3) P1(p##4) P1(p##5) P1(p##6) P1(p##7) P1(p##8) P1(p##9)
#define P100(p) P10(p##0) P10(p##1) P10(p##2) P10(p##3) P10(p##4) P10(p##5) P10(p##6) P10(p##7) P10(p##8) P10(p##9)
#define P1000(p) P100(p##0) P100(p##1) P100(p##2) P100(p##3) P100(p##4) P100(p##5) P100(p##6) P100(p##7) P100(p##8) P100(p##9)
static void (*const many_fns[])(void) = {P1000(1) P1000(2)};

static void *worker(void *arg)
{
    (void)arg;
    for (unsigned i = 0; i < 20; i++)
        short_event(i);
    return NULL;
}

static void print_snapshot(void)
{
    struct perfgroup_snapshot *s = perfgroup_snapshot_take();
    if (!s) {
        fprintf(stderr, "no snapshot\n");
        exit(1);
    }
    for (size_t i = 0; i < perfgroup_snapshot_count(s); i++) {
        const struct perfgroup_stats *g = perfgroup_snapshot_at(s, i);
        if (!g->events)
            continue;
        printf("{\"group\":\"%s\",\"cpu_ns\":%llu,\"wall_ns\":%llu,\"activations\":%llu,"
               "\"events\":%llu,\"max_event_ns\":%llu,\"jank\":[", g->name,
               (unsigned long long)g->cpu_ns, (unsigned long long)g->wall_ns,
               (unsigned long long)g->activations, (unsigned long long)g->events,
               (unsigned long long)g->max_event_ns);
        for (int j = 0; j < PERFGROUP_JANK_BUCKETS; j++)
            printf("%s%llu", j ? "," : "", (unsigned long long)g->jank[j]);
        printf("]}\n");
    }
    perfgroup_snapshot_free(s);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s one|threads|many N [hold]\n", argv[0]);
        return 2;
    }
    unsigned n = (unsigned)strtoul(argv[2], NULL, 10);
    if (strcmp(argv[1], "one") == 0) {
        perfgroup_event_begin("janky");
        parse_for(40);
        perfgroup_event_end();
        for (unsigned i = 0; i < n; i++)
            short_event(i);
        const char *until = getenv("TOTALS_UNTIL");
        for (unsigned i = n; until && *until; i++) {
            if (i % 1024 == 0 && access(until, F_OK) == 0)
                break;
            short_event(i);
        }
    } else if (strcmp(argv[1], "threads") == 0) {
        pthread_t t[4];
        for (unsigned i = 0; i < n; i += 4) {
            unsigned k = n - i < 4 ? n - i : 4;
            for (unsigned j = 0; j < k; j++)
                if (pthread_create(&t[j], NULL, worker, NULL) != 0)
                    return 1;
            for (unsigned j = 0; j < k; j++)
                pthread_join(t[j], NULL);
        }
    } else if (strcmp(argv[1], "many") == 0) {
        size_t m = sizeof many_fns / sizeof many_fns[0];
        for (unsigned i = 0; i < n; i++) {
            perfgroup_event_begin("many");
            for (size_t j = 0; j < m; j++)
                many_fns[j]();
            perfgroup_event_end();
        }
    } else {
        return 2;
    }
    print_snapshot();
    printf("done\n");
    fflush(stdout);
    if (argc > 3 && strcmp(argv[3], "hold") == 0)
        for (;;)
            pause();
    return 0;
}
