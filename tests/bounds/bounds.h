/* SPDX-License-Identifier: MIT */
/*
 * tests/bounds/bounds.h — the bound of every CPU/time assertion of the C tests, from the
 * error model of docs/accounting.md ("Error bounds: what a test may assume"), per
 * configuration: CPU time measured (rseq) or estimated (PERFGROUP_CPU=getcpu|none, no rseq),
 * the sampler's period (PERFGROUP_SAMPLE_MS), and what the test observed of its own thread
 * (off-CPU time, involuntary context switches). bounds.py holds the same formulas for the
 * Python tests; a change here is a change there and in the page.
 *
 * Use: take pg_obs_now() around the stretch a group was charged for, then
 *     PG_ASSERT_WITHIN(charged, truth, pg_bound_measured(&cfg, truth, &o0, &o1));
 * which prints the value, the truth, the bound and its terms when it fails.
 */
#ifndef PERFGROUP_TEST_BOUNDS_H
#define PERFGROUP_TEST_BOUNDS_H

/* needs _GNU_SOURCE, defined by the test before any include (RUSAGE_THREAD) */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/rseq.h>
#include <time.h>
#include <unistd.h>

#define PG_BOUND_MS 1000000ll

/* The constants of docs/accounting.md, "Error bounds". */
/* the counter's frequency before its first refinement (a process's first 50 ms): the
 * CPUID/hypervisor/cpuinfo figure, nominal; relative */
#define PG_BOUND_FREQ 0.02
/* the hooks' own work between a test's reading of the reference clocks and the hook's
 * counter read, per end of a stretch (one CPU-clock read at most, ~600 ns; x10 under the
 * sanitizers), with room */
#define PG_BOUND_HOOK_NS (50 * 1000ll)
/* the reference itself: a thread's CPU clock steps at a preemption on a VM (150 us of CPU
 * in 8 us of wall seen, made up later), per involuntary context switch in the stretch */
#define PG_BOUND_STEP_NS (100 * 1000ll)

/* The configuration of this process, as the runtime chose it from the same inputs. */
struct pg_cfg {
    int measured;       /* CPU time measured at the hooks (rseq), else estimated */
    int64_t period_ns;  /* the sampler's period; 0: no sampler (PERFGROUP_SAMPLE_MS=0) */
};

static inline struct pg_cfg pg_cfg_now(void)
{
    struct pg_cfg c;
    const char *cpu = getenv("PERFGROUP_CPU");
    c.measured = __rseq_size >= 16 && !(cpu && (strcmp(cpu, "getcpu") == 0 || strcmp(cpu, "none") == 0));
    const char *ms = getenv("PERFGROUP_SAMPLE_MS");
    c.period_ns = (ms && *ms ? strtoll(ms, NULL, 10) : 10) * PG_BOUND_MS;
    return c;
}

/* What the test sees of its own thread: wall (CLOCK_MONOTONIC), CPU (the thread's CPU clock
 * through pthread_getcpuclockid's id, which a test counting CLOCK_THREAD_CPUTIME_ID reads
 * does not count), involuntary context switches (getrusage(RUSAGE_THREAD)), the stolen time;
 * `self`: the CPU this reading used after its CPU-clock read (the rusage and /proc/stat reads,
 * tens of us under a sanitizer), which a stopwatch running across it is charged and the
 * truth may not hold: a bound adds it for both ends. */
struct pg_obs { int64_t wall, cpu, steal, self, run_delay; long nivcsw, nvcsw; };

/* The first size - 1 bytes of a /proc file into buf, NUL-terminated; its length, or -1.
 * open/read/close and no stdio: tests read these in signal handlers (async-signal-safe). */
static inline ssize_t pg_read_head(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, size - 1) : -1;
    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = 0;
    return n;
}

/* Time the hypervisor stole from the machine's vCPUs (/proc/stat, every CPU), ns; 0 if
 * unknown. A stopwatch counts it, the thread's CPU clock does not (docs/accounting.md,
 * "Error bounds", stolen σ): system-wide, an upper bound for one thread. */
