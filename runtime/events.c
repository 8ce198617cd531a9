/* SPDX-License-Identifier: MIT */
/*
 * runtime/events.c — events: their open, their commit (the thread's totals, the alerts, the
 * event's record), implicit events begun and ended by the hooks, explicit ones ended, and
 * resync (frames whose exits were skipped). The public API over them is event_api.c's.
 * Own thread only, the latch held (internal.h) while the runtime is busy on it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

/* A group's first event in a block of groups: its block, mapped (or the inline one). */
static __attribute__((noinline, cold)) struct pg_totals *totals_block(struct pg_thread *t, uint32_t gid)
{
    struct pg_totals *b = gid < PG_GROUP_BLOCK ? t->tot0 : perfgroup__map(sizeof *b * PG_GROUP_BLOCK);
    if (b)
        atomic_store_explicit(pg_tslot(t, gid / PG_GROUP_BLOCK), b, memory_order_release);
    return b;
}

static inline __attribute__((always_inline)) struct pg_totals *totals_for(struct pg_thread *t,
                                                                           uint32_t gid)
{
    struct pg_totals *b = atomic_load_explicit(pg_tslot(t, gid / PG_GROUP_BLOCK), memory_order_relaxed);
    if (PG_UNLIKELY(!b) && !(b = totals_block(t, gid)))
        return NULL;
    if (gid >= t->tot_hi)
        t->tot_hi = gid + 1;
    return &b[gid % PG_GROUP_BLOCK];
}

/* ---- events and commits ------------------------------------------------------------------ */

PG_HIDDEN void perfgroup__event_open(struct pg_thread *t, uint64_t tsc, int kind, const char *name)
{
    struct pg_thread *latch = pg_latch_take();
    PG_TEST_POINT(1);
    t->iter++;
    t->event_stamp++;
    pg_exec_clear(t);
    t->event_open = (uint8_t)kind;
    t->event_name = name;
    t->event_begin_tsc = tsc;
    t->event_flags = kind == PG_EV_IMPLICIT ? PGF_EVENT_F_IMPLICIT : 0;
    /* every event starts exact (a rate window from its first stopwatch, hooks.c) */
    t->est_on = 0;
    t->est_left = perfgroup__est_window ? perfgroup__est_window : UINT32_MAX;
    t->est_win = 0;
    if (kind == PG_EV_EXPLICIT) {
        /* CPU clock first, then the counter: the event's cycles lie inside its CPU-clock
         * window; the reading also settles the thread's off-CPU time (cputime.c). */
        t->event_begin_cpu_ns = perfgroup__cputime_read(t, &t->event_begin_tsc);
        perfgroup__implicit_own(t, t->event_begin_tsc, t->event_begin_cpu_ns);
    } else {
        t->imp_off = t->off; /* `tsc` has every deschedule before it settled */
        if (t->measured)
            pg_implicit_armed(t); /* (perfgroup__implicit_arm's first step: all it does then) */
        else
            perfgroup__implicit_arm(t, tsc);
    }
    if (perfgroup__rec_mode_now())
        perfgroup__progress_open(t, 1);
    t->last_tsc = t->event_begin_tsc;
    t->ev_inner = 0;
    /* a new iteration: every frame's stopwatch is stale, no group runs in it (what
     * pg_cur_refresh would find walking the stack: no frame is of this iteration) */
    pg_cur_off();
    pg_cur_on(0, t->depth != 0 ? t->stack[t->depth - 1].sp : 0);
    PG_TEST_POINT(2);
    pg_latch_drop(latch);
}

/* Totals are written by their thread only, read word by word by snapshots. Release stores
 * keep every one after the odd `seq` store (no fence: TSan follows this), plain movs on x86. */
#define TSET(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELEASE)
#define TADD(field, v) TSET(field, (field) + (v))

