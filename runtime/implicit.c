/* SPDX-License-Identifier: MIT */
/*
 * runtime/implicit.c — the CPU time of implicit events on threads without rseq (estimated).
 *
 * A program that never calls the event API gets one implicit event per outermost group
 * activation: it begins in an enter hook and ends in an exit hook. On a thread with rseq
 * (`measured`, cputime.c) its CPU time is exact: its wall time minus the off-CPU time the
 * hooks settled inside it. This file is the fallback for threads without rseq
 * (PERFGROUP_CPU=getcpu|none, glibc < 2.35, a failed registration), which may not read
 * their CPU clock in a hook either: the sampler, a runtime thread, "perfgroup-cpu", started
 * outside any hook (perfgroup__sampler_ensure) at start-up when the process has no rseq or
 * records (each round it also keeps the file's open-event slots, progress.c), when a
 * recording is opened or an explicit event begins in a recording process, and in a fork
 * child whose parent had one. A hook never starts it: a thread whose rseq registration alone
 * failed, in a process whose others have rseq and that does not record, has no sampler (its
 * implicit events get W x the last ratio known). At once,
 * then every PG_SAMPLE_NS, it reads the CPU clock of each thread that has implicit events,
 * from outside (the id pthread_getcpuclockid gives works from any thread of the process),
 * and publishes (counter, CPU ns) pairs in a ring of PG_SAMPLES per thread. An event gets
 *         cpu(end) - cpu(begin), each end interpolated between the samples around it
 *     (extrapolated with the newest interval's on-CPU ratio past the newest sample),
 *     clamped to [0, wall]. Callers outside the hooks (thread exit, an explicit event_begin
 *     closing an implicit event, nested loops) pass a real reading for the end.
 *
 * Error bound of that estimate, for an event of wall time W (docs/accounting.md), never
 * more than W (the clamp):
 *   - no sample inside it (W < PG_SAMPLE_NS, most events): W x |r - r_event|, r being the
 *     on-CPU ratio of the newest sample interval (the old window rule);
 *   - otherwise: <= min(g/4, next sample - begin) at the begin (interpolation of a clock
 *     whose slope is in [0, 1] between samples g apart; extrapolated back from the next
 *     sample when none precedes it) plus <= end - newest sample at the end: with G the
 *     longest gap between samples, <= G/4 + G (a sample at most G before the begin), else
 *     <= G + G. G is P, the sampling period, when the sampler is on time (12.5 ms at the
 *     default 10 ms); a late sampler (waiting on a run queue, its round's own CPU time, a
 *     reading preempted for more than PG_SAMPLE_SLACK and dropped: one more period) makes
 *     it G <= (1 + L / PG_SAMPLE_SLACK) x (P + timer slack) + L, L the sampler's CPU time
 *     and run-queue wait (and the time stolen) meanwhile, and may leave a long event
 *     without any sample: then only W holds.
 * PERFGROUP_SAMPLE_MS sets the period; 0 starts no sampler (events then get W x the last
 * ratio known, 1 at start).
 *
 * The sampler costs one 615 ns read per sampled thread per period (0.006 % of a core per
 * thread at 10 ms). A thread is sampled while it is in an implicit event or had one in the
 * last second; with nothing to sample the sampler sleeps 10 times longer.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define PG_SAMPLER_KEEP   100u      /* rounds a thread stays sampled after its last event */
#define PG_SAMPLE_SLACK   100000ull /* ns: a reading that took longer was preempted: dropped */

static uint64_t sample_ns = PG_SAMPLE_NS;
enum { SAMPLER_NONE = 0, SAMPLER_RUNNING = 1, SAMPLER_OFF = 2 };
static _Atomic int sampler_state;

PG_HIDDEN void perfgroup__implicit_init(void)
{
    const char *ms = perfgroup__getenv("PERFGROUP_SAMPLE_MS");
    if (ms && *ms) {
        char *end;
        long v = strtol(ms, &end, 10);
        if (*end == '\0' && v >= 0 && v <= 10000)
            sample_ns = (uint64_t)v * 1000000ull;
    }
    if (sample_ns == 0)
        atomic_store(&sampler_state, SAMPLER_OFF);
}

/* ---- the sampler thread ------------------------------------------------------------------ */

/* Sampler only: a new ring for a new life of the entry, or one more reading. Release stores
 * keep every write after the odd `seq` store (as the totals' seqlock in events.c). */