static inline int64_t pg_steal_ns(void)
{
    /* open/read/close and no stdio: tests read it in signal handlers too (async-signal-safe;
     * TSan reports fopen's malloc there). "cpu  user nice system idle iowait irq softirq
     * steal ...": the 8th number. */
    char buf[256];
    ssize_t n = pg_read_head("/proc/stat", buf, sizeof buf);
    if (n < 5 || memcmp(buf, "cpu ", 4) != 0)
        return 0;
    unsigned long long v = 0;
    const char *p = buf + 4;
    for (int field = 0; field < 8; field++) {
        while (*p == ' ')
            p++;
        if (*p < '0' || *p > '9')
            return 0;
        for (v = 0; *p >= '0' && *p <= '9'; p++)
            v = v * 10 + (unsigned long long)(*p - '0');
    }
    long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? (int64_t)(v * (1000000000ull / (unsigned long long)hz)) : 0;
}

/* The thread's time waiting on a run queue, ns (/proc/thread-self/schedstat's second
 * number); -1 if unknown. open/read only, as pg_steal_ns. */
static inline int64_t pg_run_delay_ns(void)
{
    char buf[128];
    if (pg_read_head("/proc/thread-self/schedstat", buf, sizeof buf) < 3)
        return -1;
    const char *p = buf;
    while (*p >= '0' && *p <= '9')
        p++;
    if (*p++ != ' ' || *p < '0' || *p > '9')
        return -1;
    int64_t v = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (*p - '0');
    return v;
}

static inline struct pg_obs pg_obs_now(void)
{
    struct pg_obs o;
    struct timespec ts;
    clockid_t id;
    struct rusage ru;
    if (pthread_getcpuclockid(pthread_self(), &id) != 0 || clock_gettime(id, &ts) != 0 ||
        getrusage(RUSAGE_THREAD, &ru) != 0) {
        fprintf(stderr, "bounds.h: cannot read the thread's clocks\n");
        exit(1);
    }
    o.cpu = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    o.wall = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    o.nivcsw = ru.ru_nivcsw;
    o.nvcsw = ru.ru_nvcsw;
    o.run_delay = pg_run_delay_ns();
    o.steal = pg_steal_ns();
    if (clock_gettime(id, &ts) == 0)
        o.self = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - o.cpu;
    else
        o.self = 0;
    return o;
}

static inline int64_t pg_obs_off(const struct pg_obs *a, const struct pg_obs *b)
{
    int64_t off = (b->wall - a->wall) - (b->cpu - a->cpu);
    return off > 0 ? off : 0;
}

/* The terms of the last bound computed, for the failure message. */
static char pg_bound_why[256];

/* Measured CPU time (rseq) of a stretch whose truth, by the thread's CPU clock between
 * a and b, is `truth`: exact but for the frequency, the hooks at both ends and the
 * reference's own steps. */
static inline int64_t pg_bound_measured(int64_t truth, const struct pg_obs *a, const struct pg_obs *b)
{
    long iv = b->nivcsw - a->nivcsw;
    int64_t f = (int64_t)((double)truth * PG_BOUND_FREQ);
    long hz = sysconf(_SC_CLK_TCK);
    int64_t st = b->steal > a->steal ? b->steal - a->steal + 1000000000ll / (hz > 0 ? hz : 100) : 0;
    /* /proc/stat counts steal in ticks of 10 ms: less than a tick stolen in the stretch may
     * not show there. A thread that never slept in it (no voluntary switch) was off the CPU
     * only waiting on a run queue or stolen: wall - CPU - run-queue wait, to the ns */
    if (b->nvcsw == a->nvcsw && a->run_delay >= 0 && b->run_delay >= 0) {
        int64_t t = (b->wall - a->wall) - (b->cpu - a->cpu) - (b->run_delay - a->run_delay);
        if (t > st)
            st = t;
    }
    int64_t self = a->self + b->self;
    snprintf(pg_bound_why, sizeof pg_bound_why,
             "measured: freq %" PRId64 " + hooks 2 x %lld + %ld preemptions x %lld + stolen %" PRId64
             " + the readings' own %" PRId64 " ns", f, PG_BOUND_HOOK_NS, iv, PG_BOUND_STEP_NS, st, self);
    return f + 2 * PG_BOUND_HOOK_NS + iv * PG_BOUND_STEP_NS + st + self;
}