/* A thread's totals back to zero, for the next thread to take its entry (or a reset):
 * only the entries it wrote, below its highest group (tot_hi), are stored to — an entry
 * never written is still on the zero page, and storing zeros there would make every
 * block's 152 KiB resident in every thread (issue 34). The owner thread, or its entry
 * freed / forked away (no writer). */
PG_HIDDEN void perfgroup__thread_totals_zero(struct pg_thread *t)
{
    uint32_t hi = t->tot_hi;
    for (uint32_t b = 0; b * PG_GROUP_BLOCK < hi; b++) {
        struct pg_totals *blk = atomic_load_explicit(pg_tslot(t, b), memory_order_relaxed);
        if (!blk)
            continue;
        uint32_t n = hi - b * PG_GROUP_BLOCK < PG_GROUP_BLOCK ? hi - b * PG_GROUP_BLOCK : PG_GROUP_BLOCK;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t *w = (uint64_t *)&blk[i], any = 0;
            for (size_t k = 0; k < sizeof *blk / sizeof(uint64_t); k++)
                any |= __atomic_load_n(&w[k], __ATOMIC_RELAXED);
            if (!any)
                continue;
            for (size_t k = 0; k < sizeof *blk / sizeof(uint64_t); k++)
                __atomic_store_n(&w[k], 0, __ATOMIC_RELEASE);
        }
    }
    t->tot_hi = 0;
}

/* The thread's totals opened for writing (seq odd), zeroed first after a reset; returns
 * the seq to close with seq + 2. */
static inline __attribute__((always_inline)) uint32_t totals_write_begin(struct pg_thread *t,
                                                                          uint32_t epoch)
{
    uint32_t seq = atomic_load_explicit(&t->seq, memory_order_relaxed);
    atomic_store_explicit(&t->seq, seq + 1, memory_order_relaxed);
    if (atomic_load_explicit(&t->reset_epoch, memory_order_relaxed) != epoch) {
        perfgroup__thread_totals_zero(t);
        atomic_store_explicit(&t->reset_epoch, epoch, memory_order_relaxed);
    }
    return seq;
}

static inline __attribute__((always_inline)) void
totals_add(struct pg_totals *tot, uint64_t cycles, uint64_t cpu_ns, uint64_t self_ns, uint64_t wall_ns,
           uint64_t acts, uint64_t discarded)
{
    TADD(tot->cycles, cycles);
    TADD(tot->cpu_ns, cpu_ns);
    TADD(tot->self_ns, self_ns);
    TADD(tot->wall_ns, wall_ns);
    TADD(tot->blocked_ns, wall_ns > cpu_ns ? wall_ns - cpu_ns : 0);
    TADD(tot->activations, acts);
    TADD(tot->events, 1);
    TADD(tot->discarded, discarded);
    if (cpu_ns > tot->max_event_ns)
        TSET(tot->max_event_ns, cpu_ns);
    if (tot->events == 1 || cpu_ns < tot->min_event_ns)
        TSET(tot->min_event_ns, cpu_ns);
    if (wall_ns > tot->max_wall_ns)
        TSET(tot->max_wall_ns, wall_ns);
    unsigned m = cpu_ns <= 1000000ull ? 0 : perfgroup__jank_mask(cpu_ns); /* most: none */
    for (unsigned i = 0; m; i++, m >>= 1)
        TADD(tot->jank[i], m & 1);
}

/* A group's self time in the event, in CPU ns, from its self cycles (modulo 2^64: below 0
 * after sampled starts' corrections, or the off-CPU ticks of a measured thread taken off)
 * as its charged time is found from its cycles: measured, the ticks (their off-CPU part is
 * off already, cputime.c); estimated, the event's CPU shared by cycles. At most the
 * cycles charged, and the group's CPU time `gcpu` (docs/accounting.md, "Self time").
 * charged_ns: perfgroup__ticks_to_ns(charged), the caller's already — a group all of whose
 * time was its own (a leaf, an implicit event's one group) converts nothing more. */
