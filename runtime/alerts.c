/* SPDX-License-Identifier: MIT */
/*
 * runtime/alerts.c — alerts (perfgroup_alert_add / _remove): checked at commit, against
 * every group's CPU time in the event, queued on the thread, and delivered outside any hook
 * (the next event API call or nested loop, thread exit); and the jank histogram's buckets.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>

#include "internal.h"

PG_HIDDEN unsigned perfgroup__jank_mask(uint64_t cpu_ns)
{
    unsigned m = 0;
    if (cpu_ns <= 1000000ull)
        return 0; /* most events: one compare (every implicit event commits through here) */
    for (unsigned i = 0; i < PERFGROUP_JANK_BUCKETS; i++)
        if (cpu_ns > (1000000ull << i))
            m |= 1u << i;
    return m;
}

/* ---- alerts ------------------------------------------------------------------------------ */

static pthread_mutex_t alert_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    _Atomic uint64_t threshold; /* 0: free slot */
    perfgroup_alert_cb cb;
    void *arg;
    int id;
} alerts[PG_ALERTS_MAX];
PG_HIDDEN _Atomic uint64_t perfgroup__alerts_min = UINT64_MAX;
static int alert_next_id = 1;

static void recompute_min(void)
{
    uint64_t m = UINT64_MAX;
    for (int i = 0; i < PG_ALERTS_MAX; i++) {
        uint64_t th = atomic_load(&alerts[i].threshold);
        if (th && th < m)
            m = th;
    }
    atomic_store(&perfgroup__alerts_min, m);
}

int perfgroup_alert_add(uint64_t threshold_ns, perfgroup_alert_cb cb, void *arg)
{
    if (!cb || threshold_ns == 0)
        return -EINVAL;
    pthread_mutex_lock(&alert_lock);
    int id = -ENOSPC;
    for (int i = 0; i < PG_ALERTS_MAX; i++) {
        if (atomic_load(&alerts[i].threshold) == 0) {
            alerts[i].cb = cb;
            alerts[i].arg = arg;
            alerts[i].id = id = alert_next_id++;
            atomic_store_explicit(&alerts[i].threshold, threshold_ns, memory_order_release);
            break;
        }
    }
    recompute_min();
    pthread_mutex_unlock(&alert_lock);
    return id;
}

int perfgroup_alert_remove(int id)
{
    int rc = -ENOENT;
    pthread_mutex_lock(&alert_lock);
    for (int i = 0; i < PG_ALERTS_MAX; i++) {
        if (atomic_load(&alerts[i].threshold) != 0 && alerts[i].id == id) {
            atomic_store(&alerts[i].threshold, 0);
            rc = 0;
        }
    }
    recompute_min();
    pthread_mutex_unlock(&alert_lock);
    return rc;
}

/* At commit (possibly inside an exit hook): queue, never call user code here. */
PG_HIDDEN void perfgroup__alerts_check(struct pg_thread *t, const char *event, uint32_t gid,
                                       uint64_t cpu_ns, uint64_t wall_ns, uint64_t event_cpu_ns)
{
    if (cpu_ns <= atomic_load_explicit(&perfgroup__alerts_min, memory_order_relaxed))
        return;
    for (int i = 0; i < PG_ALERTS_MAX; i++) {
        uint64_t th = atomic_load_explicit(&alerts[i].threshold, memory_order_acquire);
        if (!th || cpu_ns <= th)
            continue;
        if (t->pending_alerts >= PG_PENDING_ALERTS) {
            t->alerts_lost++;
            continue;
        }
        struct perfgroup_alert_info *a = &t->alerts[t->pending_alerts];
        a->group = perfgroup__group_at(gid)->name;
        a->event = event;
        a->group_cpu_ns = cpu_ns;
        a->group_wall_ns = wall_ns;
        a->event_cpu_ns = event_cpu_ns;
        a->threshold_ns = th;
        a->tid = t->tid;
        t->alert_ids[t->pending_alerts++] = alerts[i].id;
    }
}

/* Outside any hook: event end, nested-loop calls, snapshots, thread exit. */
PG_HIDDEN void perfgroup__alerts_deliver(struct pg_thread *t)
{
    uint32_t n = t->pending_alerts;
    if (n == 0)
        return;
    t->pending_alerts = 0;
    for (uint32_t k = 0; k < n; k++) {
        perfgroup_alert_cb cb = NULL;
        void *arg = NULL;
        pthread_mutex_lock(&alert_lock);
        for (int i = 0; i < PG_ALERTS_MAX; i++)
            if (atomic_load(&alerts[i].threshold) && alerts[i].id == t->alert_ids[k]) {
                cb = alerts[i].cb;
                arg = alerts[i].arg;
            }
        pthread_mutex_unlock(&alert_lock);
        if (cb)
            cb(&t->alerts[k], arg); /* user code, outside any event: charged like any call */
    }
}
