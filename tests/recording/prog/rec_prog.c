/* SPDX-License-Identifier: MIT */
/*
 * rec_prog.c — a small program built with a perfgroup plugin for the recording tests:
 * 1000 explicit events on the main thread and 500 on a worker, each calling outer() (group
 * "outer") which calls inner() (group "inner") twice. Run with PERFGROUP_OUTPUT set.
 */
#include <pthread.h>
#include <stdio.h>

#include "perfgroup.h"

static volatile unsigned sink;

PERF_GROUP("inner") __attribute__((noinline)) static void inner(unsigned i) { sink += i; }

PERF_GROUP("outer") __attribute__((noinline)) static void outer(unsigned i) {
    inner(i);
    inner(i + 1);
}

static void loop(unsigned n) {
    for (unsigned i = 0; i < n; i++) {
        perfgroup_event_begin("tick");
        outer(i);
        perfgroup_event_end();
    }
}

static void *worker(void *arg) {
    (void)arg;
    perfgroup_thread_name("worker");
    loop(500);
    return NULL;
}

int main(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        return 1;
    loop(1000);
    pthread_join(t, NULL);
    perfgroup_marker("done", "rec_prog");
    return 0;
}
