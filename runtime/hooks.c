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
#include <stdlib.h>

#include "internal.h"

#define PG_ALWAYS_INLINE inline __attribute__((always_inline))
/* PROTOTYPE (abi3): lite transitions between two through the hooks (PERFGROUP_LITE_R, 0: off) */
PG_HIDDEN uint64_t perfgroup__lite_r;
__attribute__((constructor)) static void lite_r_init(void)
{
    const char *e = getenv("PERFGROUP_LITE_R");
    perfgroup__lite_r = e ? strtoull(e, NULL, 10) : 0;
}
#define PG_TOKEN_NO_FRAME 0xffffffffull /* index 0xfffffffe: never a frame's */

/* A hook leaves errno as it found it (the code around a call site may be between a failing
 * call and its check, or a signal handler's): every cold path, the only ones that may reach
 * a syscall or libc, saves it on entry and restores it on return. */
#define PG_ERRNO_SAVE() const int pg_errno_ = errno
#define PG_ERRNO_RESTORE() (errno = pg_errno_)

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
static uint64_t enter_window(struct pg_thread *t, struct pg_func *fn, uintptr_t sp,
                             uintptr_t ra, unsigned mask, uint32_t d, uint64_t tsc);
static uint64_t enter_sampled(struct pg_thread *t, struct pg_func *fn, uintptr_t sp,
                              uintptr_t ra, unsigned mask, uint32_t d, struct pg_gstate *s0);
static uint64_t enter_ticked(struct pg_thread *t, struct pg_func *fn, uintptr_t sp,
                             uintptr_t ra, unsigned mask, uint32_t d, uint64_t tick);

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
    for (unsigned i = 0; i < fn->ngroups; i++)
        if (mask & (1u << i))
            bits |= __atomic_load_n(&fn->gbit[i], __ATOMIC_RELAXED);
    f->bits = bits;
    f->cpu = cpu;
    /* the token from a register: reloaded after the stores below (the compiler cannot tell
     * them apart), enter_prepare's copy read f->gen with a load wider than its store (a
     * store-forwarding stall; 17 % of its perf samples sat just after it on an Intel Xeon
     * host, though bench_hooks showed no change within its noise) */
    uint16_t gen = ++t->gen;
    f->gen = gen;
    f->mask = (uint8_t)mask;
    t->depth = d + 1;
    /* the groups it started run now: calls of functions whose groups all run skip */
    pg_cur_on(PERFGROUP_TLS_CUR.mask | bits, sp);
    return ((uint64_t)gen << 32) | (d + 1);
}

/*
 * hot = 1: the hook's fast path. It makes no call but tail calls (a call would make every
 * hook save and restore registers): clocks are read inline (the gate guarantees
 * pg_clocks_fast()), and a skipped exit to resynchronise or an implicit event to begin
 * goes to enter_prepare, which comes back here with hot = 0.
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
        perfgroup__implicit_begin(t, begun = pg_clock_settled(t));

    uint64_t iter = t->iter;
    struct pg_gstate *g = t->sw;
    unsigned mask = 0;
    for (unsigned i = 0; i < fn->ngroups; i++) {
        if ((act & (1u << i)) && root) {
            mask |= 1u << i;
        } else if (act & (1u << i)) {
            struct pg_gstate *s = &g[fn->gid[i]];
            if (s->running != iter) {
                s->running = iter;
                mask |= 1u << i;
            }
        }
    }
    if ((mask == 0 || root) && PG_LIKELY(perfgroup__rec_mode_now() != PGF_MODE_TRACE))
        return 0; /* re-entry: every group already has its stopwatch (or a root) */

    if (PG_UNLIKELY(d >= PG_STACK_MAX)) {
        for (unsigned i = 0; i < fn->ngroups; i++)
            if (mask & (1u << i))
                g[fn->gid[i]].running = 0;
        t->ov_dropped++;
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
            PERFGROUP_TLS_CUR.left = perfgroup__lite_r; /* PROTOTYPE (abi3) */
            /* a tick since the thread's last start that read the counter: the stretch
             * since its newest reading may be long — read it (ticker.c) */
            uint64_t tk = atomic_load_explicit(&perfgroup__tick, memory_order_relaxed);
            if (PG_UNLIKELY(tk != t->est_tick))
                return enter_ticked(t, fn, sp, ra, mask, d, tk);
            struct pg_gstate *s0 = &g[fn->gid[__builtin_ctz(mask)]];
            if (PG_LIKELY(s0->est_left > 1)) {
                s0->est_left--;
                return push_frame(t, fn, sp, ra, mask, d, t->last_tsc, pg_cpu_fast());
            }
            return enter_sampled(t, fn, sp, ra, mask, d, s0);
        }
        uint64_t tsc = pg_clock_fast();
        if (PG_UNLIKELY(pg_descheduled_fast()))
            return enter_settle(t, fn, sp, ra, mask, d);
        if (PG_UNLIKELY(--t->est_left == 0)) /* the end of a rate window */
            return enter_window(t, fn, sp, ra, mask, d, tsc);
        return push_frame(t, fn, sp, ra, mask, d, tsc, pg_cpu_fast());
    }
    /* one reading for the event's begin and its stopwatch's start (a deschedule since is
     * settled at the next reading, inside both) */
    uint64_t tsc = begun;
    if (!begun) {
        tsc = pg_clock_now();
        if (pg_descheduled())
            tsc = perfgroup__cputime_settle(t, tsc);
    }
    uint64_t token = push_frame(t, fn, sp, ra, mask, d, tsc, pg_cpu_now());
    if (root) {
        t->stack[d].iter = 0;
        t->stack[d].bits = 0; /* it started nothing */
        pg_cur_refresh(t);    /* no event: nothing to skip */
    }
    return token;
}

