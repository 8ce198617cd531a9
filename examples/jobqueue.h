/* SPDX-License-Identifier: MIT */
/*
 * examples/jobqueue.h — the smallest job queue a thread pool needs (mutex + condition
 * variable, FIFO, intrusive links): examples/pool.c and tests/tasks/ hand their jobs over
 * with it. Not instrumented: no group (the pool's work is, in its own group).
 */
#ifndef PERFGROUP_EXAMPLE_JOBQUEUE_H
#define PERFGROUP_EXAMPLE_JOBQUEUE_H

#include <pthread.h>
#include <stddef.h>

struct jq_link { struct jq_link *next; }; /* a job's first member */
struct jq {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct jq_link *head, **tail;
    int closing;
};
#define JQ_INIT(q) {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, &(q).head, 0}

static inline void jq_push(struct jq *q, struct jq_link *j)
{
    j->next = NULL;
    pthread_mutex_lock(&q->mu);
    *q->tail = j;
    q->tail = &j->next;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* The oldest job, waiting for one; NULL once the queue is closed and empty. */
static inline struct jq_link *jq_pop(struct jq *q)
{
    pthread_mutex_lock(&q->mu);
    while (!q->head && !q->closing)
        pthread_cond_wait(&q->cv, &q->mu);
    struct jq_link *j = q->head;
    if (j && !(q->head = j->next))
        q->tail = &q->head;
    pthread_mutex_unlock(&q->mu);
    return j;
}

/* No more jobs: the workers drain the queue, then jq_pop returns NULL. */
static inline void jq_close(struct jq *q)
{
    pthread_mutex_lock(&q->mu);
    q->closing = 1;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

#endif
