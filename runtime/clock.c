/* SPDX-License-Identifier: MIT */
/*
 * runtime/clock.c — choosing the clocks at start-up and calibrating the cycle counter.
 *
 * The TSC frequency is found without a blocking sleep: CPUID leaf 0x15 (crystal ratio),
 * else leaf 0x16 (base MHz), else the hypervisor's leaf 0x40000010, else /proc/cpuinfo's
 * "cpu MHz" (what a KVM guest reports for the TSC), else 1 GHz. It is then refined from
 * (ticks, CLOCK_MONOTONIC) pairs taken at commit points, once they are >= 50 ms apart, and
 * again each time the stretch since start-up has doubled.
 *
 * A pair is the best of CAL_TRIES sandwiches (counter, clock, counter): the one whose two
 * counter reads are closest, its counter their midpoint, so the pair is off by at most half
 * that gap. One preemption between two reads (a timeslice, milliseconds) skews one try, not
 * the pair; a pair whose best gap is still over CAL_MAX_GAP_NS is not used (the next commit
 * tries again). The frequency is then off by at most (gap0 + gap1) / 2 / stretch: < 2e-4 at
 * 50 ms, less at each doubling (docs/accounting.md, "Error bounds").
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/rseq.h>
#include <stddef.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "internal.h"

PG_HIDDEN uint32_t perfgroup__clock_kind = PGF_CLOCK_MONOTONIC;
PG_HIDDEN uint32_t perfgroup__cpu_kind = 1;
PG_HIDDEN long perfgroup__rseq_cpu_off;
PG_HIDDEN long perfgroup__rseq_cs_off = -1;
PG_HIDDEN uint32_t perfgroup__tsc_scope = PGF_TSC_SCOPE_CPU;
PG_HIDDEN uint32_t perfgroup__cpu_mask = ~0u;

#ifdef PERFGROUP_TESTING
int64_t perfgroup__test_clock_offset;
int64_t perfgroup__test_cpu_override = -1;
struct perfgroup_test_vclock perfgroup__test_vclock;
void (*perfgroup__test_point)(int point);
#endif

PG_HIDDEN _Atomic uint64_t perfgroup__clock_hz_v; /* the frequency (clock.h, pg_clock_hz) */
PG_HIDDEN _Atomic uint64_t perfgroup__clock_conv64, perfgroup__clock_conv;

/* The frequency and the conversions derived from it (clock.h, perfgroup__ticks_to_ns): each one
 * atomic word, stored after the frequency they were computed from. */
PG_HIDDEN void perfgroup__clock_hz_set(uint64_t hz)
{
    atomic_store_explicit(&perfgroup__clock_hz_v, hz, memory_order_relaxed);
    uint64_t conv = 0, conv64 = 0;
    if (hz > 1000000000ull) /* ceil(1e9 * 2^64 / hz) < 2^64 */
        conv64 = (uint64_t)((((unsigned __int128)1000000000u << 64) + hz - 1) / hz);
    if (hz != 0) {
        /* the largest shift whose multiplier, rounded up, stays below 2^57 (>= 2^56: 56 bits
         * kept); rounded up, a whole number of ns converts to itself */
        unsigned s = 97; /* 1e9 < 2^30: 1e9 << 97 fits 128 bits */
        unsigned __int128 m;
        for (;; s--) {
            unsigned __int128 num = (unsigned __int128)1000000000u << s;
            m = num / hz + (num % hz != 0);
            if (m < PG_CONV_MULT_END || s == 0)
                break;
        }
        if (m < PG_CONV_MULT_END)
            conv = ((uint64_t)s << PG_CONV_SHIFT_AT) | (uint64_t)m;
    }
    atomic_store_explicit(&perfgroup__clock_conv, conv, memory_order_relaxed);
    atomic_store_explicit(&perfgroup__clock_conv64, conv64, memory_order_relaxed);
}
static uint64_t cal_ticks0;
static int64_t cal_mono0;
/* the stretch since start-up (ns) from which the next refinement is taken */
static _Atomic int64_t cal_next_ns = 50000000;

#define CAL_TRIES 5
#define CAL_MAX_GAP_NS 10000

/* The best of CAL_TRIES (counter, CLOCK_MONOTONIC, counter) sandwiches: the pair with the
 * smallest counter gap, which it returns (in ticks). */
