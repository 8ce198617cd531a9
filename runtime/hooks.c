/* SPDX-License-Identifier: MIT */
/*
 * runtime/hooks.c — the instrumented code's entry points: the hot path (__perfgroup_enter,
 * __perfgroup_exit), the module registration, and this copy's mark offering them to another
 * copy of the runtime (its ELF note: owner.c's election finds it).
 *
 * No syscall, lock, malloc or I/O here. Every not-ready case (first call of a thread or a
 * site, a group id past the thread's table, a skipped exit to resynchronise, the start and
 * end of an implicit event, the text trace) goes to an out-of-line cold function.
 *
 * Token returned by enter: 0 = nothing to do at exit (the plugins call no exit hook then);
 * else (gen << 32) | (stack index + 1), or PG_TOKEN_NO_FRAME: an exit to see with no frame
 * (the text trace prints every exit).
 * The generation makes an exit whose frame was already dropped by a resynchronisation
 * (longjmp, exit hooks skipped by a frame without unwind tables) a no-op.
 *
 * This file is never instrumented: the plugins skip every __perfgroup / perfgroup_ function
 * and the runtime is built without -finstrument-functions.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

#define PG_ALWAYS_INLINE inline __attribute__((always_inline))
#define PG_TOKEN_NO_FRAME 0xffffffffull /* index 0xfffffffe: never a frame's */

/* A hook leaves errno as it found it (the code around a call site may be between a failing
 * call and its check, or a signal handler's): every cold path, the only ones that may reach
 * a syscall or libc, saves it on entry and restores it on return. */
#define PG_ERRNO_SAVE() const int pg_errno_ = errno
#define PG_ERRNO_RESTORE() (errno = pg_errno_)
/* The same for a thread with an entry: through the address its entry keeps (errno_at), so
 * that the cold paths of every implicit event (its begin, its commit) make no libc call for
 * it (__errno_location through the PLT, once each). */
#define PG_ERRNO_SAVE_T(t) int *const pg_errno_at_ = (t)->errno_at; const int pg_errno_ = *pg_errno_at_
#define PG_ERRNO_RESTORE_T() (*pg_errno_at_ = pg_errno_)

/*
 * Is frame f, still on the shadow stack, dead (its exit skipped) given a new enter at
 * (sp, ra)? Ancestors were entered from frames at or above ours: a frame deeper than us
 * is dead. At the same position it is a live ancestor if it was another call instruction
 * (an instrumented function inlined into its caller shares the caller's frame), dead if it
 * was this very instruction (the same call in the same frame, again: a longjmp skipped it).
 */
static PG_ALWAYS_INLINE int frame_dead(const struct pg_frame *f, uintptr_t sp, uintptr_t ra)
{
    return f->sp < sp || (f->sp == sp && f->ra == ra);
}

static uint64_t enter_prepare(struct pg_thread *t, struct pg_func *fn, uintptr_t sp,
                              uintptr_t ra);
static uint64_t enter_settle(struct pg_thread *t, struct pg_func *fn, uintptr_t sp,
                             uintptr_t ra, unsigned mask, uint32_t d);
/* (six arguments at most, all in registers: the fast path's calls of them are tail calls;
 * the frame's index is t->depth there) */
static uint64_t enter_window(struct pg_thread *t, struct pg_func *fn, uintptr_t sp,
                             uintptr_t ra, unsigned mask, uint64_t tsc);
static uint64_t enter_sampled(struct pg_thread *t, struct pg_func *fn, uintptr_t sp,
                              uintptr_t ra, unsigned mask, struct pg_gstate *s0);
static uint64_t enter_ticked(struct pg_thread *t, struct pg_func *fn, uintptr_t sp,
                             uintptr_t ra, unsigned mask, uint64_t tick);
static uint64_t enter_lite(struct pg_thread *t, struct pg_func *fn, uintptr_t sp, uintptr_t ra,
                           unsigned mask, int hot);
static uint64_t lite_begin(struct pg_thread *t, struct pg_func *fn, uintptr_t sp, uintptr_t ra,
                           unsigned mask, uint32_t d, uint64_t tsc, uint64_t tick);

/* The clocks of enter_fast's cold path (hot = 0), as pg_clock_settled and pg_cpu_now give
 * them, read inline when the gate's condition holds (pg_clocks_fast: always, when it comes
 * from the fast path's enter_prepare): an implicit event's begin makes no call for them. */
static PG_ALWAYS_INLINE uint64_t hook_clock_settled(struct pg_thread *t)
{
    if (PG_LIKELY(pg_clocks_fast())) {
        uint64_t tsc = pg_clock_fast();
        return pg_descheduled_fast() ? perfgroup__cputime_settle(t, tsc) : tsc;
    }
    return pg_clock_settled(t);
}

static PG_ALWAYS_INLINE uint32_t hook_cpu_now(void)
{
    return PG_LIKELY(pg_clocks_fast()) ? pg_cpu_fast() : pg_cpu_now();
}

/* Push the frame of a stopwatch started at `tsc` (every deschedule before it settled). */
static PG_ALWAYS_INLINE uint64_t push_frame(struct pg_thread *t, struct pg_func *fn,
                                            uintptr_t sp, uintptr_t ra, unsigned mask,
                                            uint32_t d, uint64_t tsc, uint32_t cpu)
{
    struct pg_frame *f = &t->stack[d];
    f->sp = sp;
    f->ra = ra;
    f->tsc = tsc;
    f->inner = 0;
    t->last_tsc = tsc; /* (an estimated start: the value it had) */
    f->iter = t->iter;
    f->fn = fn;
    uint64_t bits = 0; /* (a re-key may be writing gbit: relaxed loads) */
    for (unsigned m = mask; m; m &= m - 1)
        bits |= __atomic_load_n(&fn->gbit[__builtin_ctz(m)], __ATOMIC_RELAXED);
    f->bits = bits;
    f->cpu = cpu;
    /* the token from a register: reloaded after the stores below (the compiler cannot tell
     * them apart), enter_prepare's copy read f->gen with a load wider than its store (a
     * store-forwarding stall; 17 % of its perf samples sat just after it on an Intel Xeon
     * host, though bench_hooks showed no change within its noise) */
    uint16_t gen = ++t->gen;
    f->gen = gen;
    f->mask = (uint8_t)mask;
    f->lite = 0; /* (enter_lite marks its frames after) */
    t->depth = d + 1;
    /* the groups it started run now: calls of functions whose groups all run skip */
    pg_cur_on(PERFGROUP_TLS_CUR.mask | bits, sp);
    return ((uint64_t)gen << 32) | (d + 1);
}

