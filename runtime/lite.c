/* SPDX-License-Identifier: MIT */
/*
 * runtime/lite.c — lite frames' accounting: an event's hot part accounted by sampled
 * segments (hooks.c makes the transitions the runtime sees, and calls here around them).
 *
 * docs/accounting.md, "Lite frames". In a hot event (enter_window) the plugin's inline code
 * makes most transitions without a call (abi.h): the runtime sees one transition in about
 * PERFGROUP_LITE_R (the countdown ctl.left), and the ones it must make itself (a site of
 * several groups starting, a group without a re-entry bit, a call above the innermost frame,
 * an exit of a frame it pushed). Time is then attributed by segment — the stretch between
 * two transitions, whose state is the running mask and the innermost frame (cur.top):
 *   - at the countdown's end the transition comes here, and the segment after it is measured
 *     (the counter read at its both ends: left = 1 sends the next transition here too);
 *   - at the event's commit (perfgroup__lite_fold) the hot part's CPU — its two exact
 *     counter readings less the off-CPU time settled in between — less the long spans below
 *     is shared out as the measured segments are (a ratio estimator: the segments measured
 *     do not depend on their length, one in R on average, the countdown randomised);
 *   - the ticker (ticker.c) stores left = 1 every tick: the next transition reads the counter.
 *     A stretch since the thread's newest reading in which two ticks fell (longer than a
 *     tick interval: no transition for that long, one long segment at its end) is charged
 *     whole to the state it ends in, exactly: 40 ms in one activation lands in its jank.
 * The runtime's own frames in the hot part charge nothing but their activations (their
 * groups' time is the segments'); activations of lite frames are counted inline per
 * re-entry bit (ctl.acts) and folded into their groups at commit (a bit never changes its
 * group: reentry.c).
 */

#include <string.h>

#include "internal.h"

/* lite transitions between two through the runtime, on average (lifecycle.c; 0: none) */
PG_HIDDEN uint64_t perfgroup__lite_r;

/* The countdown's next length: uniform in [R/2, 3R/2] (xorshift32, as est_reload's). */
PG_HIDDEN uint64_t perfgroup__lite_reload(struct pg_thread *t)
{
    uint32_t x = t->lite.rng ? t->lite.rng : (uint32_t)pg_clock_now() | 1u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    t->lite.rng = x;
    uint64_t r = perfgroup__lite_r, n = r / 2 + x % (r + 1);
    return n < 2 ? 2 : n;
}

/* The innermost frame's bits now (bit 63: none, the event's own code). */
PG_HIDDEN uint64_t perfgroup__lite_selfm(const struct pg_thread *t)
{
    uint64_t top = PERFGROUP_TLS_CUR.top;
    if (top < 64)
        return 1ull << top;
    if (top == PERFGROUP_TOP_RT && t->depth != 0)
        return t->stack[t->depth - 1].bits; /* (a group without a bit: no self time here) */
    return 1ull << 63;
}

static void lite_put(struct pg_lite *l, uint64_t *run, uint64_t *self, uint64_t mask,
                     uint64_t selfm, uint64_t dt)
{
    l->touched |= mask | selfm;
    for (uint64_t m = mask & ~(1ull << 63); m; m &= m - 1)
        run[__builtin_ctzll(m)] += dt;
    for (uint64_t m = selfm; m; m &= m - 1)
        self[__builtin_ctzll(m)] += dt;
}

/*
 * A transition in the runtime, in a lite event, before its change of state: the segment
 * that ends here. Read the counter (*tscp if the caller read it, settled; else here) if a
 * measured segment ends or the coarse clock ticked since the thread's newest reading. A
 * stretch since that reading in which two ticks fell is charged whole to the state now (its
 * CPU: less the off-CPU time settled in it); else a measured segment is one sample (none if
 * it held a deschedule). Returns 1: a measured segment or a forced reading ended here.
 */
PG_HIDDEN int perfgroup__lite_close(struct pg_thread *t, uint64_t *tscp)
{
    struct pg_lite *l = &t->lite;
    uint64_t tk = atomic_load_explicit(&perfgroup__tick, memory_order_relaxed);
    int armed = l->armed;
    if (!pg_lite_reads(t, tk))
        return 0;
    uint64_t tsc = *tscp;
    if (!tsc) { /* the enter hook's early reading (enter_on), or now; settled */
        tsc = l->early ? l->early : pg_clock_now();
        if (pg_descheduled())
            tsc = perfgroup__cputime_settle(t, tsc);
        *tscp = tsc;
    }
    uint64_t off = (int64_t)(t->off - l->last_off) > 0 ? t->off - l->last_off : 0;
    uint64_t span = tsc - l->last;
    if (!((tk | l->tick) & 1) && tk - l->tick >= 4 && (int64_t)span > 0) {
        uint64_t on = span > off ? span - off : 0;
        lite_put(l, l->lrun, l->lself, PERFGROUP_TLS_CUR.mask, perfgroup__lite_selfm(t), on);
        l->lsum += on;
    } else if (armed && t->off == l->last_off && (int64_t)(tsc - l->seg_tsc) >= 0) {
        uint64_t dt = tsc - l->seg_tsc;
        lite_put(l, l->run, l->self, l->seg_mask, l->seg_self, dt);
        l->sum += dt;
    }
    if (tk != l->tick && !atomic_load_explicit(&perfgroup__tick_used, memory_order_relaxed))
        atomic_store_explicit(&perfgroup__tick_used, 1, memory_order_relaxed);
    l->tick = tk;
    l->last = tsc;
    l->last_off = t->off;
    l->armed = 0;
    return 1;
}

