/* SPDX-License-Identifier: MIT */
/*
 * runtime/event_api.c — the public event API: perfgroup_event_begin / _end (explicit
 * events) and perfgroup_nested_loop_begin / _end (a nested loop: the outer event committed
 * up to it, its stopwatches stale inside it, restarted for the outer event's second part
 * after it). Over events.c; outside any hook, the latch held while the runtime is busy.
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

/* ---- public: events ---------------------------------------------------------------------- */

int perfgroup_event_begin(const char *name)
{
    struct pg_thread *t = pg_self();
    if (!t)
        return -ENOTSUP;
    if (t->event_open == PG_EV_EXPLICIT)
        return -EALREADY;
    if (perfgroup__rec_mode_now())
        perfgroup__sampler_ensure(); /* a fork child's first event: its slot (progress.c) */
    if (perfgroup__est_window)
        perfgroup__ticker_ensure(); /* a fork child's first event: its ticker (ticker.c) */
    perfgroup__alerts_deliver(t);
    struct pg_thread *latch = pg_latch_take(); /* a signal handler's hooks: refused */
    if (t->event_open == PG_EV_IMPLICIT)
        perfgroup__implicit_commit(t, pg_clock_settled(t), 1);
    PG_TEST_POINT(17);
    perfgroup__event_open(t, pg_clock_now(), PG_EV_EXPLICIT, name ? name : "event");
    pg_latch_drop(latch);
    return 0;
}

int perfgroup_event_end(void)
{
    struct pg_thread *t = perfgroup__tls;
    if (!t || t->event_open != PG_EV_EXPLICIT)
        return -ENOENT;
    struct pg_thread *latch = pg_latch_take();
    /* frames still open (the event ends inside them) are dropped uncharged at their exits:
     * what their nested frames were charged is not the event's own code (top's self) */
    uint32_t first = 0; /* the event's outermost frame, + 1 */
    for (uint32_t i = 0; i < t->depth; i++)
        if (t->stack[i].iter == t->iter) {
            if (!t->stack[i].lite) /* (a segment-accounted frame's inner is a stack position) */
                t->ev_inner += t->stack[i].inner;
            first = first ? first : i + 1;
        }
    /* lite frames open (cur.top one of them, or their bits in the mask): they restore this
     * event's state when they exit, inline; no lite part in a later event until they have
     * (hooks.c, lite_held) */
    if (t->est_on == PG_EST_LITE && first && (PERFGROUP_TLS_CUR.top < 64 || pg_lite_open_bits(t))) {
        t->lite_hold = first;
        t->lite_hold_gen = t->stack[first - 1].gen;
    }
    /* and stale before the end reading: the off-CPU time it settles fell inside them, whose
     * stopwatches are never charged; into their groups it would come off the CPU time of
     * their other, ended stopwatches in this event (a group's first activation 1 ms of CPU,
     * its second blocked 5 ms when the event ended inside it: the group read 0 ms of CPU;
     * runtime.event_end_desched). Iteration 0 is never current. */
    for (uint32_t i = first ? first - 1 : t->depth; i < t->depth; i++)
        if (t->stack[i].iter == t->iter)
            t->stack[i].iter = 0;
    perfgroup__explicit_end(t);
    pg_latch_drop(latch);
    perfgroup__alerts_deliver(t);
    return 0;
}

/* Charge, or restart, the stopwatches of the live frames [0, depth) of iteration `iter`.
 * Only nested-loop calls walk the shadow stack: the hooks never do. Innermost first: each
 * frame's self time is its span less its ended nested frames' (inner) and the live one's
 * above it (up), as if they all ended here (pg_frame_end). */
PG_HIDDEN void perfgroup__bank_frames(struct pg_thread *t, uint32_t depth, uint64_t iter,
                                      uint64_t tsc)
{
    uint32_t cpu = pg_cpu_now();
    uint64_t up = 0;
    for (uint32_t i = depth; i-- > 0;) {
        struct pg_frame *f = &t->stack[i];
        if (f->iter != iter || f->lite)
            continue; /* stale (and so is every frame below it), or segment-accounted */
        if (f->mask && pg_charge_frame(t, f, tsc, cpu, f->inner + up, 0, NULL)) /* it goes on after */
            up = tsc - f->tsc;
        else
            up += f->inner;
    }
    t->ev_inner += up;
}

static void restart_frames(struct pg_thread *t, uint32_t depth, uint64_t old_iter, uint64_t tsc)
{
    uint32_t cpu = pg_cpu_now();
    for (uint32_t i = 0; i < depth && i < t->depth; i++) {
        struct pg_frame *f = &t->stack[i];
        if (!f->mask || f->iter != old_iter)
            continue;
        f->iter = t->iter;
        f->lite = 0; /* the outer event goes on exact (it may go hot again) */
        f->tsc = tsc;
        f->inner = 0;
        f->cpu = cpu;
        for (unsigned j = 0; j < f->fn->ngroups; j++)
            if (f->mask & (1u << j))
                t->sw[f->fn->gid[j]].running = t->iter;
    }
}

/* Trace mode, a nested loop's end: the frames live around it are recorded as two pairs, the
 * first from their entry to here (it holds the nested loop), the second from here to their
 * exit, because restart_frames moves the start of those it restarts. */