static inline __attribute__((always_inline)) uint64_t
self_cpu(const struct pg_thread *t, uint64_t self, uint64_t charged, uint64_t charged_ns,
         uint64_t ev_cycles, uint64_t cpu_ns, uint64_t gcpu)
{
    if ((int64_t)self <= 0)
        return 0;
    if (self > charged)
        self = charged;
    uint64_t ns = !t->measured   ? (uint64_t)((double)self / (double)ev_cycles * (double)cpu_ns)
                  : self == charged ? charged_ns
                                    : perfgroup__ticks_to_ns(self);
    return ns < gcpu ? ns : gcpu;
}

/* Close the thread's current event at `end_tsc` with `cpu_ns` of CPU time, the top group's.
 * Every group that executed gets the CPU time its thread spent while the group's stopwatch
 * ran (wall - off-CPU, cputime.c); on a thread without rseq, n = cycles_g / cycles_event of
 * the event's (the estimate, docs/accounting.md). */
static void commit(struct pg_thread *t, uint64_t end_tsc, uint64_t cpu_ns)
{
    /* its own cost, for the recording's overhead records: from the event's end reading (the
     * exit hook's, or its caller's: the work between that reading and this commit is the
     * runtime's too) to a counter read at the end, while recording only — one read, not a
     * pair: a counter read is ~9 ns of an implicit event's ~70 on an Intel Xeon host
     * (docs/benchmarks.md) */
    uint64_t t0 = perfgroup__rec_mode_now() ? end_tsc : 0;
    struct pg_thread *latch = pg_latch_take();
    PG_TEST_POINT(3);
    uint32_t epoch = atomic_load_explicit(&perfgroup__reset_epoch, memory_order_relaxed);
    const char *ename = t->event_name ? t->event_name : "(implicit)";
    uint64_t ev_cycles = end_tsc - t->event_begin_tsc;
    int ev_ok = (int64_t)ev_cycles > 0;
    if (t->est_on == PG_EST_LITE) /* the hot part's lite frames and sampled segments */
        perfgroup__lite_fold(t, end_tsc);

    uint32_t seq = totals_write_begin(t, epoch);

    int recording = perfgroup__rec_mode_now() && t->rec;
    struct perfgroup_rec_group_share *shares = t->shares; /* room for every group, but: */
    uint32_t room = shares == t->shares0 ? PG_SHARES_INLINE : t->cap;
    if (recording && room < t->nexec) { /* the entry's inline room is short: once a thread */
        if (!t->shares_big)
            t->shares_big = perfgroup__map(sizeof *shares * PG_GROUPS_INLINE);
        if (t->shares_big)
            shares = t->shares_big, room = PG_GROUPS_INLINE;
    }
    unsigned nshares = 0;
    uint64_t ev_wall = ev_ok ? perfgroup__ticks_to_ns(ev_cycles) : 0;
    if (ev_ok && cpu_ns > ev_wall) {
        /* more CPU than wall time (an explicit event's CPU is the difference of two CPU-clock
         * readings, its wall the counter's): at most its wall. Each end reads the CPU clock,
         * then the counter (cputime_read), so each interval holds the part of one read the
         * other does not: an excess within two reads' cost (+ 0.01 % for the counter's
         * rate) is the reads', not the clocks'. Only a larger one, a real disagreement, is
         * counted (perfgroup_snapshot_clamped; docs/accounting.md). */
        if (cpu_ns - ev_wall > 2 * perfgroup__cpu_read_ns + ev_wall / 10000)
            atomic_fetch_add_explicit(&perfgroup__clamped, 1, memory_order_relaxed);
        cpu_ns = ev_wall;
    }
    struct pg_totals *top = totals_for(t, PG_TOP_GROUP);
    if (top && ev_ok) {
        /* its self time: the event's cycles no acquiring frame of it held (ev_inner) */
        uint64_t own = (int64_t)(ev_cycles - t->ev_inner) < 0 ? 0 : ev_cycles - t->ev_inner;
        totals_add(top, ev_cycles, cpu_ns,
                   self_cpu(t, own, ev_cycles, ev_wall, ev_cycles, cpu_ns, cpu_ns), ev_wall, 1, 0);
    }
    else if (top)
        TADD(top->discarded, 1);
    PG_TEST_POINT(4);

    for (uint32_t i = 0; i < t->nexec; i++) {
        uint32_t gid = t->exec[i];
        struct pg_gstate *s = &t->sw[gid];
        struct pg_totals *tot = totals_for(t, gid);
        /* estimated starts (hooks.c): `recent` less the sampled corrections, which can
         * leave it below 0 (modulo 2^64) in an event of few starts: nothing then */
        uint64_t recent = (int64_t)s->recent < 0 ? 0 : s->recent;
        if (recent == 0 && s->acts == 0 && s->discarded == 0)
            tot = NULL; /* only settled off-CPU time (a stopwatch that went stale): no event */
        if (tot) {
            if (!ev_ok || recent > ev_cycles) {
                /* n > 1 or a counter that went backwards: discard, as Firefox does; every
                 * stopwatch of the group in the event counts (at least one) */
                TADD(tot->discarded, (s->acts ? s->acts : 1) + s->discarded);
                t->event_flags |= PGF_EVENT_F_DISCARDED;
            } else {
                uint64_t gwall = perfgroup__ticks_to_ns(recent);
                /* measured: its ticks less those it spent off-CPU — none, most often (the
                 * same conversion then: gwall) */
                uint64_t gcpu = !t->measured
                    ? (uint64_t)((double)recent / (double)ev_cycles * (double)cpu_ns)
                    : t->goff[gid] == 0
                    ? gwall
                    : perfgroup__ticks_to_ns(perfgroup__cputime_on(0, recent, 0, t->goff[gid]));
                if (gcpu > gwall)
                    gcpu = gwall;
                if (gcpu > cpu_ns) /* a stopwatch lies inside its event: so does its CPU time */
                    gcpu = cpu_ns;
                uint64_t gself = self_cpu(t, s->self, recent, gwall, ev_cycles, cpu_ns, gcpu);
                totals_add(tot, recent, gcpu, gself, gwall, s->acts, s->discarded);
                if (s->discarded)
                    t->event_flags |= PGF_EVENT_F_DISCARDED;
                if (gcpu > atomic_load_explicit(&perfgroup__alerts_min, memory_order_relaxed))
                    perfgroup__alerts_check(t, ename, gid, gcpu, gwall, cpu_ns);
                if (recording && nshares < room) /* (resident only in threads that record) */
                    shares[nshares++] = (struct perfgroup_rec_group_share){gid, recent, gcpu,
                                                                          s->acts, gself, s->parent};
                else if (recording)
                    t->ov_dropped++; /* no memory for shares_big: counted, never guessed */
            }
        }
        s->recent = 0;
        s->self = 0;
        t->goff[gid] = 0;
        s->acts = 0;
        s->discarded = 0;
        PG_TEST_POINT(5);
    }
    atomic_store_explicit(&t->seq, seq + 2, memory_order_release);
    PG_TEST_POINT(6);

    if (recording) {
        if (t->rec_name_ptr != ename) {
            t->rec_name_ptr = ename;
            t->rec_name_id = perfgroup__rec_string(ename);
        }
        perfgroup__rec_event(t->rec, t->rec_name_id, t->event_begin_tsc, end_tsc, cpu_ns,
                             t->event_flags, shares, nshares);
        /* the whole-run totals of the event's groups into the file (format.h): as the
         * snapshot has them, so the file keeps them whatever is recycled */
        if (top)
            perfgroup__rec_totals(t->rec, PG_TOP_GROUP, (const struct pgf_totals *)(void *)top);
        for (uint32_t i = 0; i < t->nexec; i++) {
            const struct pg_totals *tot = totals_for(t, t->exec[i]);
            if (tot && (tot->events || tot->discarded))
                perfgroup__rec_totals(t->rec, t->exec[i], (const struct pgf_totals *)(void *)tot);
        }
    }
    pg_exec_clear(t);
    t->event_open = PG_EV_NONE;
    if (atomic_load_explicit(&t->pub_open, memory_order_relaxed)) /* published: progress.c */
        perfgroup__progress_close(t);
    t->iter++;
    pg_cur_refresh(t); /* no event: off */
    t->ov_commits++;
    if (t0) {
        uint64_t spent = pg_clock_now() - t0;
        t->ov_commit_ns += (int64_t)spent > 0 ? perfgroup__ticks_to_ns(spent) : 0;
    }
    if (perfgroup__rec_mode_now() && t->rec && (t->ov_commits & 1023) == 0) {
        perfgroup__rec_overhead(t->rec, t->ov_commit_ns, t->ov_commits, t->ov_slow, t->ov_resyncs,
                                t->ov_dropped);
        t->ov_commit_ns = t->ov_commits = t->ov_slow = t->ov_resyncs = t->ov_dropped = 0;
    }
    PG_TEST_POINT(7);
    pg_latch_drop(latch);
}

