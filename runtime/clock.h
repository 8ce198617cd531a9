/* SPDX-License-Identifier: MIT */
/*
 * runtime/clock.h — the clocks the hot path reads: a cycle counter and the current CPU.
 *
 *   pg_clock_now()  x86_64: rdtsc (not rdtscp: 43 ns vs 21 ns a pair on the reference VM);
 *                   aarch64: cntvct_el0; elsewhere, or when forced: CLOCK_MONOTONIC in ns.
 *   pg_cpu_now()    glibc >= 2.35 registers rseq: its cpu_id is a plain thread-local load
 *                   at __rseq_offset from the thread pointer. Fallback: sched_getcpu().
 *
 * Fallbacks are chosen once at start-up (perfgroup__clock_init) and can be forced with
 * PERFGROUP_CLOCK=monotonic and PERFGROUP_CPU=getcpu|none, so tests exercise them.
 * Builds with PERFGROUP_TESTING add a seam: an offset added to the clock and an override of
 * the CPU id, so tests can inject a CPU change or a backwards counter (see test_seam.c).
 */
#ifndef PERFGROUP_RUNTIME_CLOCK_H
#define PERFGROUP_RUNTIME_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include "base.h"
#include "perfgroup/format.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif


/* PGF_CLOCK_TSC / PGF_CLOCK_CNTVCT / PGF_CLOCK_MONOTONIC: what pg_clock_now() returns. */
extern PG_HIDDEN uint32_t perfgroup__clock_kind;
/* 0: rseq cpu_id; 1: sched_getcpu(); 2: none (every CPU check passes). */
extern PG_HIDDEN uint32_t perfgroup__cpu_kind;
extern PG_HIDDEN long perfgroup__rseq_cpu_off; /* __rseq_offset + offsetof(cpu_id) */
/* __rseq_offset + offsetof(rseq_cs): the thread's "descheduled" pointer (cputime.c); set
 * whenever perfgroup__cpu_kind == 0, < 0 otherwise. */
extern PG_HIDDEN long perfgroup__rseq_cs_off;
/* The empty critical section an armed thread's rseq_cs points at (cputime.c). */
extern PG_HIDDEN uint64_t perfgroup__rseq_cs[4]; /* a struct rseq_cs */
/* Are counter intervals valid across CPUs? PGF_TSC_SCOPE_*: what perfgroup__clock_init
 * found; perfgroup__cpu_mask is 0 where they are (no same-CPU check), ~0 where not. */
extern PG_HIDDEN uint32_t perfgroup__tsc_scope;
extern PG_HIDDEN uint32_t perfgroup__cpu_mask;

#ifdef PERFGROUP_TESTING
extern int64_t perfgroup__test_clock_offset;
extern int64_t perfgroup__test_cpu_override; /* < 0: none */
#define PG_TEST_CLOCK_ADJ(v) ((v) + (uint64_t)perfgroup__test_clock_offset)
/* The virtual clock (tests/runtime/test_model.c): while `on`, the counter reads `tsc`, the
 * thread's CPU clock `cpu_ns`, the counter runs at `hz` (never recalibrated), the thread is
 * "descheduled" while `desched` is set (a settling's re-arm clears it) and is measured
 * whether or not rseq is registered. One thread per process drives it. */
struct perfgroup_test_vclock {
    int on, desched;
    uint64_t tsc, hz;
    int64_t cpu_ns;
};
extern struct perfgroup_test_vclock perfgroup__test_vclock;
#define PG_TEST_VCLOCK (perfgroup__test_vclock.on)
#else
#define PG_TEST_CLOCK_ADJ(v) (v)
#define PG_TEST_VCLOCK 0
#endif

PG_HIDDEN uint64_t perfgroup__clock_slow(void);
PG_HIDDEN uint32_t perfgroup__cpu_slow(void);
PG_HIDDEN void perfgroup__clock_init(void);
/* Ticks per second of pg_clock_now(), best current estimate; pg_clock_hz() inline (a
 * recorded commit asks for it twice: the thread-name check and the clock pair's). */
PG_HIDDEN uint64_t perfgroup__clock_hz(void);
extern PG_HIDDEN _Atomic uint64_t perfgroup__clock_hz_v;
static inline uint64_t pg_clock_hz(void)
{
#ifdef PERFGROUP_TESTING
    if (perfgroup__test_vclock.on)
        return perfgroup__test_vclock.hz;
#endif
    return atomic_load_explicit(&perfgroup__clock_hz_v, memory_order_relaxed);
}
/* Refine the estimate, called at commits with the caller's (ticks, CLOCK_MONOTONIC): cheap
 * (a compare) except when the stretch since start-up has doubled, where it takes its own
 * best-of-5 sandwiched pair (clock.c). */
PG_HIDDEN void perfgroup__clock_calibrate(uint64_t ticks, int64_t mono_ns);
/* Ticks to nanoseconds with the current estimate: a multiply and a shift (a commit converts
 * ~6 intervals; a double divide each was a quarter of an implicit event's cost over a hook
 * pair on an Intel Xeon host, docs/benchmarks.md). A counter faster than 1 GHz (x86's TSC):
 * perfgroup__clock_conv64 = ceil(1e9 * 2^64 / hz), the product's high half. Else
 * perfgroup__clock_conv = s << 57 | ceil(1e9 * 2^s / hz), that multiplier in [2^56, 2^57).
 * Either gives the quotient or 1 ns above it, for any interval under ~10^7 s, and a whole
 * number of ns exactly (tests/runtime/test_seam.c); 0 before the clock is set up (then, and
 * under the test clock, the divide). */
