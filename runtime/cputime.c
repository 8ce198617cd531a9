/* SPDX-License-Identifier: MIT */
/*
 * runtime/cputime.c — a group's CPU time measured, not estimated: the CPU time its thread
 * actually spent while the group's stopwatch ran, with no CPU-clock read in the common case.
 *
 * Every instrumented thread keeps its rseq area's `rseq_cs` pointed at an empty critical
 * section (perfgroup__rseq_cs). The kernel clears that pointer whenever the thread is
 * scheduled out (preempted or blocked), migrated or handed a signal. So:
 *   - a hook that reads the counter and then finds the pointer still set knows the thread
 *     ran on its CPU all along since the last reading: every counter tick since is CPU time;
 *   - a hook that finds it cleared (pg_descheduled, one load) calls perfgroup__cputime_settle:
 *     re-arm, read the thread's CPU clock, read the counter. The off-CPU time since the last
 *     reading is (counter ticks since) - (CPU time since). It fell while every stopwatch now
 *     on the shadow stack was running (one that ended since would have settled it at its
 *     exit; one that started since, at its enter), so it is added to each of their groups'
 *     off-CPU ticks for the event (pg_thread.goff), and to the thread's running total
 *     `t->off` (implicit events); the hook uses the counter read after the CPU clock as its
 *     own "now". A deschedule happens at most every few ms of a busy thread (or once per
 *     blocking call): about one CPU-clock read per deschedule, and one walk of the stack.
 * At commit a group is charged its counter ticks (wall) and its off-CPU ticks: CPU = wall -
 * off, blocked = off, both exact. The hooks' fast path does nothing for it but the load and
 * compare. Why exact: every deschedule before a hook's counter read is settled at that hook
 * (the pointer is read after the counter; a deschedule between the two is settled too, and
 * the hook then takes the counter read after the settling as its time), and a settling
 * re-arms before it reads the CPU clock, so a deschedule during or after that read is seen
 * by the next hook. Errors of one reading's pairing of the two clocks telescope between
 * neighbouring stretches. Where counter intervals are not valid across CPUs, a settling that
 * finds the thread on another CPU attributes nothing: every stopwatch live across it ends
 * on another CPU than it started on and is discarded (internal.h, pg_charge_frame).
 *
 * Threads without rseq (PERFGROUP_CPU=getcpu|none, glibc < 2.35, a failed registration)
 * are not `measured`: their groups get the event's CPU time shared by stopwatch cycles, and
 * implicit events the sampler's estimate (implicit.c) — the recording's header says which
 * (pgf_file_header.cpu_time).
 *
 * The kernel validates an armed rseq_cs at every return to user space after a preemption,
 * migration or signal: version 0, abort_ip outside [start_ip, start_ip + post_commit_offset)
 * and the registration's signature at abort_ip - 4 (a mismatch is a SIGSEGV). The section is
 * empty, so the kernel never aborts into it: it only clears the pointer.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <sys/rseq.h>

#include "internal.h"

static const uint32_t pg_rseq_sig[2] = {RSEQ_SIG, 0};
/* struct rseq_cs {u32 version, u32 flags, u64 start_ip, u64 post_commit_offset, u64 abort_ip} */
PG_HIDDEN uint64_t perfgroup__rseq_cs[4] __attribute__((aligned(32)));
_Static_assert(sizeof(struct rseq_cs) == sizeof perfgroup__rseq_cs, "struct rseq_cs");

static inline volatile uint64_t *rseq_cs_slot(void)
{
    return (volatile uint64_t *)((char *)__builtin_thread_pointer() + perfgroup__rseq_cs_off);
}

static inline void arm(void)
{
#ifdef PERFGROUP_TESTING
    if (perfgroup__test_vclock.on) {
        perfgroup__test_vclock.desched = 0;
        return;
    }
#endif
    *rseq_cs_slot() = (uint64_t)(uintptr_t)perfgroup__rseq_cs;
}

PG_HIDDEN uint64_t perfgroup__cpu_read_ns;

PG_HIDDEN void perfgroup__cputime_init(void)
{
    /* the cost of one CPU-clock read (a system call), the least of 8: an explicit event's
     * two readings each hold part of one, which its counter interval does not (commit) */
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 8; i++) {
        uint64_t a = pg_clock_now();
        (void)pg_clock_gettime_ns(CLOCK_THREAD_CPUTIME_ID);
        uint64_t b = pg_clock_now();
        if (b > a && b - a < best)
            best = b - a;
    }
    perfgroup__cpu_read_ns = best == UINT64_MAX ? 0 : perfgroup__ticks_to_ns(best);
    struct rseq_cs *cs = (struct rseq_cs *)perfgroup__rseq_cs;
    cs->version = 0;
    cs->flags = 0;
    cs->start_ip = (uint64_t)(uintptr_t)&perfgroup__cputime_init;
    cs->post_commit_offset = 0;
    cs->abort_ip = (uint64_t)(uintptr_t)&pg_rseq_sig[1];
}

/* The off-CPU ticks `off` fell while every stopwatch on the shadow stack ran: add them to
 * its groups (each group has one live stopwatch per iteration at most). */
