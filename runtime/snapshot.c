/* SPDX-License-Identifier: MIT */
/*
 * runtime/snapshot.c — reading the totals: snapshots and their difference (alerts.c has the
 * alerts).
 *
 * A snapshot never stops an instrumented thread: each thread's totals are copied under its
 * seqlock (retried while the thread is committing), exited threads' totals come from the
 * dead pool.
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
    perfgroup__dead_lock();
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
    perfgroup__dead_unlock();
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
        s[i].self_ns = sub(s[i].self_ns, e->self_ns);
        s[i].wall_ns = sub(s[i].wall_ns, e->wall_ns);
        s[i].blocked_ns = sub(s[i].blocked_ns, e->blocked_ns);
        s[i].cycles = sub(s[i].cycles, e->cycles);
        s[i].activations = sub(s[i].activations, e->activations);
        s[i].events = sub(s[i].events, e->events);
        s[i].discarded = sub(s[i].discarded, e->discarded);
        s[i].task_cpu_ns = sub(s[i].task_cpu_ns, e->task_cpu_ns);
        s[i].tasks = sub(s[i].tasks, e->tasks);
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
