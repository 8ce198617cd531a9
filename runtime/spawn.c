/* SPDX-License-Identifier: MIT */
/*
 * runtime/spawn.c — a runtime thread (the perfgroup-cpu sampler, the perfgroup-tick ticker):
 * detached, a 64 KiB stack, every signal blocked (it takes none of the program's), created
 * under the caller's latch (a signal handler's hooks meanwhile are refused, never nested).
 * Never from a hook: a thread creation may take locks and allocate. It returns once the
 * thread has started and has its name (below), or after 100 ms.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#include "internal.h"

/* Runtime threads that reached their start routine (spawn_start), ever. */
static _Atomic uint64_t spawn_started;

/* The thread's first step, once the library's or sanitizer's start-up is done (ASan
 * allocates there): its name, then its main function. */
static void *spawn_start(void *arg)
{
    const struct pg_spawn *what = arg;
    pthread_setname_np(pthread_self(), what->name);
    atomic_fetch_add_explicit(&spawn_started, 1, memory_order_release);
    return what->main_fn(NULL);
}

/* Until a runtime thread started since `before` reaches its start routine, for at most
 * 100 ms: the caller's next step may be a fork (the first events of a program that forks
 * at once start the sampler), and a thread still inside its start-up in a runtime that
 * does not lock its allocator around fork (GCC 12's libasan: its allocator's region lock,
 * taken by the new thread's start-up, came locked into the child, whose every thread then
 * waited on it: recording.e2e.fork and e2e.kill hung under ASan) must not be half-way
 * there. A thread not scheduled within the bound is left to start later; two threads
 * spawned at once (the ticker and the sampler, from two threads) may each return on the
 * other's start: the window is then open, as before, for that rare spawn. */
static void spawn_wait(uint64_t before)
{
    struct timespec t0, now, nap = {0, 20000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned i = 0; atomic_load_explicit(&spawn_started, memory_order_acquire) == before; i++) {
        if (i < 64) {
            sched_yield();
            continue;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - t0.tv_sec) * 1000000000ll + (now.tv_nsec - t0.tv_nsec) > 100000000ll)
            return;
        nanosleep(&nap, NULL);
    }
}

PG_HIDDEN int perfgroup__spawn(const struct pg_spawn *what)
{
    struct pg_thread *latch = pg_latch_take();
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the new thread inherits the mask */
    pthread_attr_t attr;
    pthread_t th;
    uint64_t before = atomic_load_explicit(&spawn_started, memory_order_acquire);
    int rc = pthread_attr_init(&attr);
    if (rc == 0) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 64 * 1024);
        rc = pthread_create(&th, &attr, spawn_start, (void *)what);
        pthread_attr_destroy(&attr);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pg_latch_drop(latch);
    if (rc == 0) {
        int e = errno; /* (its nanosleep may meet a signal) */
        spawn_wait(before);
        errno = e;
    }
    return rc;
}
