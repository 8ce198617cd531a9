/* SPDX-License-Identifier: MIT */
/*
 * test_threads_mem N — the runtime's resident memory per thread (issue 34): N threads with
 * 64 KiB stacks each run 10 events in two groups (A calling B), then wait, all alive, while
 * the main thread reads its resident set (VmRSS) — without threads, with them, and once
 * they have all exited (their entries stay, for later threads to reuse: an exit must not
 * make an entry's untouched pages resident). Prints
 * "rss_before_kb X rss_threads_kb Y rss_joined_kb Z". threads_mem_test.py runs it with the runtime
 * with and without "plain" and bounds the difference per thread by what
 * docs/architecture.md states: <= 16 KiB.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfgroup.h"
#include "perfgroup/abi.h"
#include "task.h"

SITE(site_a, "A", "fa");
SITE(site_b, "B", "fb");

static pthread_barrier_t ran, measured;
static int plain;

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kb;
}

static void *thread_main(void *arg)
{
    (void)arg;
    for (int e = 0; e < 10 && !plain; e++) {
        perfgroup_event_begin("step");
        uint64_t ta = __perfgroup_enter(&site_a);
        uint64_t tb = __perfgroup_enter(&site_b);
        if (tb)
            __perfgroup_exit(&site_b, tb);
        if (ta)
            __perfgroup_exit(&site_a, ta);
        perfgroup_event_end();
    }
    pthread_barrier_wait(&ran);
    pthread_barrier_wait(&measured);
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    if (n <= 0)
        return 2;
    plain = argc > 2 && strcmp(argv[2], "plain") == 0;
    /* the main thread and the runtime set up before the first reading */
    perfgroup_event_begin("warm-up");
    uint64_t ta = __perfgroup_enter(&site_a);
    if (ta)
        __perfgroup_exit(&site_a, ta);
    perfgroup_event_end();
    pthread_t *t = calloc((size_t)n, sizeof *t);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_barrier_init(&ran, NULL, (unsigned)n + 1);
    pthread_barrier_init(&measured, NULL, (unsigned)n + 1);
    long before = rss_kb();
    for (int i = 0; i < n; i++)
        if (!t || pthread_create(&t[i], &attr, thread_main, NULL) != 0) {
            fprintf(stderr, "cannot start thread %d\n", i);
            return 1;
        }
    pthread_barrier_wait(&ran);
    long with = rss_kb();
    pthread_barrier_wait(&measured);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    printf("rss_before_kb %ld rss_threads_kb %ld rss_joined_kb %ld\n", before, with, rss_kb());
    free(t);
    return 0;
}
