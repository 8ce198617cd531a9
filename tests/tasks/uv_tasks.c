/* SPDX-License-Identifier: MIT */
/*
 * tests/tasks/uv_tasks.c — libuv's own thread pool: requests queued with uv_queue_work are
 * charged to the groups that queued them (issue 27; docs/accounting.md "Tasks").
 *
 * Linked with -Wl,--wrap=uv_queue_work (and Debian's libuv): every uv_queue_work call of this
 * program goes through __wrap_uv_queue_work below, which captures the caller's running groups
 * (perfgroup_task_capture) and queues the request with a trampoline work callback that runs
 * the real one between perfgroup_task_begin and _end on libuv's worker thread. The program's
 * code is unchanged; no libuv source is touched. The same shim serves any program.
 *
 * Add-on A (group "addon_a") queues 6 requests of 25 ms of CPU (150 ms), add-on B 2 (50 ms),
 * from callbacks of a timer on the loop, to libuv's pool of UV_THREADPOOL_SIZE=2 threads.
 * Truth: the worker's thread CPU clock read at the start and end of each work callback
 * (tests/bounds/bounds.h); A's and B's task_cpu_ns must equal it within pg_bound_measured
 * summed over the requests (plus the shim's own code around the callback: the hooks term)
 * and within 3 % (above it by the time stolen in the requests too: a stopwatch counts it,
 * the workers' CPU clocks do not; docs/accounting.md, "Error bounds"). Exit 0 = pass.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <perfgroup.h>
#include <uv.h>

#include "../bounds/bounds.h"

#define FAIL(...) do { fprintf(stderr, "%s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define MS 1000000ll

/* ---- the shim: uv_queue_work with the caller's groups ----------------------------------- */

int __real_uv_queue_work(uv_loop_t *loop, uv_work_t *req, uv_work_cb work_cb,
                         uv_after_work_cb after_work_cb);
int __wrap_uv_queue_work(uv_loop_t *loop, uv_work_t *req, uv_work_cb work_cb,
                         uv_after_work_cb after_work_cb);

/* A request's caller and callbacks, by request (req->data is the caller's): a small table
 * under a mutex, the entry freed when the after-work callback runs (also for a cancelled
 * request, whose work callback never runs). */
struct pending {
    uv_work_t *req;
    perfgroup_task task;
    uv_work_cb work_cb;
    uv_after_work_cb after_cb;
};
#define PENDING_MAX 256
static struct pending pending[PENDING_MAX];
static pthread_mutex_t pending_mu = PTHREAD_MUTEX_INITIALIZER;

PERF_GROUP_NONE static struct pending *pending_find(uv_work_t *req)
{
    for (int i = 0; i < PENDING_MAX; i++)
        if (pending[i].req == req)
            return &pending[i];
    return NULL;
}

PERF_GROUP_NONE static void work_tramp(uv_work_t *req)
{
    pthread_mutex_lock(&pending_mu);
    struct pending p = *pending_find(req);
    pthread_mutex_unlock(&pending_mu);
    perfgroup_task_begin(p.task, "uv_work");
    p.work_cb(req);
    perfgroup_task_end();
}

PERF_GROUP_NONE static void after_tramp(uv_work_t *req, int status)
{
    pthread_mutex_lock(&pending_mu);
    struct pending *e = pending_find(req);
    uv_after_work_cb cb = e->after_cb;
    e->req = NULL;
    pthread_mutex_unlock(&pending_mu);
    if (cb)
        cb(req, status);
}

PERF_GROUP_NONE int __wrap_uv_queue_work(uv_loop_t *loop, uv_work_t *req, uv_work_cb work_cb,
                                         uv_after_work_cb after_work_cb)
{
    if (!work_cb)
        return UV_EINVAL;
    perfgroup_task k = perfgroup_task_capture(); /* the groups of whoever queues it */
    pthread_mutex_lock(&pending_mu);
    struct pending *e = pending_find(NULL);
    if (e)
        *e = (struct pending){req, k, work_cb, after_work_cb};
    pthread_mutex_unlock(&pending_mu);
    if (!e) /* table full: queued unattributed */
        return __real_uv_queue_work(loop, req, work_cb, after_work_cb);
    int r = __real_uv_queue_work(loop, req, work_tramp, after_tramp);
    if (r != 0) {
        pthread_mutex_lock(&pending_mu);
        e->req = NULL;
        pthread_mutex_unlock(&pending_mu);
    }
    return r;
}

/* ---- the program: two add-ons queueing work from a timer -------------------------------- */

enum { OWNER_A, OWNER_B };
struct job {
    uv_work_t req;
    int owner;
};
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t truth[2], bound[2], stolen[2];
static int done_n[2];