static void attribute(struct pg_thread *t, uint64_t off)
{
    /* the innermost acquiring frame's groups: off their self time too (none: the event's) */
    uint32_t inner = t->depth;
    while (inner > 0 && (!t->stack[inner - 1].mask || t->stack[inner - 1].iter != t->iter))
        inner--;
    int lite = t->est_on == PG_EST_LITE; /* the hot part's self times are its segments' */
    if (inner == 0 && !lite)
        t->ev_inner += off;
    for (uint32_t i = 0; i < t->depth; i++) {
        const struct pg_frame *f = &t->stack[i];
        if (!f->mask || f->iter != t->iter)
            continue; /* stale: never charged */
        for (unsigned j = 0; j < f->fn->ngroups; j++) {
            if (!(f->mask & (1u << j)))
                continue;
            uint32_t gid = f->fn->gid[j];
            struct pg_gstate *s = &t->sw[gid];
            if (f->lite && (__atomic_load_n(&f->fn->gbit[j], __ATOMIC_RELAXED) & f->bits))
                continue; /* segment-accounted: its segments are on-CPU time */
            t->goff[gid] += off;
            if (i + 1 == inner && !f->lite)
                s->self -= off; /* modulo 2^64: commit() clamps it */
            pg_stamp(t, s, gid, f); /* joins the event's list, as pg_charge does */
        }
    }
}

/* One more reading (cpu ns at counter `now`): the off-CPU ticks since the last one. */
static void settle_from(struct pg_thread *t, uint64_t now, int64_t cpu)
{
    if (cpu <= 0)
        return; /* not readable: the off-CPU time goes to the next reading */
    int64_t wall = (int64_t)(now - t->m_tsc);
    if (wall >= 0) {
        double hz = (double)perfgroup__clock_hz();
        int64_t on = (int64_t)((double)(cpu - t->m_cpu) * hz / 1e9);
        uint64_t off = (uint64_t)(wall - on); /* may be a little < 0: it telescopes */
        t->off += off;
        int moved = 0;
        if (perfgroup__cpu_mask) { /* the same-CPU check applies */
            uint32_t id = pg_cpu_now();
            moved = id != t->m_cpu_id;
            t->m_cpu_id = id;
        }
        if (off && !moved)
            attribute(t, off);
    }
    t->m_tsc = now;
    t->m_cpu = cpu;
}

PG_HIDDEN void perfgroup__cputime_anchor(struct pg_thread *t)
{
    if (t->measured)
        arm();
    t->m_cpu = pg_clock_gettime_ns(CLOCK_THREAD_CPUTIME_ID);
    t->m_tsc = pg_clock_now();
    t->m_cpu_id = pg_cpu_now();
}

PG_HIDDEN void perfgroup__cputime_thread_start(struct pg_thread *t)
{
    t->off = 0;
    t->measured = 0;
#if defined(__x86_64__) || defined(__aarch64__)
    if (perfgroup__rseq_cs_off >= 0) {
        /* registered for this thread? (cpu_id is -1 before, -2 if registration failed) */
        volatile int32_t *cpu_id = (volatile int32_t *)((char *)__builtin_thread_pointer() +
                                                        perfgroup__rseq_cpu_off);
        t->measured = *cpu_id >= 0;
    }
#endif
    if (PG_TEST_VCLOCK)
        t->measured = 1;
    perfgroup__cputime_anchor(t);
}

PG_HIDDEN void perfgroup__cputime_thread_end(struct pg_thread *t)
{
    if (t->measured && !PG_TEST_VCLOCK && *rseq_cs_slot() == (uint64_t)(uintptr_t)perfgroup__rseq_cs)
        *rseq_cs_slot() = 0;
    t->measured = 0;
}

/* Another library's rseq critical sections (a per-CPU allocator) leave their own descriptor
 * in rseq_cs: the hooks then cannot tell a deschedule. Re-armed, and read at most once per
 * FOREIGN_MIN_NS, so such a program pays a bounded cost (the off-CPU time of a deschedule
 * not read at once goes to the next reading: docs/accounting.md, known limits). */
#define FOREIGN_MIN_NS 100000u

PG_HIDDEN uint64_t perfgroup__cputime_settle(struct pg_thread *t, uint64_t tsc)
{
    if (!t->measured)
        return tsc;
    uint64_t was = PG_TEST_VCLOCK ? 0 : *rseq_cs_slot();
    if (PG_UNLIKELY(was != 0 && was != (uint64_t)(uintptr_t)perfgroup__rseq_cs) &&
        perfgroup__ticks_to_ns(tsc - t->m_tsc) < FOREIGN_MIN_NS && (int64_t)(tsc - t->m_tsc) >= 0) {
        arm();
        return tsc;
    }
    arm(); /* first: a deschedule from here on is seen by the next hook */
    int64_t cpu = pg_clock_gettime_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t now = pg_clock_now();
    settle_from(t, now, cpu);
    /* programs that never call the event API refine the counter's frequency here too */
    perfgroup__clock_calibrate(now, pg_clock_gettime_ns(CLOCK_MONOTONIC));
    return now;
}

PG_HIDDEN int64_t perfgroup__cputime_read(struct pg_thread *t, uint64_t *tsc)
{
    if (t->measured)
        arm();
    int64_t cpu = pg_clock_gettime_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t now = pg_clock_now();
    if (t->measured)
        settle_from(t, now, cpu);
    *tsc = now;
    return cpu;
}