/*
 * hot = 1: the hook's fast path, under the latch enter_acquire took, which every way out
 * drops (each cold function it goes to drops it there). It makes no call but tail calls (a
 * call would make the hook save and restore registers, and the latch's drop after it would
 * make every call one): clocks are read inline (the gate guarantees pg_clocks_fast()), and a
 * skipped exit to resynchronise or an implicit event to begin goes to enter_prepare, which
 * comes back here with hot = 0 (whose caller holds and drops its own latch).
 */
static PG_ALWAYS_INLINE uint64_t enter_fast(struct pg_thread *t, struct pg_func *fn,
                                            uintptr_t sp, uintptr_t ra, int hot)
{
    uint32_t d = t->depth;
    unsigned act = atomic_load_explicit(&fn->active_mask, memory_order_relaxed);
    int dead = d != 0 && frame_dead(&t->stack[d - 1], sp, ra);
    int begin = t->event_open == PG_EV_NONE && act != 0;
    if (hot && PG_UNLIKELY(dead | begin))
        return enter_prepare(t, fn, sp, ra);
    if (!hot && dead) {
        uint32_t keep = d - 1;
        while (keep > 0 && frame_dead(&t->stack[keep - 1], sp, ra))
            keep--;
        perfgroup__resync(t, keep, 0);
        d = t->depth;
        begin = t->event_open == PG_EV_NONE && act != 0;
    }
    /* A thread's root frame (main, a start routine) opens no event and starts no stopwatch;
     * trace mode records it with its groups, never charged (iter 0 is never current). */
    int root = !hot && begin && d == 0 && (fn->flags & PERFGROUP_SITE_F_ROOT);
    if (root)
        begin = 0;
    uint64_t begun = 0; /* an implicit event's begin: its first stopwatch starts there too */
    if (!hot && begin)
        perfgroup__implicit_begin(t, begun = hook_clock_settled(t));

    uint64_t iter = t->iter;
    struct pg_gstate *g = t->sw;
    unsigned mask = 0;
    /* a lite event: the groups of lite frames run too (their bits in the mask) */
    uint64_t lm = PG_UNLIKELY(t->est_on == PG_EST_LITE) ? PERFGROUP_TLS_CUR.mask : 0;
    /* its active groups, in order (active_mask has no bit at or above ngroups: registry.c) */
    for (unsigned m = act; m; m &= m - 1) {
        unsigned i = __builtin_ctz(m);
        if (root) {
            mask |= 1u << i;
        } else {
            struct pg_gstate *s = &g[fn->gid[i]];
            if (s->running != iter && !(lm & __atomic_load_n(&fn->gbit[i], __ATOMIC_RELAXED))) {
                s->running = iter;
                mask |= 1u << i;
            }
        }
    }
    if ((mask == 0 || root) && PG_LIKELY(perfgroup__rec_mode_now() != PGF_MODE_TRACE)) {
        if (hot)
            pg_latch_drop(t);
        return 0; /* re-entry: every group already has its stopwatch (or a root) */
    }

    if (PG_UNLIKELY(d >= PG_STACK_MAX)) {
        for (unsigned i = 0; i < fn->ngroups; i++)
            if (mask & (1u << i))
                g[fn->gid[i]].running = 0;
        t->ov_dropped++;
        if (hot)
            pg_latch_drop(t);
        return 0;
    }
    /* The counter is read last: re-entry never pays for it, and the hook's own work is
     * kept out of the measure (the exit hook reads it before anything but its latch). Then
     * whether the thread was descheduled since its last reading (after the counter: a
     * deschedule in between is settled here too), rarely: its off-CPU time is settled first
     * (cputime.c). */
    if (hot) {
        /* A hot event (below, enter_window) reads no counter here: the stopwatch starts at
         * the thread's newest reading, and one start in PG_EST_CYCLE measures how early
         * that was (enter_sampled). A deschedule since that reading is settled at the next
         * one, with this stopwatch on the stack: it lies inside the span charged. One
         * counter read less per transition: bench_hooks pair 47.2 -> 43.5 ns on an Intel
         * Xeon host, interleaved (docs/benchmarks.md). */
        if (t->est_on) {
            if (t->est_on == PG_EST_LITE) /* segment-accounted (below) */
                return enter_lite(t, fn, sp, ra, mask, 1);
            /* a tick since the thread's last start that read the counter: the stretch
             * since its newest reading may be long — read it (ticker.c) */
            uint64_t tk = atomic_load_explicit(&perfgroup__tick, memory_order_relaxed);
            if (PG_UNLIKELY(tk != t->est_tick))
                return enter_ticked(t, fn, sp, ra, mask, tk);
            struct pg_gstate *s0 = &g[fn->gid[__builtin_ctz(mask)]];
            uint64_t token;
            if (PG_LIKELY(s0->est_left > 1)) {
                s0->est_left--;
                token = push_frame(t, fn, sp, ra, mask, d, t->last_tsc, pg_cpu_fast());
                pg_latch_drop(t);
                return token;
            }
            return enter_sampled(t, fn, sp, ra, mask, s0);
        }
        uint64_t tsc = pg_clock_fast();
        if (PG_UNLIKELY(pg_descheduled_fast()))
            return enter_settle(t, fn, sp, ra, mask, d);
        if (PG_UNLIKELY(--t->est_left == 0)) /* the end of a rate window */
            return enter_window(t, fn, sp, ra, mask, tsc);
        uint64_t token = push_frame(t, fn, sp, ra, mask, d, tsc, pg_cpu_fast());
        pg_latch_drop(t);
        return token;
    }
    if (PG_UNLIKELY(t->est_on == PG_EST_LITE) && !begun && !root)
        return enter_lite(t, fn, sp, ra, mask, 0);
    /* one reading for the event's begin and its stopwatch's start (a deschedule since is
     * settled at the next reading, inside both) */
    uint64_t tsc = begun ? begun : hook_clock_settled(t);
    uint64_t token = push_frame(t, fn, sp, ra, mask, d, tsc, hook_cpu_now());
    if (root) {
        t->stack[d].iter = 0;
        t->stack[d].bits = 0; /* it started nothing */
        pg_cur_refresh(t);    /* no event: nothing to skip */
    }
    return token;
}

/* The enter hook found the thread descheduled: settle, then start the stopwatch after.
 * Under enter_acquire's latch, dropped here (as by every function below that the fast path
 * goes to: its calls of them are tail calls). */
