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
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
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

/* a sampler's reading of a thread that took longer than this was preempted and is dropped
 * (runtime/implicit.c, PG_SAMPLE_SLACK) */
#define PG_BOUND_DROP_NS (100 * 1000ll)

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
struct pg_obs { int64_t wall, cpu, steal, self, run_delay, smp_run, smp_wait; long nivcsw, nvcsw; };

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

/* /proc/stat's unit: a clock tick, ns. Less than one stolen may not show there yet. */
static inline int64_t pg_steal_tick_ns(void)
{
    long hz = sysconf(_SC_CLK_TCK);
    return 1000000000ll / (hz > 0 ? hz : 100);
}

/* The steal /proc/stat shows between two pg_steal_ns() readings, from and to, plus one tick
 * (up to one more not shown yet); 0 if none showed (less than a tick may have been stolen:
 * pg_stolen adds what a thread that never slept saw of it, to the ns). */
static inline int64_t pg_steal_between(int64_t from, int64_t to)
{
    return to > from ? to - from + pg_steal_tick_ns() : 0;
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

/* "/proc/self/task/" name tail into out (size 64), with no stdio (signal handlers). */
static inline void pg_task_path(char *out, const char *name, const char *tail)
{
    size_t n = strlen("/proc/self/task/"), k = strnlen(name, 20), t = strlen(tail);
    memcpy(out, "/proc/self/task/", n);
    memcpy(out + n, name, k);
    memcpy(out + n + k, tail, t + 1);
}

/* The sampler thread ("perfgroup-cpu", runtime/implicit.c) of this process: its time on a
 * CPU and its time waiting on a run queue, ns (/proc/self/task/<tid>/schedstat's first two
 * numbers), into run and wait: what makes its readings later than its period
 * (pg_bound_sampled). Returns 0, or -1 if it does not run. The kernel adds a wait on a run
 * queue when it ends (the thread gets a CPU): with `settled`, the values are read once the
 * sampler sleeps (its round takes no lock and does no I/O: asleep is in its nanosleep), so
 * that every wait before this call is in them; -1 if it did not sleep within 2 s. Its tid
 * is looked up once per process (and again while it is not found) with open/getdents64/
 * read only: tests read this in signal handlers too. */
static inline int pg_sampler_busy(int settled, int64_t *run, int64_t *wait)
{
    static pid_t pid;
    static char tid[24];
    char path[64], buf[128];
    if (pid != getpid() || !tid[0]) {
        pid = getpid();
        tid[0] = 0;
        int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char ents[4096];
        long n;
        while (fd >= 0 && !tid[0] && (n = syscall(SYS_getdents64, fd, ents, sizeof ents)) > 0) {
            for (long off = 0; off < n && !tid[0];) {
                const char *name = ents + off + 19; /* d_ino 8, d_off 8, d_reclen 2, d_type 1 */
                unsigned short reclen;
                memcpy(&reclen, ents + off + 16, sizeof reclen);
                off += reclen;
                if (name[0] < '0' || name[0] > '9' || strnlen(name, 20) >= 20)
                    continue;
                pg_task_path(path, name, "/comm");
                if (pg_read_head(path, buf, sizeof buf) >= 13 && memcmp(buf, "perfgroup-cpu", 13) == 0)
                    memcpy(tid, name, strnlen(name, 20) + 1);
            }
        }
        if (fd >= 0)
            close(fd);
        if (!tid[0])
            return -1;
    }
    for (int tries = 0; settled; tries++) { /* "tid (perfgroup-cpu) S ...": the state */
        pg_task_path(path, tid, "/stat");
        const char *st = pg_read_head(path, buf, sizeof buf) > 0 ? strstr(buf, ") ") : NULL;
        if (!st || tries == 20000) {
            tid[0] = 0;
            return -1;
        }
        if (st[2] == 'S')
            break;
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    pg_task_path(path, tid, "/schedstat");
    if (pg_read_head(path, buf, sizeof buf) < 3) {
        tid[0] = 0; /* exited: looked up again next time */
        return -1;
    }
    char *p = buf;
    *run = strtoll(p, &p, 10);
    *wait = strtoll(p, &p, 10);
    return 0;
}

static inline struct pg_obs pg_obs_now(void)
{
    struct pg_obs o;
    /* first (its reads are not in the stretch's `self`), and only without rseq: the
     * sampler's readings are then what the estimate comes from */
    if (pg_cfg_now().measured || pg_sampler_busy(0, &o.smp_run, &o.smp_wait) != 0)
        o.smp_run = o.smp_wait = -1;
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

/* A thread that never slept between a and b (no voluntary switch) was off the CPU only waiting
 * on a run queue or stolen: *t = wall - CPU - run-queue wait, to the ns (at least 0). Returns
 * 0 where that does not hold or schedstat is unknown. */
static inline int pg_stolen_own(const struct pg_obs *a, const struct pg_obs *b, int64_t *t)
{
    if (b->nvcsw != a->nvcsw || a->run_delay < 0 || b->run_delay < 0)
        return 0;
    *t = (b->wall - a->wall) - (b->cpu - a->cpu) - (b->run_delay - a->run_delay);
    if (*t < 0)
        *t = 0;
    return 1;
}

/* The time stolen from this thread between a and b, as far as the test can bound it
 * (docs/accounting.md, "Error bounds", stolen σ): a stopwatch counts it, the thread's CPU
 * clock does not, so it is what a stopwatch-derived figure (a group's CPU in an implicit
 * event, a task's, the sum of the self times) may read above its CPU-clock truth. */
static inline int64_t pg_stolen(const struct pg_obs *a, const struct pg_obs *b)
{
    int64_t st = pg_steal_between(a->steal, b->steal), t;
    /* /proc/stat counts steal in ticks of 10 ms: less than a tick stolen in the stretch may
     * not show there; the thread's own figure, to the ns (pg_stolen_own) */
    if (pg_stolen_own(a, b, &t) && t > st)
        st = t;
    return st;
}

/* The time stolen from this thread between a and b where it can be told from its own clocks
 * alone: a thread that never slept in the stretch (no voluntary switch) was off the CPU only
 * waiting on a run queue or stolen, so wall - CPU - run-queue wait, to the ns. Else (or
 * without schedstat) pg_stolen's, with /proc/stat's machine-wide steal (both CPUs', in
 * ticks): looser, never lower. */
static inline int64_t pg_stolen_thread(const struct pg_obs *a, const struct pg_obs *b)
{
    int64_t t;
    return pg_stolen_own(a, b, &t) ? t : pg_stolen(a, b);
}

/* Adaptive accounting (docs/accounting.md, "Hot threads" and "Where σ applies"): an event
 * estimates once a window of 64 exact starts ran within 64 x 2 us by the counter; a slower
 * window begins a new one. So an event that stayed exact had every complete window of its
 * starts take 64 x 2 us or more, and its windows follow one another inside it: its wall time
 * (CLOCK_MONOTONIC around it) was at least that many windows' worth. Whatever slowed it —
 * time stolen, a run queue, and what neither shows: a busy SMT sibling, interrupts, caches
 * another process emptied (one event in 400 stayed exact at load 28 in CI-like run 16 with
 * only 94 us stolen or waited in its phase, which the rule before this one, built on those two
 * alone, did not allow) — an event faster than that estimated. Returns whether an event of
 * `starts` starts and that wall time may stay exact: one window less than starts / 64 (an
 * event's first start and a slow path's are in no window), the counter's frequency error
 * (PG_BOUND_FREQ) in the event's favour. */
#define PG_BOUND_EST_WINDOW 64     /* runtime/internal.h PG_EST_WINDOW */
#define PG_BOUND_EST_HOT_NS 2000.0 /* runtime/internal.h PG_EST_HOT_NS */
static inline int pg_event_may_stay_exact(double wall_ns, double starts)
{
    double windows = (double)(int64_t)(starts / PG_BOUND_EST_WINDOW) - 1;
    if (windows < 1)
        return 1;
    return wall_ns >= windows * PG_BOUND_EST_WINDOW * PG_BOUND_EST_HOT_NS * (1 - PG_BOUND_FREQ);
}

/* Measured CPU time (rseq) of a stretch whose truth, by the thread's CPU clock between
 * a and b, is `truth`: exact but for the frequency, the hooks at both ends and the
 * reference's own steps. */
static inline int64_t pg_bound_measured(int64_t truth, const struct pg_obs *a, const struct pg_obs *b)
{
    long iv = b->nivcsw - a->nivcsw;
    int64_t f = (int64_t)((double)truth * PG_BOUND_FREQ);
    int64_t st = pg_stolen(a, b);
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

/* G, the longest gap between the sampler's readings of this thread since a, as far as the
 * test can bound it (docs/accounting.md "Error bound"): P when the sampler is on time; a
 * late one reads at most L later, L its time on a CPU and waiting on a run queue plus the
 * time stolen from the machine since a (observed now, after the stretch: later is only
 * more), and a reading that took more than 100 us (it waited, or was stolen from, for the
 * rest) is dropped: another P. G <= (1 + drops) x (P + timer slack) + L, drops <= those
 * waits / (100 us - a read's own CPU). The sampler is assumed active (it had a thread to
 * sample in the last second, or started less than one ago): idle, it sleeps 10 P. -1 with
 * no sampler (P 0) or none seen. Its terms go to why (size 200). */
static inline int64_t pg_sampler_gap(const struct pg_cfg *c, const struct pg_obs *a, char *why)
{
    int64_t p = c->period_ns, run = -1, wait = -1;
    if (p > 0 && a->smp_run >= 0)
        pg_sampler_busy(1, &run, &wait);
    if (a->smp_run < 0 || run < a->smp_run || wait < a->smp_wait) {
        snprintf(why, 200, "%s", p == 0 ? "no sampler: P 0" : "the sampler's lateness unknown");
        return -1;
    }
    int64_t st = pg_steal_between(a->steal, pg_steal_ns());
    int64_t w = wait - a->smp_wait + st, late = run - a->smp_run + w;
    int64_t slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0); /* inherited by the sampler */
    if (slack < 0)
        slack = 50000;
    /* a dropped reading waited or was stolen more than 100 us less its read's own CPU (one
     * CPU-clock read: within PG_BOUND_HOOK_NS) */
    int64_t drops = w / (PG_BOUND_DROP_NS - PG_BOUND_HOOK_NS);
    int64_t g = (1 + drops) * (p + slack) + late;
    snprintf(why, 200, "G = (1 + %" PRId64 " drops) x (P %" PRId64 " + slack %" PRId64
             ") + late %" PRId64 " (waits and stolen %" PRId64 ") = %" PRId64,
             drops, p, slack, late, w, g);
    return g;
}

/* An implicit event between a and b estimated by the sampler (no rseq), docs/accounting.md
 * "Error bound": never more than its wall time W off (clamped to [0, W]); with a reading
 * inside it, off by at most the distance from its begin to the next reading (less when a
 * reading shortly before the begin is interpolated from: g/4 for readings g apart, which a
 * test cannot see: its begin's gap began before a) plus that from the newest reading to its
 * end: G + G (pg_sampler_gap). */
static inline int64_t pg_bound_sampled(const struct pg_cfg *c, const struct pg_obs *a,
                                       const struct pg_obs *b)
{
    char why[200];
    int64_t wall = b->wall - a->wall, g = pg_sampler_gap(c, a, why);
    int64_t bound = g >= 0 && 2 * g < wall ? 2 * g : wall;
    snprintf(pg_bound_why, sizeof pg_bound_why, "sampled: min(W %" PRId64 ", G + G), %s", wall, why);
    return bound + (int64_t)((double)wall * PG_BOUND_FREQ);
}

/* The sum over a run of back-to-back sampled implicit events shorter than P, between a and
 * b: each is off by W x |r - r_event| (r the newest interval's on-CPU ratio): summed, twice
 * the off-CPU time in the run, plus G for the events before the run's first reading (their
 * r comes from before it; G as pg_sampler_gap: P on time); never more than the run's wall
 * time (without a sampler, that). */
static inline int64_t pg_bound_sampled_run(const struct pg_cfg *c, const struct pg_obs *a,
                                           const struct pg_obs *b)
{
    char why[200];
    int64_t off = pg_obs_off(a, b), w = b->wall - a->wall, g = pg_sampler_gap(c, a, why);
    int64_t r = g >= 0 && g + 2 * off < w ? g + 2 * off : w; /* each event is clamped to [0, W] */
    snprintf(pg_bound_why, sizeof pg_bound_why, "sampled run: G + 2 x off-CPU %" PRId64 ", %s",
             off, why);
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