static uint64_t cal_pair(uint64_t *ticks, int64_t *mono)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < CAL_TRIES; i++) {
        uint64_t t0 = pg_clock_now();
        int64_t m = pg_clock_gettime_ns(CLOCK_MONOTONIC);
        uint64_t t1 = pg_clock_now();
        if (t1 < t0 || t1 - t0 >= best)
            continue;
        best = t1 - t0;
        *ticks = t0 + best / 2;
        *mono = m;
    }
    return best;
}

PG_HIDDEN uint64_t perfgroup__clock_slow(void)
{
    return (uint64_t)pg_clock_gettime_ns(CLOCK_MONOTONIC);
}

PG_HIDDEN uint32_t perfgroup__cpu_slow(void)
{
    if (perfgroup__cpu_kind == 1) {
        int c = sched_getcpu(); /* vDSO getcpu on Linux: no syscall */
        return c < 0 ? 0 : (uint32_t)c;
    }
    return 0; /* PERFGROUP_CPU=none: every CPU check passes */
}

static uint64_t tsc_hz_guess(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    unsigned max = __get_cpuid_max(0, NULL);
    if (max >= 0x15) {
        __cpuid(0x15, a, b, c, d);
        if (a && b && c)
            return (uint64_t)c * b / a;
    }
    if (max >= 0x16) {
        __cpuid(0x16, a, b, c, d);
        if (a)
            return (uint64_t)(a & 0xffff) * 1000000;
    }
    __cpuid(0x40000000, a, b, c, d);
    if (a >= 0x40000010) {
        __cpuid(0x40000010, a, b, c, d);
        if (a)
            return (uint64_t)a * 1000;
    }
    FILE *f = fopen("/proc/cpuinfo", "re");
    if (f) {
        char line[256];
        double mhz = 0;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "cpu MHz : %lf", &mhz) == 1 ||
                sscanf(line, "cpu MHz\t: %lf", &mhz) == 1)
                break;
        fclose(f);
        if (mhz > 100)
            return (uint64_t)(mhz * 1e6);
    }
    return 1000000000ull;
#elif defined(__aarch64__)
    uint64_t f;
    __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
    return f ? f : 1000000000ull;
#else
    return 1000000000ull;
#endif
}

/* Does the first line of `path` equal `want` (or, want_word: hold it as a word)? */
static int file_says(const char *path, const char *want, int word)
{
    char buf[4096];
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    int found = 0;
    while (!found && fgets(buf, sizeof buf, f)) {
        if (!word) {
            buf[strcspn(buf, "\n")] = '\0';
            found = strcmp(buf, want) == 0;
            break;
        }
        for (char *p = strtok(buf, " \t\n:"); p && !found; p = strtok(NULL, " \t\n:"))
            found = strcmp(p, want) == 0;
    }
    fclose(f);
    return found;
}

/*
 * Is a counter interval valid when its two ends were read on different CPUs? The kernel
 * checks the TSCs' synchronisation at boot and on CPU hot-plug, and keeps `tsc` as its
 * clocksource only while they agree (it switches away, "Marking TSC unstable", when they
 * do not): clocksource `tsc` means yes. With another clocksource (kvm-clock, hpet), yes if
 * the TSC is invariant and the kernel calls it reliable (`tsc_reliable`: the hypervisor or
 * platform vouches for synchronisation). Else the same-CPU check stays (Firefox's).
 * PERFGROUP_TSC=cpu forces the check (tests, and anyone who distrusts the machine).
 */
static uint32_t tsc_scope(void)
{
    const char *force = perfgroup__getenv("PERFGROUP_TSC");
    if (force && strcmp(force, "cpu") == 0)
        return PGF_TSC_SCOPE_CPU;
#if defined(__x86_64__) || defined(__i386__)
    if (perfgroup__clock_kind != PGF_CLOCK_TSC)
        return PGF_TSC_SCOPE_KERNEL; /* CLOCK_MONOTONIC: the kernel's own clock */
    if (file_says("/sys/devices/system/clocksource/clocksource0/current_clocksource", "tsc", 0))
        return PGF_TSC_SCOPE_KERNEL;
    if (file_says("/proc/cpuinfo", "tsc_reliable", 1))
        return PGF_TSC_SCOPE_RELIABLE;
    return PGF_TSC_SCOPE_CPU;
#elif defined(__aarch64__)
    /* the generic timer (cntvct_el0) is one system-wide counter */
    return PGF_TSC_SCOPE_KERNEL;
#else
    return PGF_TSC_SCOPE_KERNEL; /* CLOCK_MONOTONIC */
#endif
}