static PG_COLD uint64_t enter_settle(struct pg_thread *t, struct pg_func *fn, uintptr_t sp,
                                     uintptr_t ra, unsigned mask, uint32_t d)
{
    PG_ERRNO_SAVE_T(t);
    uint64_t tsc = perfgroup__cputime_settle(t, pg_clock_now());
    uint64_t token = push_frame(t, fn, sp, ra, mask, d, tsc, pg_cpu_now());
    pg_latch_drop(t);
    PG_ERRNO_RESTORE_T();
    return token;
}

/* Group s's next sampling cycle: its length uniform in [PG_EST_CYCLE / 2, 3 PG_EST_CYCLE / 2]
 * (xorshift32), so that no periodic pattern of the program's calls lines up with the sampled
 * starts, and no wider (the weights' spread is the estimate's variance). */
static PG_ALWAYS_INLINE void est_reload(struct pg_thread *t, struct pg_gstate *s)
{
    uint32_t x = t->est_rng ? t->est_rng : (uint32_t)t->last_tsc | 1u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    t->est_rng = x;
    s->est_cycle = s->est_left = (uint16_t)(PG_EST_CYCLE / 2 + x % (PG_EST_CYCLE + 1));
}

/* Lite frames of an ended event still open (pg_thread.lite_hold)? Released once the frame
 * below them has gone (LIFO: they have too). */
static inline int lite_held(struct pg_thread *t)
{
    uint32_t h = t->lite_hold;
    if (h == 0)
        return 0;
    if (h <= t->depth && t->stack[h - 1].gen == t->lite_hold_gen)
        return 1;
    t->lite_hold = 0;
    return 0;
}

/* The event's PG_EST_WINDOW-th exact start since the window began (the event's begin or the
 * previous window's end): faster than one per PG_EST_HOT_NS, the event estimates its starts
 * from here on (adaptive mode, not trace mode); else a new window. Under enter_acquire's
 * latch, dropped here. */
static PG_COLD uint64_t enter_window(struct pg_thread *t, struct pg_func *fn, uintptr_t sp,
                                     uintptr_t ra, unsigned mask, uint64_t tsc)
{
    uint32_t d = t->depth;
    uint64_t from = t->est_win ? t->est_win : t->event_begin_tsc;
    double hot = (double)PG_EST_WINDOW * PG_EST_HOT_NS * 1e-9 * (double)perfgroup__clock_hz();
    if (perfgroup__est_window != 0 && (double)(tsc - from) < hot &&
        perfgroup__rec_mode_now() != PGF_MODE_TRACE) {
        t->est_on = 1;
        uint64_t tk = atomic_load_explicit(&perfgroup__tick, memory_order_relaxed);
        t->est_tick = (tk & 1) ? 0 : tk; /* the counter was just read */
        atomic_fetch_add_explicit(&perfgroup__estimated, 1, memory_order_relaxed);
        /* lite frames, while the ticker runs fast (it forces a reading per tick: below) */
        if (perfgroup__lite_r != 0 && !(tk & 1) && !lite_held(t)) {
            uint64_t token = lite_begin(t, fn, sp, ra, mask, d, tsc, tk);
            pg_latch_drop(t);
            return token;
        }
        if (perfgroup__lite_r != 0 &&
            !atomic_load_explicit(&perfgroup__tick_used, memory_order_relaxed))
            atomic_store_explicit(&perfgroup__tick_used, 1, memory_order_relaxed);
    } else {
        t->est_left = perfgroup__est_window != 0 ? perfgroup__est_window : UINT32_MAX;
        t->est_win = tsc;
    }
    uint64_t token = push_frame(t, fn, sp, ra, mask, d, tsc, pg_cpu_fast());
    pg_latch_drop(t);
    return token;
}

/*
 * The sampled start of a cycle of R estimated ones of the frame's first group s0 (each group
 * its own cycles: a group whose gaps are alike gets a correction as steady as they are): the
 * counter is read, and the gap since the newest reading (by how much the estimate starts
 * this stopwatch early), times R, is taken off the frame's groups now — Horvitz-Thompson:
 * the expected sum of these corrections is the sum of every estimated start's gap. The
 * stopwatch itself starts at the estimate, as the others of its cycle. A deschedule found
 * here: settled, an exact start, and the group's next start is the cycle's sample (a gap
 * holding a deschedule is not one to sample, and the cycle's R starts still need theirs).
 * A group's first cycle (R = 0 here) corrects
 * nothing: one start per group and thread. Under enter_acquire's latch, dropped here.
 */
static __attribute__((noinline)) uint64_t enter_sampled(struct pg_thread *t, struct pg_func *fn,
                                                        uintptr_t sp, uintptr_t ra,
                                                        unsigned mask, struct pg_gstate *s0)
{
    uint32_t d = t->depth;
    uint64_t tsc = pg_clock_fast();
    if (PG_UNLIKELY(pg_descheduled_fast()))
        return enter_settle(t, fn, sp, ra, mask, d); /* the cycle's sample: the next start */
    uint64_t corr = (tsc - t->last_tsc) * s0->est_cycle;
    est_reload(t, s0);
    for (unsigned i = 0; i < fn->ngroups; i++)
        if (mask & (1u << i)) /* modulo 2^64: commit() */
            pg_charge(t, fn->gid[i], (uint64_t)0 - corr, (uint64_t)0 - corr, 1, 0, &t->stack[d]);
    /* the gaps were the enclosing frame's code (or the event's own): its self time */
    *pg_inner_of(t, d) -= corr;
    uint64_t token = push_frame(t, fn, sp, ra, mask, d, t->last_tsc, pg_cpu_fast());
    t->last_tsc = tsc;
    pg_latch_drop(t);
    return token;
}

/*
 * An estimating event's start that found the coarse clock ticked (or not running: an odd
 * word) since its thread's last start that read the counter: an exact start, outside the
 * estimate's sampling cycles (the stretch since the newest reading may hold a tick: a long
 * one is never estimated). It tells the ticker a thread looks (ticker.c). Under enter_acquire's
 * latch, dropped here.
 */
