/* SPDX-License-Identifier: MIT */
/*
 * runtime/snapshot.c — reading the totals (snapshots, their difference) and alerts.
 *
 * A snapshot never stops an instrumented thread: each thread's totals are copied under its
 * seqlock (retried while the thread is committing), exited threads' totals come from the
 * dead pool. Alerts are checked at commit and delivered outside any hook.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct perfgroup_snapshot {
    size_t n;
    struct perfgroup_stats *s;
    uint64_t refused;
    uint64_t clamped;
    uint64_t estimated;
};

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

static void add_totals(struct perfgroup_stats *st, const struct pg_totals *t)
{
    PG_TOTALS_FOLD(st, t);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct perfgroup_stats *)a)->name, ((const struct perfgroup_stats *)b)->name);
}

/* Copy a thread's totals for groups [0, n) consistently. */
static void read_thread(struct pg_thread *t, uint32_t n, struct pg_totals *out)
{
    for (unsigned tries = 0;; tries++) {
        if (tries && tries % 64 == 0)
            sched_yield(); /* the writer is mid-commit and may be off-CPU: let it finish */
        uint32_t s1 = atomic_load_explicit(&t->seq, memory_order_acquire);
        if (s1 & 1)
            continue;
        for (uint32_t b = 0; b * PG_GROUP_BLOCK < n; b++) {
            struct pg_totals *blk = atomic_load_explicit(pg_tslot(t, b), memory_order_acquire);
            uint32_t cnt = n - b * PG_GROUP_BLOCK;
            if (cnt > PG_GROUP_BLOCK)
                cnt = PG_GROUP_BLOCK;
            if (blk) { /* word by word; acquire keeps the closing seq load after them */
                const uint64_t *src = (const uint64_t *)blk;
                uint64_t *dst = (uint64_t *)&out[b * PG_GROUP_BLOCK];
                size_t words = sizeof *blk / sizeof(uint64_t) * cnt;
                for (size_t w = 0; w < words; w++)
                    dst[w] = __atomic_load_n(&src[w], __ATOMIC_ACQUIRE);
            } else
                memset(&out[b * PG_GROUP_BLOCK], 0, sizeof *out * cnt);
        }
        if (atomic_load_explicit(&t->seq, memory_order_relaxed) == s1)
            return;
    }
}

struct perfgroup_snapshot *perfgroup_snapshot_take(void)
{
    perfgroup__init();
    struct pg_thread *me = perfgroup__tls;
    if (me)
        perfgroup__alerts_deliver(me);
    uint32_t n = perfgroup__group_count();
    struct perfgroup_snapshot *snap = calloc(1, sizeof *snap);
    struct perfgroup_stats *all = calloc(n ? n : 1, sizeof *all);
    struct pg_totals *tmp = calloc(n ? n : 1, sizeof *tmp);
    if (!snap || !all || !tmp) {
        free(snap), free(all), free(tmp);
        return NULL;
    }
    uint32_t epoch = atomic_load(&perfgroup__reset_epoch);
    snap->refused = atomic_load_explicit(&perfgroup__refused, memory_order_relaxed);
    snap->clamped = atomic_load_explicit(&perfgroup__clamped, memory_order_relaxed);
    snap->estimated = atomic_load_explicit(&perfgroup__estimated, memory_order_relaxed);
    perfgroup__lock_registry();
    for (uint32_t gid = 0; gid < n; gid++) {
        const struct pg_totals *d = perfgroup__dead_totals(gid);
        if (d)
            add_totals(&all[gid], d);
    }
    for (struct pg_thread *t = perfgroup__threads(); t; t = t->next) {
        if (atomic_load(&t->state) != PG_THREAD_LIVE || atomic_load(&t->reset_epoch) != epoch)
            continue; /* a thread that has not committed since a reset holds nothing */
        read_thread(t, n, tmp);
        for (uint32_t gid = 0; gid < n; gid++)
            add_totals(&all[gid], &tmp[gid]);
    }
    perfgroup__unlock_registry();
    free(tmp);