PG_HIDDEN void perfgroup__task_charge(struct pg_thread *t, const uint32_t *gid, const uint64_t *ns,
                                      unsigned n)
{
    struct pg_thread *latch = pg_latch_take();
    uint32_t seq = totals_write_begin(t, atomic_load_explicit(&perfgroup__reset_epoch, memory_order_relaxed));
    for (unsigned i = 0; i < n; i++) {
        struct pg_totals *tot = totals_for(t, gid[i]);
        if (tot) {
            TADD(tot->task_cpu_ns, ns[i]);
            TADD(tot->tasks, 1);
        }
    }
    atomic_store_explicit(&t->seq, seq + 2, memory_order_release);
    if (perfgroup__rec_mode_now() && t->rec)
        for (unsigned i = 0; i < n; i++) {
            const struct pg_totals *tot = totals_for(t, gid[i]);
            if (tot)
                perfgroup__rec_totals(t->rec, gid[i], (const struct pgf_totals *)(void *)tot);
        }
    pg_latch_drop(latch);
}

PG_HIDDEN void perfgroup__implicit_begin(struct pg_thread *t, uint64_t tsc)
{
    perfgroup__event_open(t, tsc, PG_EV_IMPLICIT, NULL);
    t->implicit_frame = t->depth;
}

/*
 * An implicit event's CPU time comes from implicit.c: exact when rseq shows the thread was
 * never descheduled, else interpolated from the sampler thread's readings of its CPU clock.
 * Inside a hook (own_read == 0) nothing reads the CPU clock; callers outside the hooks
 * (thread exit, event_begin, nested loops) read it once for an exact end.
 */