static __attribute__((noinline)) uint64_t enter_ticked(struct pg_thread *t, struct pg_func *fn,
                                                       uintptr_t sp, uintptr_t ra,
                                                       unsigned mask, uint64_t tick)
{
    uint32_t d = t->depth;
    t->est_tick = (tick & 1) ? 0 : tick;
    if (!atomic_load_explicit(&perfgroup__tick_used, memory_order_relaxed))
        atomic_store_explicit(&perfgroup__tick_used, 1, memory_order_relaxed);
    uint64_t tsc = pg_clock_fast();
    if (PG_UNLIKELY(pg_descheduled_fast()))
        return enter_settle(t, fn, sp, ra, mask, d);
    uint64_t token = push_frame(t, fn, sp, ra, mask, d, tsc, pg_cpu_fast());
    pg_latch_drop(t);
    return token;
}

/* ---- lite frames (lite.c keeps their accounting: docs/accounting.md "Lite frames") ------- */

/* A parent (id + 1, 0: the root) learnt for lite bit b's group at a transition the runtime
 * sees: the first of the event counts (as exact mode's, the innermost running group at the
 * group's first stopwatch that it knows of); it stays for later events that learn none. */
static void lite_learn(struct pg_thread *t, unsigned b, uint32_t parent)
{
    if (t->lite.learnt >> b & 1)
        return;
    const struct pg_group *g = atomic_load_explicit(&perfgroup__bit_group[b], memory_order_acquire);
    if (!g || g->id >= t->cap) /* (no room: the hooks never grow the table) */
        return;
    t->lite.learnt |= 1ull << b;
    t->sw[g->id].lparent = parent + 1;
}

/* A frame the runtime pushes in a lite event: segment-accounted (a group without a bit is
 * charged its span: its start read). Under the latch; hot (enter_fast's fast path, whose
 * latch is enter_acquire's): dropped here. The frame's index is t->depth. */
static __attribute__((noinline)) uint64_t enter_lite(struct pg_thread *t, struct pg_func *fn,
                                                     uintptr_t sp, uintptr_t ra, unsigned mask,
                                                     int hot)
{
    uint32_t d = t->depth;
    uint64_t tsc = 0;
    int closed = perfgroup__lite_close(t, &tsc);
    for (unsigned i = 0; i < fn->ngroups && !tsc; i++)
        if ((mask & (1u << i)) && !__atomic_load_n(&fn->gbit[i], __ATOMIC_RELAXED))
            tsc = pg_clock_settled(t);
    uint8_t top = (uint8_t)PERFGROUP_TLS_CUR.top;
    uintptr_t below_sp = PERFGROUP_TLS_CUR.sp;
    uint64_t token = push_frame(t, fn, sp, ra, mask, d, tsc ? tsc : t->last_tsc, pg_cpu_now());
    t->stack[d].lite = (uint8_t)(PG_FRAME_SEG | top);
    /* cur.sp as it was, which its exit restores (pg_frame.inner: a segment-accounted frame's) */
    t->stack[d].inner = below_sp;
    /* its groups' parent, for the fold if the event ends before the frame (pg_seg_end
     * stamps them at its end from the same top) */
    uint64_t bits = t->stack[d].bits & ~(1ull << 63);
    if (bits && (bits & ~t->lite.learnt)) {
        uint32_t parent = pg_parent_top(t, &t->stack[d], top);
        for (; bits; bits &= bits - 1)
            lite_learn(t, (unsigned)__builtin_ctzll(bits), parent);
    }
    PERFGROUP_TLS_CUR.top = PERFGROUP_TOP_RT;
    perfgroup__lite_open(t, closed);
    if (hot)
        pg_latch_drop(t);
    return token;
}

/* The event goes hot with lite frames (enter_window, at `tsc`, the coarse clock `tick`): its
 * open frames charged up to here (as at a nested loop) and segment-accounted from here on,
 * then this start's frame; the first segment is measured. Under the latch. */
static PG_COLD uint64_t lite_begin(struct pg_thread *t, struct pg_func *fn, uintptr_t sp,
                                   uintptr_t ra, unsigned mask, uint32_t d, uint64_t tsc,
                                   uint64_t tick)
{
    struct pg_lite *l = &t->lite;
    /* the thread's table holds every group with a bit (its lite frames' groups, folded at
     * commit without a call up here: lite.c); if it cannot grow, a bit beyond it is dropped
     * and counted there */
    uint32_t top_gid = 0;
    for (unsigned b = 0; b < 63; b++) {
        const struct pg_group *g = atomic_load_explicit(&perfgroup__bit_group[b], memory_order_acquire);
        if (g && g->id > top_gid)
            top_gid = g->id;
    }
    if (top_gid >= t->cap)
        (void)perfgroup__grow_groups(t, top_gid);
    perfgroup__bank_frames(t, d, t->iter, tsc);
    uint8_t below = PERFGROUP_TOP_NONE;
    for (uint32_t i = 0; i < d; i++) {
        struct pg_frame *f = &t->stack[i];
        if (f->iter != t->iter || !f->mask)
            continue;
        f->lite = (uint8_t)(PG_FRAME_SEG | below);
        f->tsc = tsc; /* (a group without a bit: charged its span from here) */
        f->inner = 0;
        below = PERFGROUP_TOP_RT;
    }
    /* a lite frame a nested loop's end gave back (perfgroup_nested_loop_end): the innermost,
     * taken to be above the runtime's frames */
    if (PERFGROUP_TLS_CUR.top < 64)
        below = (uint8_t)PERFGROUP_TLS_CUR.top;
    t->est_on = PG_EST_LITE;
    atomic_fetch_add_explicit(&perfgroup__lite_threads, 1, memory_order_relaxed);
    perfgroup__lite_restart(t, tsc);
    l->tick = tick;
    PERFGROUP_TLS_CUR.ctl = &l->ctl;
    uint64_t token = push_frame(t, fn, sp, ra, mask, d, tsc, pg_cpu_now());
    t->stack[d].lite = (uint8_t)(PG_FRAME_SEG | below);
    PERFGROUP_TLS_CUR.top = PERFGROUP_TOP_RT;
    /* the first countdown uniform in [1, R/2]: where the switch falls in the program's
     * pattern of calls is not random (the 64th start), so the segment after it is not
     * measured (it would be the same kind of segment in every event: tried, C of
     * runtime.self.gcc then read 9 % low); the state here stands in for an event without a
     * measured segment (perfgroup__lite_fold) */
    l->seg_mask = PERFGROUP_TLS_CUR.mask;
    l->seg_self = perfgroup__lite_selfm(t);
    (void)perfgroup__lite_reload(t);
    l->ctl.left = 1 + l->rng % (perfgroup__lite_r / 2 + 1);
    return token;
}