/* The enter hook found the thread descheduled: settle, then start the stopwatch after. */
static PG_COLD uint64_t enter_settle(struct pg_thread *t, struct pg_func *fn, uintptr_t sp,
                                     uintptr_t ra, unsigned mask, uint32_t d)
{
    PG_ERRNO_SAVE();
    struct pg_thread *latch = pg_latch_take();
    uint64_t tsc = perfgroup__cputime_settle(t, pg_clock_now());
    uint64_t token = push_frame(t, fn, sp, ra, mask, d, tsc, pg_cpu_now());
    pg_latch_drop(latch);
    PG_ERRNO_RESTORE();
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

/* The event's PG_EST_WINDOW-th exact start since the window began (the event's begin or the
 * previous window's end): faster than one per PG_EST_HOT_NS, the event estimates its starts
 * from here on (adaptive mode, not trace mode); else a new window. Under the latch. */
static PG_COLD uint64_t enter_window(struct pg_thread *t, struct pg_func *fn, uintptr_t sp,
                                     uintptr_t ra, unsigned mask, uint32_t d, uint64_t tsc)
{
    uint64_t from = t->est_win ? t->est_win : t->event_begin_tsc;
    double hot = (double)PG_EST_WINDOW * PG_EST_HOT_NS * 1e-9 * (double)perfgroup__clock_hz();
    if (perfgroup__est_window != 0 && (double)(tsc - from) < hot &&
        perfgroup__rec_mode_now() != PGF_MODE_TRACE) {
        t->est_on = 1;
        PERFGROUP_TLS_CUR.left = perfgroup__lite_r; /* PROTOTYPE (abi3) */
        uint64_t tk = atomic_load_explicit(&perfgroup__tick, memory_order_relaxed);
        t->est_tick = (tk & 1) ? 0 : tk; /* the counter was just read */
        atomic_fetch_add_explicit(&perfgroup__estimated, 1, memory_order_relaxed);
    } else {
        t->est_left = perfgroup__est_window != 0 ? perfgroup__est_window : UINT32_MAX;
        t->est_win = tsc;
    }
    return push_frame(t, fn, sp, ra, mask, d, tsc, pg_cpu_fast());
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
 * nothing: one start per group and thread. Under the latch (enter_acquire's).
 */
static __attribute__((noinline)) uint64_t enter_sampled(struct pg_thread *t, struct pg_func *fn,
                                                        uintptr_t sp, uintptr_t ra,
                                                        unsigned mask, uint32_t d,
                                                        struct pg_gstate *s0)
{
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
    return token;
}

/*
 * An estimating event's start that found the coarse clock ticked (or not running: an odd
 * word) since its thread's last start that read the counter: an exact start, outside the
 * estimate's sampling cycles (the stretch since the newest reading may hold a tick: a long
 * one is never estimated). It tells the ticker a thread looks (ticker.c). Under the latch.
 */
static __attribute__((noinline)) uint64_t enter_ticked(struct pg_thread *t, struct pg_func *fn,
                                                       uintptr_t sp, uintptr_t ra,
                                                       unsigned mask, uint32_t d, uint64_t tick)
{
    t->est_tick = (tick & 1) ? 0 : tick;
    if (!atomic_load_explicit(&perfgroup__tick_used, memory_order_relaxed))
        atomic_store_explicit(&perfgroup__tick_used, 1, memory_order_relaxed);
    uint64_t tsc = pg_clock_fast();
    if (PG_UNLIKELY(pg_descheduled_fast()))
        return enter_settle(t, fn, sp, ra, mask, d);
    return push_frame(t, fn, sp, ra, mask, d, tsc, pg_cpu_fast());
}

/* Out of the fast path: frames to drop, or an implicit event to begin. */
static PG_COLD uint64_t enter_prepare(struct pg_thread *t, struct pg_func *fn, uintptr_t sp,
                                      uintptr_t ra)
{
    PG_ERRNO_SAVE();
    struct pg_thread *latch = pg_latch_take();
    uint64_t token = enter_fast(t, fn, sp, ra, 0);
    pg_latch_drop(latch);
    PG_ERRNO_RESTORE();
    return token;
}

/* The exit hook's fast path ended an implicit event's frame: the commit, under the hook's
 * latch, which is dropped after it (tail-called: the fast path saves no register for it). */
static PG_COLD void exit_implicit_end(struct pg_thread *t, uint64_t tsc)
{
    PG_ERRNO_SAVE();
    perfgroup__implicit_end(t, tsc); /* its commit turns the re-entry key off */
    pg_latch_drop(t);
    PG_ERRNO_RESTORE();
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
    pg_frame_end(t, idx, tsc, hot ? pg_cpu_fast() : pg_cpu_now()); /* charged, if current */
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
    pg_cur_on(running, idx != 0 && t->event_open != PG_EV_NONE ? t->stack[idx - 1].sp : 0);
    if (hot)
        pg_latch_drop(t);
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
        if (idx + 1 != t->depth)
            perfgroup__resync(t, idx + 1, tsc); /* frames above ours skipped their exits */
        exit_frame(t, idx, tsc, 0, perfgroup__rec_mode_now() == PGF_MODE_TRACE);
    }
    PG_TEST_POINT(12);
    pg_cur_refresh(t);
    pg_latch_drop(latch);
    PG_ERRNO_RESTORE();
}


/* The enter hook's own CFA (the caller's stack pointer at the call) and return address:
 * the same on every path through the hook, whatever the hook's own frame looks like. */
#define HOOK_SP() ((uintptr_t)__builtin_dwarf_cfa())
#define HOOK_RA() ((uintptr_t)__builtin_return_address(0))

/*
 * A re-entry, decided read-only: no dead frame on top, no event to begin, every active group
 * of fn already running in this iteration, not trace mode. Exactly the case in which
 * enter_fast(hot = 1) returns 0 without a write; anything else goes there.
 */
static PG_ALWAYS_INLINE int is_reentry(const struct pg_thread *t, const struct pg_func *fn,
                                       uintptr_t sp, uintptr_t ra)
{
    uint32_t d = t->depth;
    if (d != 0 && frame_dead(&t->stack[d - 1], sp, ra))
        return 0;
    unsigned act = atomic_load_explicit(&fn->active_mask, memory_order_relaxed);
    if (t->event_open == PG_EV_NONE && act != 0)
        return 0;
    uint64_t iter = t->iter;
    for (unsigned i = 0; i < fn->ngroups; i++)
        if ((act & (1u << i)) && t->sw[fn->gid[i]].running != iter)
            return 0;
    return PG_LIKELY(perfgroup__rec_mode_now() != PGF_MODE_TRACE);
}

/* Everything but a re-entry: tail-called, so the re-entry path above saves no register.
 * Under the thread's latch (as the exit hook's fast path): a signal handler's hooks that
 * land while this one writes the shadow stack and the groups' state are refused and
 * counted, never interleaved with it (the re-entry path writes nothing: it needs none). */
static __attribute__((noinline)) uint64_t enter_acquire(struct pg_thread *t, struct pg_func *fn,
                                                        uintptr_t sp, uintptr_t ra)
{
    pg_latch_hold();
    uint64_t token = enter_fast(t, fn, sp, ra, 1);
    pg_latch_drop(t);
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
    if (PG_LIKELY(is_reentry(t, fn, sp, ra)))
        return 0;
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
    exit_frame(t, idx, tsc, 1, trace);
}

/* PROTOTYPE (abi3): a lite frame's exit with no lite transition left: its state restored (sp
 * last), the countdown reloaded. */
void __perfgroup_exit_lite(struct perfgroup_site *site, uint64_t mask, uintptr_t sp, uint64_t top)
{
    (void)site;
    PERFGROUP_TLS_CUR.left = perfgroup__lite_r;
    PERFGROUP_TLS_CUR.top = top;
    pg_cur_on(mask, sp);
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