/* After the transition: the countdown goes on; at its end the segment starting now is
 * measured (left = 1: the next transition comes here). After a reading (closed), a new
 * countdown: a segment is never measured because of when a tick fell (the one after a
 * long one would be picked for its predecessor's length). */
PG_HIDDEN void perfgroup__lite_open(struct pg_thread *t, int closed)
{
    struct pg_lite *l = &t->lite;
    uint64_t left = l->ctl.left;
    if (closed) {
        l->ctl.left = perfgroup__lite_reload(t);
        return;
    }
    if (left > 1) {
        l->ctl.left = left - 1;
        return;
    }
    l->seg_mask = PERFGROUP_TLS_CUR.mask;
    l->seg_self = perfgroup__lite_selfm(t);
    l->seg_tsc = l->last = pg_clock_settled(t);
    l->last_off = t->off;
    l->armed = 1;
    l->ctl.left = 1;
}

/* The sums of a lite event's hot part from zero, its start at `tsc` (and at the fork: the
 * child's part of the event starts there). The entry may hold another life's (a thread that
 * forked away, an event left open in a fork's other threads): cleared here, not trusted. */
PG_HIDDEN void perfgroup__lite_restart(struct pg_thread *t, uint64_t tsc)
{
    struct pg_lite *l = &t->lite;
    for (uint64_t m = l->touched; m; m &= m - 1) {
        unsigned b = (unsigned)__builtin_ctzll(m);
        l->run[b] = l->self[b] = l->lrun[b] = l->lself[b] = 0;
    }
    memset(l->ctl.acts, 0, sizeof l->ctl.acts);
    l->touched = 0;
    l->learnt = 0;
    l->sum = l->lsum = 0;
    l->armed = 0;
    l->hot_tsc = l->last = tsc;
    l->hot_off = l->last_off = t->off;
    l->tick = atomic_load_explicit(&perfgroup__tick, memory_order_relaxed);
}

/* The event's commit (events.c, under the latch), at `end_tsc`: the hot part's time shared
 * out. T = its CPU (counter readings at the switch and the end, less the off-CPU time
 * settled in between) less the long spans; each bit b gets T x run[b] / sum + lrun[b]
 * charged, the same of self[b] and lself[b] self, its lite activations; the top group
 * self[63]'s share. Every sum back to 0, the countdown off. */
PG_HIDDEN void perfgroup__lite_fold(struct pg_thread *t, uint64_t end_tsc)
{
    struct pg_lite *l = &t->lite;
    uint64_t span = (int64_t)(end_tsc - l->hot_tsc) > 0 ? end_tsc - l->hot_tsc : 0;
    uint64_t off = (int64_t)(t->off - l->hot_off) > 0 ? t->off - l->hot_off : 0; /* (it
                                   * telescopes: a settling may take a little back, cputime.c) */
    uint64_t on = span > off ? span - off : 0;
    uint64_t base = on > l->lsum ? on - l->lsum : 0;
    if (l->armed && t->off == l->last_off && (int64_t)(end_tsc - l->seg_tsc) > 0) {
        lite_put(l, l->run, l->self, l->seg_mask, l->seg_self, end_tsc - l->seg_tsc);
        l->sum += end_tsc - l->seg_tsc; /* the measured segment the commit ends */
    }
    if (l->sum == 0 && base != 0) { /* no segment measured (a short hot part): the state at
                                     * its start stands in for it, a sample of weight 1 */
        lite_put(l, l->run, l->self, l->seg_mask, l->seg_self, 1);
        l->sum = 1;
    }
    double k = l->sum ? (double)base / (double)l->sum : 0;
    uint64_t bits = l->touched | (1ull << 63);
    for (unsigned b = 0; b < 63; b++)
        if (l->ctl.acts[b])
            bits |= 1ull << b;
    uint64_t own = 0;
    for (uint64_t m = bits; m; m &= m - 1) {
        unsigned b = (unsigned)__builtin_ctzll(m);
        uint64_t run = (uint64_t)(k * (double)l->run[b]) + l->lrun[b];
        uint64_t self = (uint64_t)(k * (double)l->self[b]) + l->lself[b];
        uint32_t acts = l->ctl.acts[b];
        l->run[b] = l->self[b] = l->lrun[b] = l->lself[b] = 0;
        l->ctl.acts[b] = 0;
        if (b == 63) {
            own = self;
            continue;
        }
        struct pg_group *g = atomic_load_explicit(&perfgroup__bit_group[b], memory_order_acquire);
        if (!g || g->id >= t->cap) { /* (lite_begin grew the table for every group with a bit
                                      * then: a bit given since, to a group beyond it) */
            if (g && (acts || run))
                t->ov_dropped++;
            continue;
        }
        struct pg_gstate *s = &t->sw[g->id];
        s->recent += run;
        s->self += self;
        s->acts += acts;
        /* its parent: learnt (lite_learn; an earlier event's if none in this one), else the
         * event's root */
        pg_stamp_as(t, s, g->id, s->lparent ? s->lparent - 1 : 0);
    }
    l->learnt = 0;
    /* the top group's self: the event's cycles less ev_inner, which so far holds the part
     * before the switch; of the hot part, its share of the event's own code */
    t->ev_inner += span - own;
    l->touched = 0;
    l->sum = l->lsum = 0;
    l->armed = 0;
    l->ctl.left = 0;
    t->est_on = 1;
    atomic_fetch_sub_explicit(&perfgroup__lite_threads, 1, memory_order_relaxed);
}