/* Out of the fast path: frames to drop, or an implicit event to begin. Tail-called from
 * enter_on (which read t from perfgroup__tls, not NULL), or from enter_acquire's fast path
 * with its latch held (held again here: the same store): it decides all over again under
 * the latch, which it drops. */
static PG_COLD uint64_t enter_prepare(struct pg_thread *t, struct pg_func *fn, uintptr_t sp,
                                      uintptr_t ra)
{
    pg_latch_hold();
    PG_ERRNO_SAVE_T(t);
    uint64_t token = enter_fast(t, fn, sp, ra, 0);
    pg_latch_drop(t);
    PG_ERRNO_RESTORE_T();
    return token;
}

/* The exit hook's fast path ended an implicit event's frame: the commit, under the hook's
 * latch, which is dropped after it (tail-called: the fast path saves no register for it). */
static PG_COLD void exit_implicit_end(struct pg_thread *t, uint64_t tsc)
{
    PG_ERRNO_SAVE_T(t);
    perfgroup__implicit_end(t, tsc); /* its commit turns the re-entry key off */
    pg_latch_drop(t);
    PG_ERRNO_RESTORE_T();
}

/* The end of exit_frame, once frame idx is charged (hot: as there; lite: a segment-accounted
 * frame of a lite event, closed: lite_close's answer for it). */
static PG_ALWAYS_INLINE void exit_finish(struct pg_thread *t, uint32_t idx, uint64_t tsc, int hot,
                                         int lite, int closed)
{
    const struct pg_frame *f = &t->stack[idx];
    /* A stale frame (a nested loop or a new event started since) is dropped uncharged: its
     * groups' `running` holds an old iteration, which no longer blocks a new stopwatch. */
    t->depth = idx;
    if (PG_UNLIKELY(t->event_open == PG_EV_IMPLICIT) && idx == t->implicit_frame) {
        if (hot)
            exit_implicit_end(t, tsc);
        else
            perfgroup__implicit_end(t, tsc);
        return;
    }
    /* its groups stop (a stale frame's are not in the mask); the frame below is the
     * innermost (the caller turned sp off) */
    uint64_t running = PERFGROUP_TLS_CUR.mask;
    if (f->iter == t->iter)
        running &= ~f->bits;
    if (lite)
        PERFGROUP_TLS_CUR.top = f->lite & ~PG_FRAME_SEG; /* the innermost frame it covered */
    /* sp: the innermost frame's below; a segment-accounted frame restores what it covered
     * (the lite frame under it: its CFA, not the runtime's frame below that one, above which
     * the lite frame's callers' calls would pass for its callees after a longjmp out of it) */
    uintptr_t below = idx != 0 && t->event_open != PG_EV_NONE ? t->stack[idx - 1].sp : 0;
    if (lite && f->inner != 0 && t->event_open != PG_EV_NONE)
        below = (uintptr_t)f->inner;
    pg_cur_on(running, below);
    if (lite)
        perfgroup__lite_open(t, closed);
    if (hot)
        pg_latch_drop(t);
}

/* The exit hook's fast path charged a group's first stopwatch of the event (every implicit
 * event's): the frame's groups join the event's list (pg_stamp: a call, and a walk down the
 * stack for the parent), then the rest of the exit. Tail-called, under the hook's latch. */
static PG_COLD void exit_stamp(struct pg_thread *t, uint32_t idx, uint64_t tsc)
{
    const struct pg_frame *f = &t->stack[idx];
    for (unsigned m = f->mask; m; m &= m - 1) { /* (of the current iteration: fresh says so) */
        uint32_t gid = f->fn->gid[__builtin_ctz(m)];
        pg_stamp(t, &t->sw[gid], gid, f);
    }
    exit_finish(t, idx, tsc, 1, 0, 0);
}

/* hot = 1: the exit hook's fast path, no call but tail calls; the caller holds the latch
 * for t (perfgroup__tls is NULL) and it is dropped here, and it checked that a trace record
 * has room (no chunk switch here). hot = 0: exit_slow, which holds and drops its own. */
static PG_ALWAYS_INLINE void exit_frame(struct pg_thread *t, uint32_t idx, uint64_t tsc,
                                        int hot, int trace)
{
    struct pg_frame *f = &t->stack[idx];
    struct pg_func *fn = f->fn;
    unsigned mask = f->mask;
    /* a segment-accounted frame of a lite event (never on the fast path: the exit hook
     * sends it to exit_slow) */
    int lite = !hot && f->lite && f->iter == t->iter && t->est_on == PG_EST_LITE;
    int closed = lite ? perfgroup__lite_close(t, &tsc) : 0;
    t->last_tsc = tsc;
    /* the record first: the writer's position, just checked for room, is still in a
     * register (the charges below store through pointers the compiler cannot tell apart) */
    if (PG_UNLIKELY(trace)) {
        _Static_assert(PG_STACK_MAX <= 256, "a frame's index is the record's u8 depth");
        uint8_t depth = (uint8_t)idx;
        if (hot)
            perfgroup__rec_interval_put_head(t->rec, fn->rec_head, (uint8_t)mask, depth, f->tsc,
                                             tsc - f->tsc);
        else
            perfgroup__rec_interval(t->rec, fn->id, (uint8_t)mask, depth, f->tsc, tsc - f->tsc);
    }
    /* charged, if current (hot: no group joins the event's list here: exit_stamp) */
    unsigned fresh = 0;
    pg_frame_end(t, idx, tsc, hot ? pg_cpu_fast() : pg_cpu_now(), hot ? &fresh : NULL);
    if (hot && PG_UNLIKELY(fresh)) {
        exit_stamp(t, idx, tsc);
        return;
    }
    exit_finish(t, idx, tsc, hot, lite, closed);
}

/* First call of a thread or a site, or a group id beyond the thread's table. */
static PG_COLD uint64_t enter_slow(struct perfgroup_site *site, uintptr_t sp, uintptr_t ra)
{
    if (PG_UNLIKELY(perfgroup__owner != NULL)) /* another copy owns the process: owner.c */
        return perfgroup__owner->enter(site);
    PG_ERRNO_SAVE();
    struct pg_thread *t = perfgroup__tls; /* NULL: new, busy (latched) or gone: see there */
    if (!t && !(t = perfgroup__thread_slow())) {
        PG_ERRNO_RESTORE();
        return 0;
    }
    struct pg_thread *latch = pg_latch_take();
    PG_TEST_POINT(9);
    uint64_t token = 0;
    struct pg_func *fn = __atomic_load_n(&site->cache, __ATOMIC_ACQUIRE);
    if (!fn && !(fn = perfgroup__site_resolve(site))) {
        t->ov_dropped++; /* the registry busy too long (refused, counted there) or full */
    } else if (fn->max_gid < t->cap || perfgroup__grow_groups(t, fn->max_gid) == 0) {
        t->ov_slow++;
        if (perfgroup__text_on)
            perfgroup__text_enter(t, fn);
        token = enter_fast(t, fn, sp, ra, 0);
        if (perfgroup__text_on && token == 0)
            token = PG_TOKEN_NO_FRAME; /* the exit hook is called for a token only */
    }
    PG_TEST_POINT(10);
    pg_latch_drop(latch);
    PG_ERRNO_RESTORE();
    return token;
}

