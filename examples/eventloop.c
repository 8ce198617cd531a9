/* SPDX-License-Identifier: MIT */
/*
 * examples/eventloop.c — a small event loop with three add-ons, each a performance group.
 *
 *   clock   redraws a clock on every tick: cheap, always there
 *   spell   checks spelling on every keypress: usually fast, every 8th check takes ~40 ms
 *   sync    saves on every 10th tick by spinning a *nested* event loop (as a modal dialog
 *           would) that keeps delivering keypresses meanwhile
 *
 * The loop itself is the file group "core" (-fplugin-arg-perfgroup-default=core). An alert
 * prints a line the moment an add-on janks, as Firefox did for slow add-ons. Run with
 * PERFGROUP_OUTPUT=demo.pgm to record; without it the program prints its own table.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <perfgroup.h>

enum kind { TICK, KEY };
struct event { enum kind kind; int n; };

static volatile uint64_t sink;

/* Burn `us` microseconds of this thread's CPU time: the add-ons' "work". */
static void work_us(long us)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    long long end = ts.tv_sec * 1000000000LL + ts.tv_nsec + us * 1000LL;
    do {
        for (int i = 0; i < 500; i++)
            sink += (uint64_t)i * 2654435761u;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    } while (ts.tv_sec * 1000000000LL + ts.tv_nsec < end);
}

/* ---- add-on "clock" ---- */
PERF_GROUP("clock") static void clock_format(char *buf, size_t n, int tick)
{
    snprintf(buf, n, "%02d:%02d", tick / 60, tick % 60);
    work_us(150);
}
PERF_GROUP("clock") static void clock_on_tick(int tick)
{
    char buf[16];
    clock_format(buf, sizeof buf, tick);
    work_us(100);
}

/* ---- add-on "spell" ---- */
PERF_GROUP("spell") static int spell_lookup(int word)
{
    work_us(word % 8 == 7 ? 40000 : 300); /* the dictionary reload that janks */
    return word % 5 != 0;
}
PERF_GROUP("spell") static void spell_on_key(int key)
{
    if (!spell_lookup(key))
        work_us(200); /* underline */
}

/* ---- add-on "sync" ---- */
static void dispatch(const struct event *ev);

PERF_GROUP("sync") static void sync_save(int tick)
{
    work_us(2000); /* serialise */
    /* A modal "saving…" dialog: the nested loop keeps delivering keypresses. sync is not
     * charged for what runs in it. */
    perfgroup_nested_loop_begin();
    for (int i = 0; i < 3; i++) {
        struct event key = {KEY, tick * 10 + i};
        perfgroup_event_begin("keypress (nested)");
        dispatch(&key);
        perfgroup_event_end();
    }
    perfgroup_nested_loop_end();
    work_us(1000); /* close the file */
}
PERF_GROUP("sync") static void sync_on_tick(int tick)
{
    if (tick % 10 == 9)
        sync_save(tick);
}

/* ---- the loop: file group "core" ---- */
static void dispatch(const struct event *ev)
{
    if (ev->kind == TICK) {
        clock_on_tick(ev->n);
        sync_on_tick(ev->n);
    } else {
        spell_on_key(ev->n);
    }
}

static void on_jank(const struct perfgroup_alert_info *a, void *arg)
{
    (void)arg;
    if (strcmp(a->group, "core") == 0)
        return;
    printf("perfgroup alert: add-on \"%s\" took %.1f ms of CPU in one \"%s\" event\n",
           a->group, a->group_cpu_ns / 1e6, a->event);
}

static void print_table(void)
{
    struct perfgroup_snapshot *s = perfgroup_snapshot_take();
    if (!s)
        return;
    printf("\n%-8s %9s %9s %7s %7s %6s %6s %6s %6s\n", "group", "CPU ms", "wall ms", "acts",
           "events", ">1ms", ">4ms", ">16ms", ">32ms");
    for (size_t i = 0; i < perfgroup_snapshot_count(s); i++) {
        const struct perfgroup_stats *g = perfgroup_snapshot_at(s, i);
        printf("%-8s %9.1f %9.1f %7llu %7llu %6llu %6llu %6llu %6llu\n", g->name,
               g->cpu_ns / 1e6, g->wall_ns / 1e6, (unsigned long long)g->activations,
               (unsigned long long)g->events, (unsigned long long)g->jank[0],
               (unsigned long long)g->jank[2], (unsigned long long)g->jank[4],
               (unsigned long long)g->jank[5]);
    }
    perfgroup_snapshot_free(s);
}

int main(int argc, char **argv)
{
    int ticks = argc > 1 ? atoi(argv[1]) : 40;
    perfgroup_thread_name("main loop");
    perfgroup_alert_add(16 * 1000000ull, on_jank, NULL); /* a frame at 60 Hz */
    for (int t = 0; t < ticks; t++) {
        struct event tick = {TICK, t}, key = {KEY, t};
        perfgroup_event_begin("tick");
        dispatch(&tick);
        perfgroup_event_end();
        perfgroup_event_begin("keypress");
        dispatch(&key);
        perfgroup_event_end();
    }
    if (!getenv("PERFGROUP_OUTPUT"))
        print_table();
    return 0;
}