PG_HIDDEN void perfgroup__clock_init(void)
{
    const char *ck = perfgroup__getenv("PERFGROUP_CLOCK");
    int force_mono = ck && strcmp(ck, "monotonic") == 0;
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    int invariant = 0;
    if ((unsigned)__get_cpuid_max(0x80000000, NULL) >= 0x80000007u) {
        __cpuid(0x80000007, a, b, c, d);
        invariant = (d >> 8) & 1;
    }
    perfgroup__clock_kind = (!force_mono && invariant) ? PGF_CLOCK_TSC : PGF_CLOCK_MONOTONIC;
#elif defined(__aarch64__)
    perfgroup__clock_kind = force_mono ? PGF_CLOCK_MONOTONIC : PGF_CLOCK_CNTVCT;
#else
    (void)force_mono;
    perfgroup__clock_kind = PGF_CLOCK_MONOTONIC;
#endif
    perfgroup__clock_hz_set(perfgroup__clock_kind == PGF_CLOCK_MONOTONIC ? 1000000000ull : tsc_hz_guess());
    if (cal_pair(&cal_ticks0, &cal_mono0) == UINT64_MAX) { /* a counter that went back 5 times */
        cal_mono0 = pg_clock_gettime_ns(CLOCK_MONOTONIC);
        cal_ticks0 = pg_clock_now();
    }

    const char *cpu = perfgroup__getenv("PERFGROUP_CPU");
    perfgroup__cpu_kind = 1;
    perfgroup__rseq_cs_off = -1;
    if (cpu && strcmp(cpu, "none") == 0)
        perfgroup__cpu_kind = 2;
    else if (!(cpu && strcmp(cpu, "getcpu") == 0) && __rseq_size >= 16) {
        perfgroup__rseq_cpu_off = (long)__rseq_offset + (long)offsetof(struct rseq, cpu_id);
        perfgroup__rseq_cs_off = (long)__rseq_offset + (long)offsetof(struct rseq, rseq_cs);
        perfgroup__cpu_kind = 0;
    }
    perfgroup__tsc_scope = tsc_scope();
    perfgroup__cpu_mask = perfgroup__tsc_scope == PGF_TSC_SCOPE_CPU ? ~0u : 0u;
}

PG_HIDDEN void perfgroup__clock_calibrate(uint64_t ticks, int64_t mono_ns)
{
    if (perfgroup__clock_kind == PGF_CLOCK_MONOTONIC || PG_TEST_VCLOCK)
        return;
    (void)ticks; /* the caller's pair is one try; the refinement takes its best of several */
    int64_t dns = mono_ns - cal_mono0, next = atomic_load_explicit(&cal_next_ns, memory_order_relaxed);
    if (dns < next)
        return;
    /* one thread refines at each doubling; a pair too skewed to use leaves it to the next call */
    if (!atomic_compare_exchange_strong_explicit(&cal_next_ns, &next, 2 * dns, memory_order_relaxed,
                                                 memory_order_relaxed))
        return;
    uint64_t t;
    int64_t m;
    uint64_t gap = cal_pair(&t, &m);
    uint64_t hz = atomic_load_explicit(&perfgroup__clock_hz_v, memory_order_relaxed);
    if (gap == UINT64_MAX || t <= cal_ticks0 || m <= cal_mono0 ||
        (double)gap * 1e9 / (double)hz > CAL_MAX_GAP_NS) {
        atomic_store_explicit(&cal_next_ns, next, memory_order_relaxed);
        return;
    }
    hz = (uint64_t)((double)(t - cal_ticks0) * 1e9 / (double)(m - cal_mono0));
    perfgroup__clock_hz_set(hz);
}

PG_HIDDEN uint64_t perfgroup__clock_hz(void)
{
    return pg_clock_hz();
}

PG_HIDDEN uint64_t perfgroup__ticks_to_ns_slow(uint64_t ticks)
{
    uint64_t hz = perfgroup__clock_hz();
    if (hz == 1000000000ull)
        return ticks;
    return (uint64_t)((double)ticks * 1e9 / (double)hz);
}

#ifdef PERFGROUP_TESTING
/* The inline conversion, out of line for tests/runtime/test_seam.c. */
uint64_t perfgroup__test_ticks_to_ns(uint64_t ticks);
uint64_t perfgroup__test_ticks_to_ns(uint64_t ticks)
{
    return perfgroup__ticks_to_ns(ticks);
}
#endif