/* An exit that is not the top of the stack, or whose frame was dropped, or off/text, or a
 * trace record that needs a new chunk, or a thread descheduled since its last CPU-clock
 * reading (cputime.c). tsc == 0: not read yet (the gate's path). */
static PG_COLD void exit_slow(struct perfgroup_site *site, uint64_t token, uint64_t tsc)
{
    if (PG_UNLIKELY(perfgroup__owner != NULL)) { /* the owner's token: owner.c */
        perfgroup__owner->exit(site, token);
        return;
    }
    if (tsc == 0)
        tsc = pg_clock_now();
    struct pg_thread *t = perfgroup__tls;
    if (!t) {
        if (token != 0 && perfgroup__tls_state != PG_TLS_NONE)
            pg_refuse(); /* the runtime is busy on this thread, or it is gone */
        return;
    }
    PG_ERRNO_SAVE();
    struct pg_thread *latch = pg_latch_take();
    /* a lite event: the mask holds lite frames' bits the shadow stack does not know */
    uint64_t was_mask = PERFGROUP_TLS_CUR.mask;
    uintptr_t was_sp = PERFGROUP_TLS_CUR.sp;
    int lite = t->est_on == PG_EST_LITE, ended = 0;
    pg_cur_off();
    PG_TEST_POINT(11);
    if (perfgroup__text_on) {
        struct pg_func *fn = __atomic_load_n(&site->cache, __ATOMIC_ACQUIRE);
        if (fn)
            perfgroup__text_exit(t, fn);
    }
    uint32_t idx = (uint32_t)token - 1;
    /* token 0: nothing to do; a generation mismatch: our frame was dropped by a
     * resynchronisation, nothing to charge */
    if (token != 0 && idx < t->depth && t->stack[idx].gen == (uint16_t)(token >> 32)) {
        if (pg_descheduled()) /* after the counter read: settle what fell before it */
            tsc = perfgroup__cputime_settle(t, tsc);
        if (idx + 1 != t->depth) {
            perfgroup__resync(t, idx + 1, tsc); /* frames above ours skipped their exits */
            lite = 0;
        }
        exit_frame(t, idx, tsc, 0, perfgroup__rec_mode_now() == PGF_MODE_TRACE);
        ended = 1;
    }
    PG_TEST_POINT(12);
    if (!lite || t->est_on != PG_EST_LITE)
        pg_cur_refresh(t);
    else if (!ended)
        pg_cur_on(was_mask, was_sp);
    pg_latch_drop(latch);
    PG_ERRNO_RESTORE();
}


/* The exit hook's frame on top, of the current generation, the thread not descheduled, a trace
 * record's room checked, but segment-accounted (a frame the runtime pushed in a lite event):
 * exit_slow's work for it without its generic part (the latch is the hook's, cur is off,
 * the counter read). Under the latch, dropped here. The event may have ended since the frame
 * began (its lite part folded): the mask then holds lite bits the shadow stack does not know,
 * so cur is refreshed from it, as exit_slow does. */
static __attribute__((noinline)) void exit_lite_frame(struct pg_thread *t, uint32_t idx,
                                                      uint64_t tsc, int trace)
{
    PG_ERRNO_SAVE_T(t);
    int lite = t->est_on == PG_EST_LITE;
    exit_frame(t, idx, tsc, 0, trace);
    if (!lite || t->est_on != PG_EST_LITE)
        pg_cur_refresh(t);
    pg_latch_drop(t);
    PG_ERRNO_RESTORE_T();
}

/* The enter hook's own CFA (the caller's stack pointer at the call) and return address:
 * the same on every path through the hook, whatever the hook's own frame looks like. */
#define HOOK_SP() ((uintptr_t)__builtin_dwarf_cfa())
#define HOOK_RA() ((uintptr_t)__builtin_return_address(0))

/*
 * What the enter hook has to do, decided read-only: ENTER_REENTRY when no dead frame is on
 * top, no event to begin, every active group of fn already running in this iteration, not
 * trace mode — exactly the case in which enter_fast(hot = 1) returns 0 without a write;
 * ENTER_PREPARE for a dead frame on top or an event to begin (enter_fast would go to
 * enter_prepare: it goes there at once, which decides again under the latch); else
 * ENTER_ACQUIRE (enter_acquire, which decides again under the latch too).
 */
enum { ENTER_REENTRY = 0, ENTER_ACQUIRE = 1, ENTER_PREPARE = 2 };
static PG_ALWAYS_INLINE int enter_kind(const struct pg_thread *t, const struct pg_func *fn,
                                       uintptr_t sp, uintptr_t ra)
{
    uint32_t d = t->depth;
    if (d != 0 && frame_dead(&t->stack[d - 1], sp, ra))
        return ENTER_PREPARE;
    unsigned act = atomic_load_explicit(&fn->active_mask, memory_order_relaxed);
    if (t->event_open == PG_EV_NONE && act != 0)
        return ENTER_PREPARE;
    uint64_t iter = t->iter;
    uint64_t lm = PG_UNLIKELY(t->est_on == PG_EST_LITE) ? PERFGROUP_TLS_CUR.mask : 0;
    for (unsigned m = act; m; m &= m - 1) {
        unsigned i = __builtin_ctz(m);
        if (t->sw[fn->gid[i]].running != iter &&
            !(lm & __atomic_load_n(&fn->gbit[i], __ATOMIC_RELAXED)))
            return ENTER_ACQUIRE;
    }
    return PG_LIKELY(perfgroup__rec_mode_now() != PGF_MODE_TRACE) ? ENTER_REENTRY : ENTER_ACQUIRE;
}