static void ring_reset(struct pg_samples *r, uint32_t life)
{
    uint32_t seq = atomic_load_explicit(&r->seq, memory_order_relaxed);
    atomic_store_explicit(&r->seq, seq + 1, memory_order_relaxed);
    atomic_store_explicit(&r->life, life, memory_order_release);
    atomic_store_explicit(&r->n, 0, memory_order_release);
    atomic_store_explicit(&r->seq, seq + 2, memory_order_release);
}

static void ring_push(struct pg_samples *r, uint64_t tsc, int64_t cpu)
{
    uint32_t seq = atomic_load_explicit(&r->seq, memory_order_relaxed);
    uint32_t n = atomic_load_explicit(&r->n, memory_order_relaxed);
    atomic_store_explicit(&r->seq, seq + 1, memory_order_relaxed);
    atomic_store_explicit(&r->tsc[n % PG_SAMPLES], tsc, memory_order_release);
    atomic_store_explicit(&r->cpu[n % PG_SAMPLES], cpu, memory_order_release);
    atomic_store_explicit(&r->n, n + 1, memory_order_release);
    atomic_store_explicit(&r->seq, seq + 2, memory_order_release);
}

/* Returns 1 if the thread is still worth sampling. */
static int sample_thread(struct pg_thread *t)
{
    uint32_t life = atomic_load_explicit(&t->life, memory_order_acquire);
    uint32_t open = atomic_load_explicit(&t->imp_open, memory_order_relaxed);
    uint32_t count = atomic_load_explicit(&t->imp_count, memory_order_relaxed);
    if (t->smp_life != life) {
        t->smp_life = life;
        t->smp_count = 0;
        t->smp_idle = PG_SAMPLER_KEEP; /* not sampled until it has an implicit event */
        ring_reset(&t->samples, life);
    }
    if (!open && count == t->smp_count) {
        if (t->smp_idle >= PG_SAMPLER_KEEP)
            return 0;
        t->smp_idle++;
    } else {
        t->smp_idle = 0;
    }
    t->smp_count = count;
    clockid_t id = (clockid_t)atomic_load_explicit(&t->cpu_clock, memory_order_relaxed);
    struct timespec ts;
    uint64_t a = pg_clock_now();
    int rc = clock_gettime(id, &ts);
    uint64_t b = pg_clock_now();
    /* the thread may have exited (EINVAL), or left this entry to another one since */
    if (rc != 0 || atomic_load_explicit(&t->life, memory_order_acquire) != life)
        return 1;
    if ((int64_t)(b - a) < 0 || perfgroup__ticks_to_ns(b - a) > PG_SAMPLE_SLACK)
        return 1;
    ring_push(&t->samples, a + (b - a) / 2, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
    return 1;
}

static void *sampler_main(void *arg)
{
    (void)arg;
    unsigned idle = 0;
    /* A round at once, then one a period: the event that started the sampler gets a reading
     * near its begin instead of one a period later (its begin is extrapolated back to it) */
    for (int first = 1;; first = 0) {
        uint64_t ns = idle > PG_SAMPLER_KEEP ? 10 * sample_ns : sample_ns;
        struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
        while (!first && nanosleep(&ts, &ts) != 0)
            ;
        int any = 0;
        for (struct pg_thread *t = perfgroup__threads(); t; t = t->next)
            if (atomic_load_explicit(&t->state, memory_order_acquire) == PG_THREAD_LIVE)
                any |= sample_thread(t);
        any |= perfgroup__progress_round(sample_ns); /* the file's open-event slots */
        /* recording: no back-off, so an event's slot appears a period after its begin */
        idle = any || perfgroup__rec_mode_now() ? 0 : idle + 1;
        /* API-free programs have no other point that refines the counter's frequency */
        perfgroup__clock_calibrate(pg_clock_now(), pg_clock_gettime_ns(CLOCK_MONOTONIC));
    }
    return NULL;
}

/* Start the sampler: a one-time thread creation, never in a hook (perfgroup__sampler_ensure). */
static PG_COLD void sampler_start(void)
{
    int expect = SAMPLER_NONE;
    if (!atomic_compare_exchange_strong(&sampler_state, &expect, SAMPLER_RUNNING))
        return;
    static const struct pg_spawn sampler = {sampler_main, "perfgroup-cpu"};
    if (perfgroup__spawn(&sampler) != 0) /* the sampler takes no signal of the program */
        atomic_store(&sampler_state, SAMPLER_OFF);
}

PG_HIDDEN void perfgroup__sampler_ensure(void)
{
    if (atomic_load_explicit(&sampler_state, memory_order_relaxed) == SAMPLER_NONE)
        sampler_start();
}

/* ---- the thread's side ------------------------------------------------------------------- */

PG_HIDDEN void perfgroup__implicit_thread_start(struct pg_thread *t)
{
    clockid_t id;
    if (pthread_getcpuclockid(pthread_self(), &id) != 0)
        id = CLOCK_THREAD_CPUTIME_ID;
    atomic_store_explicit(&t->cpu_clock, (int32_t)id, memory_order_relaxed);
    t->cpu_ratio = 1.0;
    t->own_n = 0;
    t->imp_begin_cpu = -1;
    atomic_store_explicit(&t->imp_open, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->life, 1, memory_order_release);
}

PG_HIDDEN int perfgroup__implicit_atfork_child(struct pg_thread *me)
{
    /* the parent's sampler is not in the child (the caller starts the child's one, when the
     * parent had one, once the locks are released); it may have been mid-write of a ring:
     * start every ring over (one thread here, nothing races) */
    int had = atomic_load(&sampler_state) == SAMPLER_RUNNING;
    atomic_store(&sampler_state, sample_ns ? SAMPLER_NONE : SAMPLER_OFF);
    for (struct pg_thread *t = perfgroup__threads(); t; t = t->next) {
        atomic_store(&t->samples.seq, 0);
        atomic_store(&t->samples.n, 0);
        t->smp_life = 0;
    }
    if (me) { /* a new CPU clock (the child's thread, from zero) and a new life */
        uint32_t open = atomic_load(&me->imp_open);
        perfgroup__implicit_thread_start(me);
        atomic_store(&me->imp_open, open); /* an implicit event may go on in the child */
    }
    return had;
}

/* A consistent copy of the thread's samples, oldest first. */
struct samples {
    unsigned n;
    uint64_t tsc[PG_SAMPLES + 3];
    int64_t cpu[PG_SAMPLES + 3];
};

static void samples_read(struct pg_thread *t, struct samples *c)
{
    const struct pg_samples *r = &t->samples;
    uint32_t life = atomic_load_explicit(&t->life, memory_order_relaxed);
    for (int tries = 0; tries < 4; tries++) { /* bounded: a hook never waits */
        uint32_t s0 = atomic_load_explicit(&r->seq, memory_order_acquire);
        if (s0 & 1)
            continue;
        uint32_t n = atomic_load_explicit(&r->n, memory_order_acquire);
        unsigned k = n < PG_SAMPLES ? n : PG_SAMPLES;
        for (unsigned i = 0; i < k; i++) {
            unsigned at = (n - k + i) % PG_SAMPLES;
            c->tsc[i] = atomic_load_explicit(&r->tsc[at], memory_order_acquire);
            c->cpu[i] = atomic_load_explicit(&r->cpu[at], memory_order_acquire);
        }
        uint32_t rl = atomic_load_explicit(&r->life, memory_order_acquire);
        if (atomic_load_explicit(&r->seq, memory_order_relaxed) == s0) {
            c->n = rl == life ? k : 0;
            goto merge;
        }
    }
    c->n = 0;
merge:
    /* the thread's own readings, in time order among the sampler's */
    for (unsigned i = 0; i < t->own_n; i++) {
        unsigned at = c->n;
        while (at > 0 && (int64_t)(c->tsc[at - 1] - t->own_tsc[i]) > 0) {
            c->tsc[at] = c->tsc[at - 1];
            c->cpu[at] = c->cpu[at - 1];
            at--;
        }
        c->tsc[at] = t->own_tsc[i];
        c->cpu[at] = t->own_cpu[i];
        c->n++;
    }
}

PG_HIDDEN void perfgroup__implicit_own(struct pg_thread *t, uint64_t tsc, int64_t cpu_ns)
{
    if (t->own_n == 2) {
        t->own_tsc[0] = t->own_tsc[1];
        t->own_cpu[0] = t->own_cpu[1];
        t->own_n = 1;
    }
    t->own_tsc[t->own_n] = tsc;
    t->own_cpu[t->own_n] = cpu_ns;
    t->own_n++;
}

static double ns_between(uint64_t from, uint64_t to)
{
    return (int64_t)(to - from) > 0 ? (double)perfgroup__ticks_to_ns(to - from) : 0.0;
}

/* On-CPU ratio between samples i < j, in [0, 1]; `fb` if unknown. */
static double ratio(const struct samples *c, unsigned i, unsigned j, double fb)
{
    double w = ns_between(c->tsc[i], c->tsc[j]);
    if (w <= 0)
        return fb;
    double r = (double)(c->cpu[j] - c->cpu[i]) / w;
    return r < 0 ? 0 : r > 1 ? 1 : r;
}

/* The thread's CPU clock at counter value x, from the samples (c->n >= 1). */
static double cpu_at(const struct samples *c, uint64_t x, double fb)
{
    unsigned n = c->n;
    if ((int64_t)(x - c->tsc[n - 1]) >= 0)
        return (double)c->cpu[n - 1] +
               (n >= 2 ? ratio(c, n - 2, n - 1, fb) : fb) * ns_between(c->tsc[n - 1], x);
    if ((int64_t)(x - c->tsc[0]) < 0) { /* before every reading: a CPU clock is >= 0 */
        double v = (double)c->cpu[0] - (n >= 2 ? ratio(c, 0, 1, fb) : fb) * ns_between(x, c->tsc[0]);
        return v < 0 ? 0 : v;
    }
    unsigned k = 1;
    while ((int64_t)(x - c->tsc[k]) >= 0)
        k++;
    return (double)c->cpu[k - 1] + ratio(c, k - 1, k, fb) * ns_between(c->tsc[k - 1], x);
}

PG_HIDDEN void perfgroup__implicit_arm(struct pg_thread *t, uint64_t tsc)
{
    pg_implicit_armed(t);
    if (t->measured)
        return; /* exact from t->off (cputime.c): no estimate, no sampler */
    /* the sampler, if it runs, reads this thread from its next round on (imp_open). A hook
     * never starts it (a thread creation allocates and takes locks: a hook in a signal
     * handler could deadlock): it was started outside any hook (perfgroup__sampler_ensure) */
    /* provisional CPU clock at the begin, from the newest sample: what the end uses if the
     * event outlives the ring (PG_SAMPLES periods); shorter ones interpolate at the end */
    t->imp_begin_cpu = -1;
    uint64_t st = 0;
    int64_t sc = -1;
    if (t->own_n) {
        st = t->own_tsc[t->own_n - 1];
        sc = t->own_cpu[t->own_n - 1];
    }
    const struct pg_samples *r = &t->samples;
    uint32_t s0 = atomic_load_explicit(&r->seq, memory_order_acquire);
    uint32_t n = atomic_load_explicit(&r->n, memory_order_acquire);
    if (!(s0 & 1) && n > 0) {
        uint64_t rt = atomic_load_explicit(&r->tsc[(n - 1) % PG_SAMPLES], memory_order_acquire);
        int64_t rc = atomic_load_explicit(&r->cpu[(n - 1) % PG_SAMPLES], memory_order_acquire);
        uint32_t rl = atomic_load_explicit(&r->life, memory_order_acquire);
        if (atomic_load_explicit(&r->seq, memory_order_relaxed) == s0 &&
            rl == atomic_load_explicit(&t->life, memory_order_relaxed) &&
            (sc < 0 || (int64_t)(rt - st) > 0)) {
            st = rt;
            sc = rc;
        }
    }
    if (sc >= 0)
        t->imp_begin_cpu = sc + (int64_t)(t->cpu_ratio * ns_between(st, tsc));
}

PG_HIDDEN uint64_t perfgroup__implicit_cpu(struct pg_thread *t, uint64_t begin, uint64_t end,
                                          int64_t own_cpu_ns)
{
    if (t->measured) /* exact: its wall minus the off-CPU time settled inside it */
        return pg_implicit_cpu_measured(t, begin, end);
    atomic_store_explicit(&t->imp_open, 0, memory_order_relaxed);
    double wall = ns_between(begin, end);
    if (own_cpu_ns >= 0)
        perfgroup__implicit_own(t, end, own_cpu_ns);
    struct samples c;
    samples_read(t, &c);
    double est;
    if (c.n == 0) {
        est = wall * t->cpu_ratio;
    } else {
        if (c.n >= 2)
            t->cpu_ratio = ratio(&c, c.n - 2, c.n - 1, t->cpu_ratio);
        double at_begin = (int64_t)(begin - c.tsc[0]) >= 0 || t->imp_begin_cpu < 0
                              ? cpu_at(&c, begin, t->cpu_ratio)
                              : (double)t->imp_begin_cpu;
        est = cpu_at(&c, end, t->cpu_ratio) - at_begin;
    }
    return est <= 0 ? 0 : est >= wall ? (uint64_t)wall : (uint64_t)est;
}
