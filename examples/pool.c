/* SPDX-License-Identifier: MIT */
/*
 * examples/pool.c — add-ons that hand work to a thread pool, and are charged for it
 * (perfgroup_task_*, docs/accounting.md "Tasks").
 *
 *   thumbs   queues a thumbnail job per image: 20 ms of CPU each, on the pool
 *   index    queues an indexing job per document: 5 ms each, on the pool
 *
 * The add-ons themselves only queue (a few µs each). Without tasks both would look free and
 * the pool's group "pool" would carry all the CPU; with them, each add-on's row shows the CPU
 * its jobs took on the workers ("on behalf"), apart from its own.
 *
 *   gcc -fplugin=perfgroup.so -Iinclude examples/pool.c -lperfgroup -lpthread -o pool
 *   ./pool                                   # prints the snapshot
 *   PERFGROUP_OUTPUT=pool.pgm ./pool && perfgroup-convert pool.pgm --summary
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <perfgroup.h>

#include "jobqueue.h"

#define WORKERS 2

struct job {
    struct jq_link link;
    perfgroup_task task; /* who asked: captured when the job is queued */
    long us;
};

static struct jq queue = JQ_INIT(queue);
static _Thread_local volatile uint64_t sink; /* per thread: spun on by every worker */

static void work_us(long us)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    int64_t end = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + us * 1000;
    for (;;) {
        for (int i = 0; i < 1000; i++)
            sink += (uint64_t)i;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        if ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec >= end)
            return;
    }
}

/* The pool's API: queue `us` of work on behalf of whoever calls. */
static void pool_submit(long us)
{
    struct job *j = malloc(sizeof *j);
    if (!j)
        abort();
    j->task = perfgroup_task_capture(); /* the groups running here: the caller's add-on */
    j->us = us;
    jq_push(&queue, &j->link);
}

PERF_GROUP("pool") static void pool_run(const struct job *j)
{
    work_us(j->us);
}

static void *worker(void *arg)
{
    (void)arg;
    perfgroup_thread_name("pool");
    struct job *j;
    while ((j = (struct job *)jq_pop(&queue))) {
        perfgroup_task_begin(j->task, "job"); /* charged to the groups that queued it */
        pool_run(j);
        perfgroup_task_end();
        free(j);
    }
    return NULL;
}

PERF_GROUP("thumbs") static void thumbs_on_image(int i)
{
    (void)i;
    pool_submit(20000);
}

PERF_GROUP("index") static void index_on_document(int i)
{
    (void)i;
    pool_submit(5000);
}

int main(void)
{
    pthread_t th[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        pthread_create(&th[i], NULL, worker, NULL);
    for (int i = 0; i < 40; i++) {
        thumbs_on_image(i);
        index_on_document(i);
    }
    jq_close(&queue);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(th[i], NULL);

    struct perfgroup_snapshot *s = perfgroup_snapshot_take();
    printf("%-8s %12s %14s %6s\n", "group", "own CPU ms", "on behalf ms", "tasks");
    for (size_t i = 0; i < perfgroup_snapshot_count(s); i++) {
        const struct perfgroup_stats *g = perfgroup_snapshot_at(s, i);
        printf("%-8s %12.3f %14.3f %6" PRIu64 "\n", g->name, (double)g->cpu_ns / 1e6,
               (double)g->task_cpu_ns / 1e6, g->tasks);
    }
    perfgroup_snapshot_free(s);
    return 0;
}