static void split_frames(struct pg_thread *t, uint32_t depth, uint64_t tsc)
{
    if (depth > t->depth)
        depth = t->depth;
    if (!t->rec || perfgroup__rec_mode_now() != PGF_MODE_TRACE)
        return;
    perfgroup__trace_frames(t, 0, depth, tsc);
    for (uint32_t i = 0; i < depth; i++)
        t->stack[i].tsc = tsc; /* only the record reads a frame that is not restarted */
}

/*
 * A nested loop: the stopwatches running now are charged up to here (into the outer event,
 * committed now as its first part) and then become stale, so nothing the nested loop runs
 * is charged to them; at the nested loop's end they restart for the outer event's second
 * part. The groups that were running are charged their own time before and after the
 * nested loop and nothing for the nested part.
 */
void perfgroup_nested_loop_begin(void)
{
    struct pg_thread *t = pg_self();
    if (!t)
        return;
    struct pg_thread *latch = pg_latch_take(); /* a signal handler's hooks: refused */
    /* One reading ends the outer event's first part and its stopwatches: an explicit
     * event's (the CPU clock, then the counter) is taken first, so a deschedule before it
     * is settled into them while they run, inside the spans they are charged, and one after
     * it into none of them. A counter read for the stopwatches and then the event's own
     * reading left the gap between the two — that system call's return is where a busy
     * machine often preempts — settled into groups whose charge had ended (their CPU time
     * their span less it: lite.paths.nested's A and O read 11-14 % of the event, not 21 %,
     * with four CPU spinners beside it). */
    int explicit = t->event_open == PG_EV_EXPLICIT;
    uint64_t tsc;
    int64_t cpu = 0;
    if (explicit)
        cpu = perfgroup__cputime_read(t, &tsc);
    else
        tsc = pg_clock_settled(t);
    PG_TEST_POINT(13);
    if (t->nest_depth < PG_NEST_MAX) {
        struct pg_nest *n = &t->nest[t->nest_depth];
        n->name = t->event_name;
        n->open = t->event_open;
        n->implicit_frame = t->implicit_frame;
        n->depth = t->depth;
        n->iter = t->iter;
        /* lite frames open now (a lite event): the outer event's first part charges them
         * (its commit); their bits are given back at the end, for its second part */
        n->lite_bits = t->est_on == PG_EST_LITE && t->event_open != PG_EV_NONE ? pg_lite_open_bits(t) : 0;
        n->lite_top = PERFGROUP_TLS_CUR.top;
    }
    t->nest_depth++;
    if (t->event_open != PG_EV_NONE) {
        perfgroup__bank_frames(t, t->depth, t->iter, tsc);
        PG_TEST_POINT(14);
        t->event_flags |= PGF_EVENT_F_NESTED;
        /* the outer event up to here; commit() bumps the iteration */
        if (explicit)
            perfgroup__explicit_commit(t, tsc, cpu);
        else
            perfgroup__event_close(t, tsc);
    } else {
        t->iter++;           /* every running stopwatch becomes stale */
    }
    pg_cur_refresh(t);
    pg_latch_drop(latch);
}

void perfgroup_nested_loop_end(void)
{
    struct pg_thread *t = perfgroup__tls;
    if (!t || t->nest_depth == 0)
        return;
    struct pg_thread *latch = pg_latch_take();
    uint64_t tsc = pg_clock_settled(t);
    perfgroup__event_close(t, tsc); /* an inner event left open */
    PG_TEST_POINT(15);
    t->nest_depth--;
    t->iter++;           /* what the nested loop started is stale too */
    if (t->nest_depth < PG_NEST_MAX) {
        struct pg_nest *n = &t->nest[t->nest_depth];
        if (n->open != PG_EV_NONE) {
            uint64_t now = pg_clock_now();
            if (n->open == PG_EV_IMPLICIT) { /* outside the hooks: a real begin, settled */
                int64_t c = perfgroup__cputime_read(t, &now);
                perfgroup__implicit_own(t, now, c);
            }
            perfgroup__event_open(t, now, (int)n->open, n->name);
            t->event_flags |= PGF_EVENT_F_NESTED;
            if (n->open == PG_EV_IMPLICIT)
                t->implicit_frame = n->implicit_frame;
            split_frames(t, n->depth, t->event_begin_tsc);
            PG_TEST_POINT(16);
            restart_frames(t, n->depth, n->iter, t->event_begin_tsc);
        } else {
            split_frames(t, n->depth, tsc);
        }
    }
    pg_cur_refresh(t); /* restarted frames are of the new iteration */
    if (t->nest_depth < PG_NEST_MAX && t->nest[t->nest_depth].lite_bits &&
        t->nest[t->nest_depth].open != PG_EV_NONE) {
        /* the lite frames still open run in the second part: their bits back in the mask (else
         * their groups charged nothing there), the innermost one's as cur.top (lite_begin) */
        const struct pg_nest *n = &t->nest[t->nest_depth];
        PERFGROUP_TLS_CUR.top = n->lite_top;
        pg_cur_on(PERFGROUP_TLS_CUR.mask | n->lite_bits, PERFGROUP_TLS_CUR.sp);
    }
    pg_latch_drop(latch);
    perfgroup__alerts_deliver(t);
}