PG_HIDDEN void perfgroup__implicit_commit(struct pg_thread *t, uint64_t tsc, int own_read)
{
    if (t->measured) { /* (perfgroup__implicit_cpu's first step: all it does then) */
        commit(t, tsc, pg_implicit_cpu_measured(t, t->event_begin_tsc, tsc));
        return;
    }
    int64_t own = own_read ? pg_clock_gettime_ns(CLOCK_THREAD_CPUTIME_ID) : -1;
    commit(t, tsc, perfgroup__implicit_cpu(t, t->event_begin_tsc, tsc, own));
}

PG_HIDDEN void perfgroup__implicit_end(struct pg_thread *t, uint64_t tsc)
{
    perfgroup__implicit_commit(t, tsc, 0);
}

/* The end is read here, after the CPU clock (the reading settles the off-CPU time up to it). */
PG_HIDDEN void perfgroup__explicit_end(struct pg_thread *t)
{
    uint64_t tsc;
    int64_t cpu = perfgroup__cputime_read(t, &tsc);
    perfgroup__explicit_commit(t, tsc, cpu);
}

PG_HIDDEN void perfgroup__explicit_commit(struct pg_thread *t, uint64_t tsc, int64_t cpu)
{
    perfgroup__clock_calibrate(tsc, pg_clock_gettime_ns(CLOCK_MONOTONIC));
    perfgroup__implicit_own(t, tsc, cpu);
    PG_TEST_POINT(18);
    int64_t d = cpu - t->event_begin_cpu_ns;
    commit(t, tsc, d > 0 ? (uint64_t)d : 0);
}