#define PG_CONV_SHIFT_AT 57u
#define PG_CONV_MULT_END (1ull << PG_CONV_SHIFT_AT)
extern PG_HIDDEN _Atomic uint64_t perfgroup__clock_conv64, perfgroup__clock_conv;
PG_HIDDEN uint64_t perfgroup__ticks_to_ns_slow(uint64_t ticks);
static inline uint64_t perfgroup__ticks_to_ns(uint64_t ticks)
{
    uint64_t c64 = atomic_load_explicit(&perfgroup__clock_conv64, memory_order_relaxed);
    if (PG_LIKELY(c64 != 0 && !PG_TEST_VCLOCK))
        return (uint64_t)(((unsigned __int128)ticks * c64) >> 64);
    uint64_t conv = atomic_load_explicit(&perfgroup__clock_conv, memory_order_relaxed);
    if (PG_UNLIKELY(conv == 0 || PG_TEST_VCLOCK))
        return perfgroup__ticks_to_ns_slow(ticks);
    return (uint64_t)(((unsigned __int128)ticks * (conv & (PG_CONV_MULT_END - 1))) >>
                      (conv >> PG_CONV_SHIFT_AT));
}
/* The frequency and its conversion (calibration; tests). */
PG_HIDDEN void perfgroup__clock_hz_set(uint64_t hz);

/*
 * The hooks' fast path reads the clocks through these: no branch and no call, because the
 * gate sends every hook through the slow path (PG_GATE_SPECIAL) unless pg_clocks_fast().
 * A call anywhere on the fast path would make the hook save registers on every call.
 */
static inline int pg_clocks_fast(void)
{
#if defined(PERFGROUP_TESTING)
    return 0; /* the test seam goes through pg_clock_now / pg_cpu_now */
#elif defined(__x86_64__)
    return perfgroup__clock_kind == PGF_CLOCK_TSC && perfgroup__cpu_kind == 0;
#elif defined(__aarch64__)
    return perfgroup__clock_kind == PGF_CLOCK_CNTVCT && perfgroup__cpu_kind == 0;
#else
    return 0;
#endif
}

static inline uint64_t pg_clock_fast(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return perfgroup__clock_slow();
#endif
}

static inline uint32_t pg_cpu_fast(void)
{
#if defined(__x86_64__)
    /* rseq area of this thread: %fs-relative, no syscall, no fence needed (a stale value
     * only makes a migration during the stopwatch go unnoticed, as in Firefox). */
    uint32_t cpu;
    __asm__ __volatile__("movl %%fs:(%1), %0" : "=r"(cpu) : "r"(perfgroup__rseq_cpu_off));
    return cpu;
#elif defined(__aarch64__)
    char *tp = (char *)__builtin_thread_pointer();
    return *(volatile uint32_t *)(tp + perfgroup__rseq_cpu_off);
#else
    return perfgroup__cpu_slow();
#endif
}

/* The thread's rseq_cs no longer points at ours: the kernel cleared it because the thread
 * was scheduled out (preempted or blocked), migrated or handed a signal since it was armed
 * — or it was never armed (a thread without rseq: always "descheduled"). One load. */
static inline int pg_descheduled_fast(void)
{
#if defined(__x86_64__)
    uint64_t v;
    __asm__ __volatile__("movq %%fs:(%1), %0" : "=r"(v) : "r"(perfgroup__rseq_cs_off));
    return v != (uint64_t)(uintptr_t)perfgroup__rseq_cs;
#elif defined(__aarch64__)
    char *tp = (char *)__builtin_thread_pointer();
    return *(volatile uint64_t *)(tp + perfgroup__rseq_cs_off) !=
           (uint64_t)(uintptr_t)perfgroup__rseq_cs;
#else
    return 1;
#endif
}

static inline int pg_descheduled(void)
{
#ifdef PERFGROUP_TESTING
    if (perfgroup__test_vclock.on)
        return perfgroup__test_vclock.desched;
#endif
#if defined(__x86_64__) || defined(__aarch64__)
    if (PG_LIKELY(perfgroup__rseq_cs_off >= 0))
        return pg_descheduled_fast();
#endif
    return 1;
}

static inline uint64_t pg_clock_now(void)
{
#ifdef PERFGROUP_TESTING
    if (perfgroup__test_vclock.on)
        return perfgroup__test_vclock.tsc;
#endif
#if defined(__x86_64__) || defined(__i386__)
    if (PG_LIKELY(perfgroup__clock_kind == PGF_CLOCK_TSC))
        return PG_TEST_CLOCK_ADJ(pg_clock_fast());
#elif defined(__aarch64__)
    if (PG_LIKELY(perfgroup__clock_kind == PGF_CLOCK_CNTVCT))
        return PG_TEST_CLOCK_ADJ(pg_clock_fast());
#endif
    return PG_TEST_CLOCK_ADJ(perfgroup__clock_slow());
}

static inline uint32_t pg_cpu_now(void)
{
#ifdef PERFGROUP_TESTING
    if (perfgroup__test_cpu_override >= 0)
        return (uint32_t)perfgroup__test_cpu_override;
#endif
#if defined(__x86_64__) || defined(__aarch64__)
    if (PG_LIKELY(perfgroup__cpu_kind == 0))
        return pg_cpu_fast();
#endif
    return perfgroup__cpu_slow();
}


static inline int64_t pg_clock_gettime_ns(clockid_t id)
{
#ifdef PERFGROUP_TESTING
    if (perfgroup__test_vclock.on && id == CLOCK_THREAD_CPUTIME_ID)
        return perfgroup__test_vclock.cpu_ns;
#endif
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif /* PERFGROUP_RUNTIME_CLOCK_H */
