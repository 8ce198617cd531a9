/* SPDX-License-Identifier: MIT */
/*
 * runtime/progress.c — an open event is visible in the file before it ends (issue 19).
 *
 * Records reach the file at commit, so an event that never ends (the process crashes,
 * leaves through _exit, is SIGKILLed by a watchdog while one of its threads hangs) would
 * leave nothing: the one event a user most needs to see. The file has one chunk of slots
 * for that (format.h, PGF_CHUNK_OPEN), slot i for the thread of index i + 1, which the
 * sampler thread (implicit.c), never the thread itself, rewrites:
 *
 *   thread (its own entry)               sampler, every period P (10 ms)
 *   -------------------------------     ---------------------------------------------------
 *   event open:  publish name, begin,    event open for >= P: read the thread's CPU clock
 *                CPU clock at begin,     from outside (pthread_getcpuclockid) and its groups
 *                iteration               so far, rewrite its slot: begin, now, CPU since
 *   a group's first stop in the event:   begin, groups running (its shadow stack), groups
 *                its id (pg_exec_add)    stopped (pub_exec)
 *   commit:      publish "none"          no event (or another one) since: empty the slot
 *
 * The thread's side is a seqlock in its entry (pub_*), written only while recording, at
 * event open and commit (slow paths already: a few stores); the hooks' fast paths do nothing
 * for it. The CPU clock at an event's begin: an explicit event reads it; an implicit one on
 * a measured thread (rseq, cputime.c) is the last reading plus the counter since, exact
 * because any deschedule before the begin was settled at that hook; otherwise the sampler's
 * estimate (implicit.c), or unknown (the slot then has the wall time only).
 *
 * So a crash loses at most P of an open event. A slot left behind by an event that ended
 * after the last round is stale: its thread also has the EVENT record, same begin (readers
 * ignore it). A fork child's event starts over at the fork (lifecycle.c) and is published
 * again there; the child's sampler makes the child's file if its event stays open for P.
 */
#define _GNU_SOURCE
#include <time.h>

#include "internal.h"

/* The thread's publication, written by its own thread under a sequence count the sampler
 * reads around it (read_pub): odd while a write is under way. */
static inline uint32_t pub_write_begin(struct pg_thread *t)
{
    uint32_t seq = atomic_load_explicit(&t->pub_seq, memory_order_relaxed);
    atomic_store_explicit(&t->pub_seq, seq + 1, memory_order_relaxed);
    return seq;
}

static inline void pub_write_end(struct pg_thread *t, uint32_t seq)
{
    atomic_store_explicit(&t->pub_seq, seq + 2, memory_order_release);
}

static void publish(struct pg_thread *t, uint32_t open, uint32_t index, uint32_t name,
                    uint64_t begin, int64_t begin_cpu)
{
    uint32_t seq = pub_write_begin(t);
    atomic_store_explicit(&t->pub_open, open, memory_order_release);
    atomic_store_explicit(&t->pub_index, index, memory_order_release);
    atomic_store_explicit(&t->pub_name, name, memory_order_release);
    atomic_store_explicit(&t->pub_tid, t->tid, memory_order_release);
    atomic_store_explicit(&t->pub_begin_tsc, begin, memory_order_release);
    atomic_store_explicit(&t->pub_begin_cpu, begin_cpu, memory_order_release);
    atomic_store_explicit(&t->pub_iter, t->iter, memory_order_release);
    pub_write_end(t, seq);
}

PG_HIDDEN void perfgroup__progress_open(struct pg_thread *t, int may_lock)
{
    if (!perfgroup__rec_mode_now() || !t->rec) {
        perfgroup__progress_close(t);
        return;
    }
    uint32_t name = 0;
    int64_t cpu = -1;
    if (t->event_open == PG_EV_EXPLICIT) {
        const char *ename = t->event_name ? t->event_name : "event";
        if (t->rec_name_ptr != ename && may_lock) { /* commit() uses the same interned id */
            t->rec_name_ptr = ename;
            t->rec_name_id = perfgroup__rec_string(ename);
        }
        name = t->rec_name_ptr == ename ? t->rec_name_id : 0; /* 0: shown unnamed */
        cpu = t->event_begin_cpu_ns;
    } else if (t->measured) {
        if ((int64_t)(t->event_begin_tsc - t->m_tsc) >= 0)
            cpu = t->m_cpu + (int64_t)perfgroup__ticks_to_ns(t->event_begin_tsc - t->m_tsc);
    } else {
        cpu = t->imp_begin_cpu;
    }
    publish(t, t->event_open == PG_EV_EXPLICIT ? 1 : 2, perfgroup__rec_thread_index(t->rec), name,
            t->event_begin_tsc, cpu);
}

