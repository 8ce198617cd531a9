/* SPDX-License-Identifier: MIT */
/*
 * runtime/spawn.c — a runtime thread (the perfgroup-cpu sampler, the perfgroup-tick ticker):
 * detached, a 64 KiB stack, every signal blocked (it takes none of the program's), created
 * under the caller's latch (a signal handler's hooks meanwhile are refused, never nested).
 * Never from a hook: a thread creation may take locks and allocate.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>

#include "internal.h"

PG_HIDDEN int perfgroup__spawn(void *(*main_fn)(void *))
{
    struct pg_thread *latch = pg_latch_take();
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the new thread inherits the mask */
    pthread_attr_t attr;
    pthread_t th;
    int rc = pthread_attr_init(&attr);
    if (rc == 0) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 64 * 1024);
        rc = pthread_create(&th, &attr, main_fn, NULL);
        pthread_attr_destroy(&attr);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pg_latch_drop(latch);
    return rc;
}