static int64_t cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static _Thread_local volatile uint64_t sink;
static void work_cb(uv_work_t *req)
{
    struct job *j = req->data;
    struct pg_obs a = pg_obs_now();
    int64_t end = cpu_now() + 25 * MS;
    while (cpu_now() < end)
        for (int i = 0; i < 200; i++)
            sink += (uint64_t)i;
    struct pg_obs b = pg_obs_now();
    pthread_mutex_lock(&mu);
    truth[j->owner] += b.cpu - a.cpu;
    bound[j->owner] += pg_bound_measured(b.cpu - a.cpu, &a, &b);
    stolen[j->owner] += pg_stolen(&a, &b);
    done_n[j->owner]++;
    pthread_mutex_unlock(&mu);
}

static void after_cb(uv_work_t *req, int status)
{
    if (status != 0)
        FAIL("work status %d", status);
    free(req->data);
}

static void queue(uv_loop_t *loop, int owner)
{
    struct job *j = calloc(1, sizeof *j);
    if (!j)
        FAIL("out of memory");
    j->owner = owner;
    j->req.data = j;
    if (uv_queue_work(loop, &j->req, work_cb, after_cb) != 0)
        FAIL("uv_queue_work");
}

PERF_GROUP("addon_a") __attribute__((noinline)) static void addon_a_tick(uv_loop_t *loop)
{
    queue(loop, OWNER_A);
}

PERF_GROUP("addon_b") __attribute__((noinline)) static void addon_b_tick(uv_loop_t *loop)
{
    queue(loop, OWNER_B);
}

static int ticks;
static void on_tick(uv_timer_t *t)
{
    int i = ticks++;
    if (i < 8) {
        if (i % 4 == 3)
            addon_b_tick(t->loop);
        else
            addon_a_tick(t->loop);
    }
    if (ticks >= 8)
        uv_timer_stop(t);
}

int main(void)
{
    setenv("UV_THREADPOOL_SIZE", "2", 1);
    uv_loop_t *loop = uv_default_loop();
    uv_timer_t timer;
    uv_timer_init(loop, &timer);
    uv_timer_start(&timer, on_tick, 1, 1);
    struct perfgroup_snapshot *s0 = perfgroup_snapshot_take();
    int64_t steal0 = pg_steal_ns();
    uv_run(loop, UV_RUN_DEFAULT); /* returns once the timer stopped and every request ended */
    /* over all the requests, + the tick /proc/stat may not show yet: caps their sum */
    int64_t run_stolen = pg_steal_ns() - steal0 + pg_steal_tick_ns();
    struct perfgroup_snapshot *s1 = perfgroup_snapshot_take();
    struct perfgroup_snapshot *d = perfgroup_snapshot_diff(s1, s0);
    const struct perfgroup_stats *A = perfgroup_snapshot_find(d, "addon_a");
    const struct perfgroup_stats *B = perfgroup_snapshot_find(d, "addon_b");
    if (!A || !B)
        FAIL("addon_a or addon_b missing from the snapshot");
    if (done_n[OWNER_A] != 6 || done_n[OWNER_B] != 2 || A->tasks != 6 || B->tasks != 2)
        FAIL("requests: A %d run, %" PRIu64 " charged; B %d run, %" PRIu64 " charged",
             done_n[OWNER_A], A->tasks, done_n[OWNER_B], B->tasks);
    const struct perfgroup_stats *g[2] = {A, B};
    for (int o = 0; o < 2; o++) {
        int64_t got = (int64_t)g[o]->task_cpu_ns, want = truth[o];
        double rel = (double)(got - want) / (double)want;
        int64_t st = stolen[o] < run_stolen ? stolen[o] : run_stolen;
        printf("%s: on behalf %" PRId64 " ns, truth %" PRId64 " ns (%+.3f %%), bound %" PRId64
               " ns, %" PRId64 " ns stolen, %" PRIu64 " requests\n", g[o]->name, got, want, 100 * rel,
               bound[o], st, g[o]->tasks);
        if (llabs(got - want) > bound[o])
            FAIL("%s: off by more than the bound", g[o]->name);
        /* a request charged twice or lost is 17 % of A, 50 % of B: over 3 % + the stolen time
         * unless as much was stolen in those very requests */
        if ((double)(got - want) > 0.03 * (double)want + (double)st || rel < -0.03)
            FAIL("%s: over 3 %% from the truth (+ the time stolen in the requests)", g[o]->name);
    }
    uv_close((uv_handle_t *)&timer, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
    perfgroup_snapshot_free(s0);
    perfgroup_snapshot_free(s1);
    perfgroup_snapshot_free(d);
    printf("ok\n");
    return 0;
}