/* Estimated CPU time of a group in an explicit event (no rseq): its share of wall cycles of
 * the event's CPU time; off by at most the off-CPU time inside the event. */
static inline int64_t pg_bound_shared(int64_t truth, const struct pg_obs *a, const struct pg_obs *b)
{
    int64_t off = pg_obs_off(a, b), m = pg_bound_measured(truth, a, b);
    char why[sizeof pg_bound_why];
    memcpy(why, pg_bound_why, sizeof why);
    snprintf(pg_bound_why, sizeof pg_bound_why, "shared out: off-CPU %" PRId64 " + %.200s", off, why);
    return off + m;
}

/* An implicit event of wall time W estimated by the sampler (no rseq): never more than W
 * off (clamped to [0, W]); with readings P apart, P/4 at the begin + P at the end. */
static inline int64_t pg_bound_sampled(const struct pg_cfg *c, int64_t wall)
{
    int64_t b = wall, p = c->period_ns;
    if (p > 0 && p / 4 + p < b)
        b = p / 4 + p;
    snprintf(pg_bound_why, sizeof pg_bound_why, "sampled: min(W %" PRId64 ", P/4 + P at P %" PRId64 ")",
             wall, p);
    return b + (int64_t)((double)wall * PG_BOUND_FREQ);
}

/* The sum over a run of back-to-back sampled implicit events shorter than P, between a and
 * b: each off by W x |r - r_event| (r the newest interval's on-CPU ratio): summed, twice the
 * off-CPU time in the run, plus P for the events before the run's first reading (their r
 * comes from before it); without a sampler, the run's wall time. */
static inline int64_t pg_bound_sampled_run(const struct pg_cfg *c, const struct pg_obs *a,
                                           const struct pg_obs *b)
{
    int64_t off = pg_obs_off(a, b), w = b->wall - a->wall;
    int64_t r = c->period_ns > 0 ? c->period_ns + 2 * off : w;
    snprintf(pg_bound_why, sizeof pg_bound_why,
             "sampled run: P %" PRId64 " + 2 x off-CPU %" PRId64, c->period_ns, off);
    return r + (int64_t)((double)w * PG_BOUND_FREQ);
}

/* Either: measured with rseq, else the share of an explicit event. */
static inline int64_t pg_bound_explicit(const struct pg_cfg *c, int64_t truth, const struct pg_obs *a,
                                        const struct pg_obs *b)
{
    return c->measured ? pg_bound_measured(truth, a, b) : pg_bound_shared(truth, a, b);
}

/* lo - bound <= value <= hi + bound: the truth bracketed, when a stretch's ends hold work
 * that may or may not be charged (a thread's first hook call sets the thread up before its
 * counter read): lo read inside the stopwatch, hi around the calls. */
#define PG_ASSERT_BRACKET(value, lo, hi, bound) do { \
    int64_t v_ = (int64_t)(value), l_ = (int64_t)(lo), h_ = (int64_t)(hi), b_ = (int64_t)(bound); \
    if (v_ < l_ - b_ || v_ > h_ + b_) { \
        fprintf(stderr, "%s:%d: %s within [%s, %s] +- bound: %" PRId64 " vs [%" PRId64 ", %" \
                PRId64 "] +- %" PRId64 " (%s)\n", __FILE__, __LINE__, #value, #lo, #hi, v_, l_, h_, \
                b_, pg_bound_why); \
        exit(1); \
    } } while (0)

/* |value - truth| <= bound, with the bound's terms in the message. */
#define PG_ASSERT_WITHIN(value, truth, bound) do { \
    int64_t v_ = (int64_t)(value), t_ = (int64_t)(truth), b_ = (int64_t)(bound); \
    if (v_ < t_ - b_ || v_ > t_ + b_) { \
        fprintf(stderr, "%s:%d: %s within %s +- bound: %" PRId64 " vs %" PRId64 " +- %" PRId64 \
                " (%s)\n", __FILE__, __LINE__, #value, #truth, v_, t_, b_, pg_bound_why); \
        exit(1); \
    } } while (0)

#endif