/* "none": pub_open 0 alone (read_pub returns -1 then, and the sampler reads no other field of
 * a closed event); the rest keeps the last event's, rewritten at the next open. */
PG_HIDDEN void perfgroup__progress_close(struct pg_thread *t)
{
    if (!atomic_load_explicit(&t->pub_open, memory_order_relaxed)) /* the thread's own field */
        return;
    uint32_t seq = pub_write_begin(t);
    atomic_store_explicit(&t->pub_open, 0, memory_order_release);
    pub_write_end(t, seq);
}

/* ---- the sampler's side ------------------------------------------------------------------ */

struct slot_put { uint32_t index; struct pgf_open_slot v; };

static void flush(struct slot_put *p, unsigned n, int make)
{
    if (n == 0 || perfgroup__rec_slots_begin(make) != 0)
        return;
    for (unsigned i = 0; i < n; i++)
        perfgroup__rec_slot_put(p[i].index, &p[i].v);
    perfgroup__rec_slots_end();
}

/* Group `gid` into the slot's list, once; PGF_OPEN_F_MORE when the list is full. */
static void slot_group_add(struct pgf_open_slot *v, uint32_t gid)
{
    for (unsigned i = 0; i < v->ngroups; i++)
        if (v->group[i] == gid)
            return;
    if (v->ngroups < PGF_OPEN_GROUPS)
        v->group[v->ngroups++] = (uint32_t)gid;
    else
        v->flags |= PGF_OPEN_F_MORE;
}

/* The event's groups that ran and stopped (pg_exec_add's mirror), after the running ones. */
static void stopped_groups(struct pg_thread *t, struct pgf_open_slot *v)
{
    uint32_t n = atomic_load_explicit(&t->pub_nexec, memory_order_acquire);
    for (uint32_t i = 0; i < n && i < PGF_OPEN_GROUPS; i++)
        slot_group_add(v, atomic_load_explicit(&t->pub_exec[i], memory_order_relaxed));
    if (n > PGF_OPEN_GROUPS)
        v->flags |= PGF_OPEN_F_MORE; /* may be listed already (running): said anyway */
}

/* The groups of the thread's live frames that acquired their stopwatch in the event (its
 * iteration `iter` or a nested loop's after it), innermost first, into v->group.
 *
 * The shadow stack is the thread's own and its hooks write it with plain stores (the hot
 * path gets no atomics for the sampler's sake), so these reads race with them by design, as
 * the Linux kernel's data_race() reads do: each is a single aligned load (volatile), a frame's
 * function is a registry entry never freed (a stale or half-pushed frame still points to a
 * valid one or to none), every index is bounded, and what is read counts only if the
 * thread's event is still the one published before and after (the caller's seqlock check).
 * A frame pushed or popped meanwhile may be missed or kept: the list is of one instant
 * within the read. TSan is told not to instrument this function (it would report the race
 * that is meant). */
__attribute__((no_sanitize("thread"))) static void
running_groups(struct pg_thread *t, uint64_t iter, struct pgf_open_slot *v)
{
    uint32_t d = *(volatile uint32_t *)&t->depth;
    if (d > PG_STACK_MAX)
        d = PG_STACK_MAX;
    while (d-- > 0) {
        const struct pg_frame *f = &t->stack[d];
        const struct pg_func *fn = *(const struct pg_func *const volatile *)&f->fn;
        uint64_t fi = *(const volatile uint64_t *)&f->iter;
        unsigned mask = *(const volatile uint8_t *)&f->mask;
        if (!fn || !mask || fi < iter)
            continue; /* no acquisition, or one from before the event (not charged to it) */
        unsigned ng = fn->ngroups < PG_SITE_GROUPS ? fn->ngroups : PG_SITE_GROUPS;
        for (unsigned j = 0; j < ng; j++)
            if (mask & (1u << j))
                slot_group_add(v, fn->gid[j]);
    }
}