/* Outside the hooks: an implicit event may afford its own CPU-clock read for its end. */
PG_HIDDEN void perfgroup__event_close(struct pg_thread *t, uint64_t tsc)
{
    if (t->event_open == PG_EV_EXPLICIT)
        perfgroup__explicit_end(t);
    else if (t->event_open == PG_EV_IMPLICIT)
        perfgroup__implicit_commit(t, tsc, 1);
}

/* Trace mode: the frames [from, to) get an interval record up to `tsc` now, innermost first
 * (the order their exits would write them), so that the recording holds every frame the
 * shadow stack held: frames dropped by a resync or still open at thread exit, and the first
 * part of a frame split at a nested loop's end (restart_frames moves its start). */
PG_HIDDEN void perfgroup__trace_frames(struct pg_thread *t, uint32_t from, uint32_t to, uint64_t tsc)
{
    if (!t->rec || perfgroup__rec_mode_now() != PGF_MODE_TRACE)
        return;
    for (uint32_t i = to; i-- > from;) {
        const struct pg_frame *f = &t->stack[i];
        perfgroup__rec_interval(t->rec, f->fn->id, f->mask, (uint8_t)i, f->tsc, tsc - f->tsc);
    }
}

/* Drop the frames at index >= keep: their exits were skipped (longjmp, exit, a frame without
 * unwind tables); in trace mode they are recorded up to `tsc` (0: now), the exit that found
 * them out if there is one, so they end inside the frame that holds them. Their stopwatches are cancelled, not charged: when the skip happened is
 * unknown. An implicit event opened by one of them ends now. */
PG_HIDDEN void perfgroup__resync(struct pg_thread *t, uint32_t keep, uint64_t tsc)
{
    if (keep >= t->depth)
        return;
    struct pg_thread *latch = pg_latch_take();
    PG_TEST_POINT(8);
    perfgroup__trace_frames(t, keep, t->depth, tsc ? tsc : pg_clock_now());
    for (uint32_t i = keep; i < t->depth; i++) {
        struct pg_frame *f = &t->stack[i];
        for (unsigned j = 0; j < f->fn->ngroups; j++)
            if ((f->mask & (1u << j)) && t->sw[f->fn->gid[j]].running == f->iter)
                t->sw[f->fn->gid[j]].running = 0;
    }
    /* what their nested frames were charged stays out of the self time of the frame below
     * (or the event's own): their spans are not charged, but the nested frames' were */
    for (uint32_t i = t->depth; i-- > keep;)
        if (t->stack[i].iter == t->iter && !t->stack[i].lite) /* (a segment-accounted frame's
                                                                * inner is a stack position) */
            *pg_inner_of(t, i) += t->stack[i].inner;
    t->depth = keep;
    if (t->est_on == PG_EST_LITE)
        PERFGROUP_TLS_CUR.top = pg_top_of(t); /* (lite frames above are lost: a known limit) */
    pg_cur_refresh(t);
    t->ov_resyncs++;
    if (t->event_open == PG_EV_IMPLICIT && t->implicit_frame >= keep)
        perfgroup__implicit_end(t, pg_clock_settled(t));
    pg_latch_drop(latch);
}
