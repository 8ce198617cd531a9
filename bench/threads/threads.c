/* SPDX-License-Identifier: MIT */
/*
 * bench/threads/threads.c — many threads at once (issue 34): N threads with 64 KiB stacks
 * start together (a barrier), each runs E explicit events calling one grouped function,
 * and they are joined together. Built plain and instrumented by bench/threads/run.py,
 * which compares peak RSS and wall time.
 *
 *   threads N [E]     prints "threads N wall_ns W maxrss_kb R"
 *   held N [E]        the same, but every thread runs its first event, then waits at a
 *                     second barrier for all the others to have run theirs, then runs the
 *                     rest: all N threads are inside the recording at once, each holding
 *                     its chunk (tests/recording/threads_test.py)
 *   spawn N           N threads created and joined one after another, each entering one
 *                     group once: prints "spawn N ns_per_thread X" (thread start-up cost)
 */
#define _GNU_SOURCE
#ifdef PLAIN /* the baseline: no perfgroup at all */
#define PERF_GROUP(g)
#define perfgroup_event_begin(n) ((void)(n))
#define perfgroup_event_end() ((void)0)
#else
#include <perfgroup.h>
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static pthread_barrier_t start, held;
static int events = 10, hold;
static volatile unsigned sink;

PERF_GROUP("work") __attribute__((noinline)) static void work(unsigned i) {
    for (unsigned k = 0; k < 200; k++)
        sink += i * k;
}

static void *thread_main(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start);
    for (int e = 0; e < events; e++) {
        perfgroup_event_begin("step");
        work((unsigned)e);
        perfgroup_event_end();
        if (hold && e == 0)
            pthread_barrier_wait(&held);
    }
    return NULL;
}

static void *spawn_main(void *arg) {
    work((unsigned)(uintptr_t)arg);
    return NULL;
}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s threads|held N [E] | spawn N\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[2]);
    if (n <= 0)
        return 2;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_t *t = calloc((size_t)n, sizeof *t);
    if (!t)
        return 1;
    long long t0 = now_ns();
    if (strcmp(argv[1], "spawn") == 0) {
        for (int i = 0; i < n; i++) {
            if (pthread_create(&t[i], &attr, spawn_main, (void *)(uintptr_t)i) != 0)
                return 1;
            pthread_join(t[i], NULL);
        }
        printf("spawn %d ns_per_thread %lld\n", n, (now_ns() - t0) / n);
        return 0;
    }
    if (argc > 3)
        events = atoi(argv[3]);
    hold = strcmp(argv[1], "held") == 0;
    if (hold && events < 1)
        events = 1; /* the second barrier is after the first event */
    pthread_barrier_init(&start, NULL, (unsigned)n);
    pthread_barrier_init(&held, NULL, (unsigned)n);
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], &attr, thread_main, NULL) != 0) {
            fprintf(stderr, "pthread_create %d failed\n", i);
            return 1;
        }
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    long long wall = now_ns() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("threads %d wall_ns %lld maxrss_kb %ld\n", n, wall, ru.ru_maxrss);
    free(t);
    return 0;
}