/* Everything but a re-entry: tail-called, so the re-entry path above saves no register.
 * Under the thread's latch (as the exit hook's fast path): a signal handler's hooks that
 * land while this one writes the shadow stack and the groups' state are refused and
 * counted, never interleaved with it (the re-entry path writes nothing: it needs none).
 * enter_fast drops it on each of its ways out, so that the cold functions it goes to are
 * tail calls and this path saves no register either. */
static __attribute__((noinline)) uint64_t enter_acquire(struct pg_thread *t, struct pg_func *fn,
                                                        uintptr_t sp, uintptr_t ra)
{
    pg_latch_hold();
    return enter_fast(t, fn, sp, ra, 1);
}

/* A lite event's enter hook: the counter read first, so that a measured segment ending here
 * holds as little of the hook as one that ends at an exit (whose hook reads it first): read
 * in enter_lite, after the checks, it ended ~20 ns late, and the segments before a call read
 * that much longer than the callee's (runtime.self.gcc: C's self -1.15 points). Valid for
 * this call only (lite_close). */
/* A call above the innermost frame's position in a lite event, which no frame below a live
 * one makes: lite frames were left by a longjmp (Lua's every error) and their bits, sp and
 * top are stale. Unrepaired, every later call above that position reached the hook (15.5 M
 * hook calls instead of 0.27 M in lpeg's test.lua); repaired from the shadow stack, as a
 * resync does (the runtime's own frames: frame_dead's rule). Lite frames still live above
 * the longjmp's target lose their bits until they exit, which restores them. */
static __attribute__((noinline, cold)) void lite_repair(struct pg_thread *t)
{
    struct pg_thread *latch = pg_latch_take();
    PERFGROUP_TLS_CUR.top = pg_top_of(t);
    pg_cur_refresh(t);
    pg_latch_drop(latch);
}

static __attribute__((noinline)) uint64_t enter_on_lite(struct pg_thread *t, struct pg_func *fn,
                                                        uintptr_t sp, uintptr_t ra)
{
    uintptr_t csp = PERFGROUP_TLS_CUR.sp;
    if (PG_UNLIKELY(csp != 0 && csp < sp))
        lite_repair(t);
    /* (only where lite_close will read the counter; a tick from here to there is read there) */
    if (pg_lite_reads(t, atomic_load_explicit(&perfgroup__tick, memory_order_relaxed)))
        t->lite.early = pg_clock_fast();
    int kind = enter_kind(t, fn, sp, ra);
    uint64_t token = kind == ENTER_REENTRY   ? 0
                     : kind == ENTER_PREPARE ? enter_prepare(t, fn, sp, ra)
                                             : enter_acquire(t, fn, sp, ra);
    t->lite.early = 0;
    return token;
}

/* The hook's body, tail-called: the gate's "off" path returns before any register is
 * saved (GCC does not shrink-wrap the enter hook's prologue past its first branch). A
 * re-entry — most calls of a code base put into groups — returns from here having saved
 * none either: the acquiring path's registers are enter_acquire's. */
static __attribute__((noinline)) uint64_t enter_on(struct perfgroup_site *site, uintptr_t sp,
                                                   uintptr_t ra)
{
    struct pg_thread *t = perfgroup__tls;
    struct pg_func *fn = __atomic_load_n(&site->cache, __ATOMIC_ACQUIRE);
    if (PG_UNLIKELY(t == NULL || fn == NULL || fn->max_gid >= t->cap))
        return enter_slow(site, sp, ra);
    if (PG_UNLIKELY(t->est_on == PG_EST_LITE))
        return enter_on_lite(t, fn, sp, ra);
    int kind = enter_kind(t, fn, sp, ra);
    if (PG_LIKELY(kind == ENTER_REENTRY))
        return 0;
    if (PG_UNLIKELY(kind == ENTER_PREPARE)) /* an implicit event's begin: one decision less */
        return enter_prepare(t, fn, sp, ra);
    return enter_acquire(t, fn, sp, ra);
}

uint64_t PERFGROUP_HOOK_ENTER(struct perfgroup_site *site)
{
    uint32_t gate = atomic_load_explicit(&perfgroup__gate, memory_order_relaxed);
    if (PG_UNLIKELY(gate != PG_GATE_ON))
        return gate == PG_GATE_OFF ? 0 : enter_slow(site, HOOK_SP(), HOOK_RA());
    return enter_on(site, HOOK_SP(), HOOK_RA());
}

void PERFGROUP_HOOK_EXIT(struct perfgroup_site *site, uint64_t token)
{
    uint32_t gate = atomic_load_explicit(&perfgroup__gate, memory_order_relaxed);
    if (PG_UNLIKELY(gate != PG_GATE_ON)) {
        if (gate == PG_GATE_OFF && token == 0)
            return;
        exit_slow(site, token, 0); /* it reads the clock: no call here but tail calls */
        return;
    }
    if (token == 0)
        return;
    struct pg_thread *t = perfgroup__tls;
    if (PG_UNLIKELY(t == NULL)) {
        exit_slow(site, token, 0);
        return;
    }
    /* The latch, from before the counter read to the last write of the thread's state
     * (exit_frame drops it): a signal handler's hooks meanwhile are refused and counted, so
     * its records and charges never interleave with this one's (a trace record's room
     * checked here, a group appended to the event's list, the stack's depth), and a handler
     * that ran before it ended before this stopwatch's end. */
    pg_latch_hold();
    pg_cur_off(); /* before any stopwatch stops: exit_frame (or exit_slow) turns it on again */
    uint64_t tsc = pg_clock_fast();
    uint32_t idx = (uint32_t)token - 1;
    int trace = perfgroup__rec_mode_now() == PGF_MODE_TRACE;
    if (PG_UNLIKELY(idx + 1 != t->depth || t->stack[idx].gen != (uint16_t)(token >> 32) ||
                    (trace && !perfgroup__rec_interval_room(t->rec)) || pg_descheduled_fast())) {
        pg_latch_drop(t);
        exit_slow(site, token, tsc);
        return;
    }
    if (PG_UNLIKELY(t->stack[idx].lite)) {
        exit_lite_frame(t, idx, tsc, trace); /* (a tail call) */
        return;
    }
    exit_frame(t, idx, tsc, 1, trace);
}

/* A lite frame's exit that found no lite transition left (its plugin restores nothing):
 * a transition of the lite event (above), or, if the event it began in has ended (the
 * countdown went to 0 at its commit), the thread's state from its shadow stack. */