    size_t k = 0;
    for (uint32_t gid = 0; gid < n; gid++) {
        struct pg_group *g = perfgroup__group_at(gid);
        int active = atomic_load(&g->active);
        /* per-function groups only when someone looks at them */
        if (g->kind == PERFGROUP_KIND_FUNCTION && !active && all[gid].events == 0)
            continue;
        all[k] = all[gid];
        all[k].name = g->name;
        all[k].kind = (enum perfgroup_group_kind)g->kind;
        all[k].active = active;
        k++;
    }
    qsort(all, k, sizeof *all, by_name);
    snap->n = k;
    snap->s = all;
    return snap;
}

void perfgroup_snapshot_free(struct perfgroup_snapshot *s)
{
    if (s) {
        free(s->s);
        free(s);
    }
}

static uint64_t sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

struct perfgroup_snapshot *perfgroup_snapshot_diff(const struct perfgroup_snapshot *later,
                                                   const struct perfgroup_snapshot *earlier)
{
    if (!later || !earlier)
        return NULL;
    struct perfgroup_snapshot *d = calloc(1, sizeof *d);
    struct perfgroup_stats *s = calloc(later->n ? later->n : 1, sizeof *s);
    if (!d || !s) {
        free(d), free(s);
        return NULL;
    }
    for (size_t i = 0; i < later->n; i++) {
        s[i] = later->s[i];
        const struct perfgroup_stats *e = perfgroup_snapshot_find(earlier, s[i].name);
        if (!e)
            continue;
        s[i].cpu_ns = sub(s[i].cpu_ns, e->cpu_ns);
        s[i].wall_ns = sub(s[i].wall_ns, e->wall_ns);
        s[i].blocked_ns = sub(s[i].blocked_ns, e->blocked_ns);
        s[i].cycles = sub(s[i].cycles, e->cycles);
        s[i].activations = sub(s[i].activations, e->activations);
        s[i].events = sub(s[i].events, e->events);
        s[i].discarded = sub(s[i].discarded, e->discarded);
        for (int j = 0; j < PERFGROUP_JANK_BUCKETS; j++)
            s[i].jank[j] = sub(s[i].jank[j], e->jank[j]);
        /* max/min cannot be subtracted: the later values stand, over the whole period */
    }
    d->n = later->n;
    d->s = s;
    d->refused = sub(later->refused, earlier->refused);
    d->clamped = sub(later->clamped, earlier->clamped);
    d->estimated = sub(later->estimated, earlier->estimated);
    return d;
}

uint64_t perfgroup_snapshot_refused(const struct perfgroup_snapshot *s)
{
    return s ? s->refused : 0;
}

uint64_t perfgroup_snapshot_clamped(const struct perfgroup_snapshot *s)
{
    return s ? s->clamped : 0;
}

uint64_t perfgroup_snapshot_estimated(const struct perfgroup_snapshot *s)
{
    return s ? s->estimated : 0;
}

size_t perfgroup_snapshot_count(const struct perfgroup_snapshot *s)
{
    return s ? s->n : 0;
}

const struct perfgroup_stats *perfgroup_snapshot_at(const struct perfgroup_snapshot *s, size_t i)
{
    return s && i < s->n ? &s->s[i] : NULL;
}

const struct perfgroup_stats *perfgroup_snapshot_find(const struct perfgroup_snapshot *s,
                                                      const char *name)
{
    if (!s || !name)
        return NULL;
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(s->s[mid].name, name);
        if (c == 0)
            return &s->s[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* ---- alerts ------------------------------------------------------------------------------ */

static pthread_mutex_t alert_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    _Atomic uint64_t threshold; /* 0: free slot */
    perfgroup_alert_cb cb;
    void *arg;
    int id;
} alerts[PG_ALERTS_MAX];
static _Atomic uint64_t min_threshold = UINT64_MAX;
static int alert_next_id = 1;

static void recompute_min(void)
{
    uint64_t m = UINT64_MAX;
    for (int i = 0; i < PG_ALERTS_MAX; i++) {
        uint64_t th = atomic_load(&alerts[i].threshold);
        if (th && th < m)
            m = th;
    }
    atomic_store(&min_threshold, m);
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
    if (cpu_ns <= atomic_load_explicit(&min_threshold, memory_order_relaxed))
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
