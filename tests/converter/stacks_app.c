/* SPDX-License-Identifier: MIT */
/*
 * stacks_app.c — the program behind converter.stacks: built with a real plugin (file group
 * "app"), recorded in trace mode, converted; every Gecko sample taken while a phase's work
 * runs must carry the call stack the test (conv_test.py, STACKS) writes for that phase.
 *
 * Phases (each a CPU spin inside an interval marker "phase" whose text is the phase name):
 *   ui           main > ui_handler                                  plain call
 *   recursion    main > rec > rec > rec > rec                       recursion, one acquire
 *   save-before  main > save                                        before a nested loop
 *   nested-ui    main > save > dispatch_nested > ui_handler         inside the nested loop
 *   save-after   main > save                                        after it
 *   deep         main > jmp_outer > jmp_inner > jmp_deep            then longjmp out of two
 *   after-jump   main > after_jump                                  jmp_outer's exit dropped
 *                                                                   the frames longjmp left
 *   bg           bg_thread > bg_loop > bg_step                      a second thread
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdint.h>
#include <time.h>

#include "perfgroup.h"

static volatile unsigned long sink;
static jmp_buf jump;

/* The marked work: `us` µs of wall time spinning inside an interval marker. Not
 * instrumented, so the stack during it is its caller's. */
PERF_GROUP_NONE static void work(const char *phase, long us)
{
    uint64_t m = perfgroup_marker_begin();
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        for (int i = 0; i < 200; i++)
            sink += (unsigned long)i;
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
    perfgroup_marker_end("phase", phase, m);
}

PERF_GROUP("ui") void ui_handler(const char *phase)
{
    work(phase, 4000);
}

PERF_GROUP("math") void rec(int n)
{
    if (n > 0)
        rec(n - 1);
    else
        work("recursion", 4000);
    sink += (unsigned long)n; /* no tail call */
}

void dispatch_nested(void)
{
    ui_handler("nested-ui");
}

PERF_GROUP("sync") void save(void)
{
    work("save-before", 3000);
    perfgroup_nested_loop_begin();
    for (int i = 0; i < 2; i++) {
        perfgroup_event_begin("nested");
        dispatch_nested();
        perfgroup_event_end();
    }
    perfgroup_nested_loop_end();
    work("save-after", 3000);
}

PERF_GROUP("io") void jmp_deep(void)
{
    work("deep", 3000);
    longjmp(jump, 1);
}

PERF_GROUP("io") void jmp_inner(void)
{
    jmp_deep();
    sink++;
}

PERF_GROUP("io") void after_jump(void)
{
    work("after-jump", 3000);
}

PERF_GROUP("io") void jmp_outer(void)
{
    if (!setjmp(jump))
        jmp_inner();
    /* Work here would still show jmp_inner > jmp_deep: the runtime learns that longjmp left
     * them at the next hook (docs/accounting.md), here jmp_outer's exit. */
}

PERF_GROUP("bg") void bg_step(void)
{
    work("bg", 4000);
}

PERF_GROUP("bg") void bg_loop(void)
{
    for (int i = 0; i < 2; i++)
        bg_step();
}

void *bg_thread(void *arg)
{
    (void)arg;
    perfgroup_thread_name("bg");
    for (int i = 0; i < 4; i++) {
        perfgroup_event_begin("bg job");
        bg_loop();
        perfgroup_event_end();
    }
    return 0;
}

int main(void)
{
    pthread_t th;
    perfgroup_thread_name("main");
    if (pthread_create(&th, 0, bg_thread, 0) != 0)
        return 1;
    for (int i = 0; i < 4; i++) {
        perfgroup_event_begin("plain");
        ui_handler("ui");
        perfgroup_event_end();
        perfgroup_event_begin("recursion");
        rec(3);
        perfgroup_event_end();
        perfgroup_event_begin("save");
        save();
        perfgroup_event_end();
        perfgroup_event_begin("jump");
        jmp_outer();
        after_jump();
        perfgroup_event_end();
    }
    pthread_join(th, 0);
    return 0;
}