void __perfgroup_exit_lite(struct perfgroup_site *site, uint64_t mask, uintptr_t sp, uint64_t top)
{
    (void)site;
    struct pg_thread *t = perfgroup__tls;
    if (PG_UNLIKELY(t == NULL)) { /* the runtime is busy on the thread (a signal handler's) */
        PERFGROUP_TLS_CUR.top = top;
        pg_cur_on(mask, sp);
        return;
    }
    PG_ERRNO_SAVE();
    pg_latch_hold();
    if (t->est_on == PG_EST_LITE && t->event_open != PG_EV_NONE) {
        uint64_t tsc = 0;
        int closed = perfgroup__lite_close(t, &tsc);
        /* the exiting frame's group (the one bit it set) ran under `top`, which it restores:
         * the group's parent (the recording's call tree) */
        uint64_t b = PERFGROUP_TLS_CUR.mask & ~mask;
        if (b && !(b & (b - 1)) && !(b & t->lite.learnt) && b != 1ull << 63)
            lite_learn(t, (unsigned)__builtin_ctzll(b),
                       pg_parent_top(t, &t->stack[t->depth], (unsigned)top));
        PERFGROUP_TLS_CUR.top = top;
        pg_cur_off();
        pg_cur_on(mask, sp);
        perfgroup__lite_open(t, closed);
    } else {
        PERFGROUP_TLS_CUR.top = PERFGROUP_TOP_NONE;
        pg_cur_refresh(t);
    }
    pg_latch_drop(t);
    PG_ERRNO_RESTORE();
}

/* A setjmp call returned in a unit the plugins compiled (abi.h, PERFGROUP_HOOK_LANDED): if a
 * longjmp landed here, the frames below this point are dead. A frame's sp is the stack
 * position at its enter hook's call, inside its function; this hook's is the landing
 * function's at this call: its callees' frames lie strictly below it, its own (if it has
 * one) at it, its callers' above. They are dropped now, as an enter from above them would
 * drop them (perfgroup__resync: not charged, when the jump happened is unknown), instead of
 * being taken for live ancestors by later calls at their depth until an enclosing exit: a
 * loop that setjmps, calls a function of A that longjmps back, then calls another of A,
 * counted 60 of A's 106,260 activations. A lite frame's CFA is its caller's stack position
 * at the call: an innermost one at or below this point is dead too, and the thread's state
 * is rebuilt from the shadow stack (as lite_repair does). setjmp's first return finds
 * nothing. */
void PERFGROUP_HOOK_LANDED(void)
{
    uint32_t gate = atomic_load_explicit(&perfgroup__gate, memory_order_relaxed);
    struct pg_thread *t = perfgroup__tls;
    if (gate == PG_GATE_OFF || t == NULL || perfgroup__owner != NULL)
        return; /* off, not measured here, the runtime busy on the thread, or another copy's */
    uintptr_t sp = HOOK_SP();
    uint32_t keep = t->depth;
    while (keep > 0 && t->stack[keep - 1].sp < sp)
        keep--;
    /* a lite frame innermost (top a bit) at or below this point is a callee's, dead; a
     * runtime frame innermost at it is the landing function's own, live (setjmp's first
     * return in a frame the runtime pushed inside a lite frame must not drop that one's bit) */
    uintptr_t csp = PERFGROUP_TLS_CUR.sp;
    int lite_top = t->est_on == PG_EST_LITE && PERFGROUP_TLS_CUR.top < 64;
    int stale = csp != 0 && (lite_top ? csp <= sp : csp < sp);
    if (PG_LIKELY(keep == t->depth && !stale))
        return;
    PG_ERRNO_SAVE();
    struct pg_thread *latch = pg_latch_take();
    if (keep < t->depth)
        perfgroup__resync(t, keep, 0);
    if (t->est_on == PG_EST_LITE)
        PERFGROUP_TLS_CUR.top = pg_top_of(t);
    pg_cur_refresh(t);
    pg_latch_drop(latch);
    PG_ERRNO_RESTORE();
}

/* ---- the module registration: this copy's, or forwarded to the owner -------------------- */

void PERFGROUP_MODULE_REGISTER(uint32_t abi_version, struct perfgroup_site *start,
                               struct perfgroup_site *stop)
{
    perfgroup__init();
    if (perfgroup__owner) { /* registered with the copy that owns the process (owner.c) */
        perfgroup__owner->reg(abi_version, start, stop);
        return;
    }
    perfgroup__register_module(abi_version, start, stop); /* registry.c */
}

/* ---- this copy's mark: its entry points, for another copy to forward to (owner.c) ------- */

/* This copy's own hooks and registration (hidden aliases: never an interposed symbol). */
extern __typeof__(perfgroup__enter_own) perfgroup__enter_own
    __attribute__((alias(PERFGROUP_HOOK_ENTER_NAME)));
extern __typeof__(perfgroup__exit_own) perfgroup__exit_own
    __attribute__((alias(PERFGROUP_HOOK_EXIT_NAME)));
extern __typeof__(perfgroup__register_own) perfgroup__register_own
    __attribute__((alias(PERFGROUP_MODULE_REGISTER_NAME)));

/* Found by the other copies, and by owner.c's election for its own object, through the ELF
 * note below (no symbol: a copy in an executable that exports nothing, or in an add-on loaded
 * RTLD_LOCAL, is found alike; and the election, below this file, names nothing of it).
 * External (hidden) linkage, not static: a static mark whose address never escaped let clang
 * 19 prove no load of this TU reads its state and delete the stores to it. */
PG_HIDDEN struct pg_mark perfgroup__mark = {PG_MARK_MAGIC, PERFGROUP_ABI_VERSION, PG_MARK_NONE, 0,
                                            {perfgroup__enter_own, perfgroup__exit_own,
                                             perfgroup__register_own}};

/* The note: namesz, descsz, type, "perfgroup\0" padded to 4, then the mark's offset from the
 * descriptor (a link-time constant: no relocation at load). */
__asm__(".pushsection .note.perfgroup,\"a\",%note\n"
        ".balign 4\n"
        ".long 10\n"
        ".long 8\n"
        ".long 0x31524750\n"
        ".asciz \"perfgroup\"\n"
        ".balign 4\n"
        ".quad perfgroup__mark - .\n"
        ".popsection\n");

/* perfgroup.h calls the task API's entry points through weak references (they compile to
 * nothing without the runtime), and a weak reference never pulls an object out of an archive:
 * this reference brings tasks.o into every static link that has the hooks. */
PG_HIDDEN void (*const volatile perfgroup__task_anchor)(perfgroup_task *) = perfgroup__task_capture;