/* The thread's published event, consistent, or 0. */
static int read_pub(struct pg_thread *t, uint32_t *seq, struct pgf_open_slot *v, int64_t *bcpu,
                    uint64_t *iter)
{
    uint32_t s0 = atomic_load_explicit(&t->pub_seq, memory_order_acquire);
    if (s0 & 1)
        return 0;
    uint32_t open = atomic_load_explicit(&t->pub_open, memory_order_acquire);
    v->thread = atomic_load_explicit(&t->pub_index, memory_order_acquire);
    v->name = atomic_load_explicit(&t->pub_name, memory_order_acquire);
    v->tid = atomic_load_explicit(&t->pub_tid, memory_order_acquire);
    v->begin_tsc = atomic_load_explicit(&t->pub_begin_tsc, memory_order_acquire);
    *bcpu = atomic_load_explicit(&t->pub_begin_cpu, memory_order_acquire);
    *iter = atomic_load_explicit(&t->pub_iter, memory_order_acquire);
    if (atomic_load_explicit(&t->pub_seq, memory_order_relaxed) != s0)
        return 0;
    *seq = s0;
    v->flags = open == 2 ? PGF_EVENT_F_IMPLICIT : 0;
    return open ? 1 : -1;
}

PG_HIDDEN int perfgroup__progress_round(uint64_t period_ns)
{
    if (!perfgroup__rec_mode_now())
        return 0;
    struct slot_put put[32];
    unsigned n = 0;
    int any = 0, make = 0;
    for (struct pg_thread *t = perfgroup__threads(); t; t = t->next) {
        struct pgf_open_slot v = {0};
        uint32_t seq = 0;
        int64_t bcpu = -1;
        uint64_t iter = 0;
        int pub = atomic_load_explicit(&t->state, memory_order_acquire) == PG_THREAD_LIVE
                      ? read_pub(t, &seq, &v, &bcpu, &iter) : -1;
        if (pub == 0)
            continue; /* being rewritten: next round */
        uint64_t now = pg_clock_now();
        int show = pub > 0 && v.thread != 0 && (int64_t)(now - v.begin_tsc) >= 0 &&
                   perfgroup__ticks_to_ns(now - v.begin_tsc) >= period_ns;
        any |= pub > 0;
        if (show) {
            uint32_t life = atomic_load_explicit(&t->life, memory_order_acquire);
            clockid_t id = (clockid_t)atomic_load_explicit(&t->cpu_clock, memory_order_relaxed);
            struct timespec ts;
            int rc = clock_gettime(id, &ts);
            v.now_tsc = pg_clock_now();
            running_groups(t, iter, &v);
            v.nrunning = v.ngroups;
            stopped_groups(t, &v);
            /* the thread may have ended it, exited, or left its entry to another since */
            if (atomic_load_explicit(&t->pub_seq, memory_order_acquire) != seq ||
                atomic_load_explicit(&t->life, memory_order_acquire) != life)
                continue;
            int64_t c = rc == 0 ? (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec : -1;
            if (bcpu >= 0 && c >= bcpu) {
                uint64_t wall = perfgroup__ticks_to_ns(v.now_tsc - v.begin_tsc);
                v.cpu_ns = (uint64_t)(c - bcpu) < wall ? (uint64_t)(c - bcpu) : wall;
                v.flags |= PGF_OPEN_F_CPU;
            }
            if (t->smp_slot_begin && t->smp_slot_index != v.thread) /* its index changed */
                put[n++] = (struct slot_put){t->smp_slot_index, {0}};
            put[n++] = (struct slot_put){v.thread, v};
            t->smp_slot_begin = v.begin_tsc;
            t->smp_slot_index = v.thread;
            make = 1;
        } else if (t->smp_slot_begin && (pub < 0 || v.begin_tsc != t->smp_slot_begin)) {
            put[n++] = (struct slot_put){t->smp_slot_index, {0}}; /* its event ended */
            t->smp_slot_begin = 0;
        }
        if (n >= 30) {
            flush(put, n, make);
            n = 0;
        }
    }
    flush(put, n, make);
    return any;
}
