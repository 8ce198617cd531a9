/* SPDX-License-Identifier: MIT */
/*
 * tests/runtime/test_seam.c — measures the runtime must discard: a stopwatch that ends on
 * another CPU where counter intervals are not valid across CPUs (PERFGROUP_TSC=cpu, or a
 * machine whose kernel does not keep `tsc` as its clocksource), and a counter that goes
 * backwards (TSC reset); and the one it must keep: the same CPU change where they are valid
 * (clocksource `tsc`). Injected through the clock layer's test seam (runtime built with
 * PERFGROUP_TESTING), everything else real.
 */
#include <pthread.h>
#include <unistd.h>

#include "task.h"
#include "perfgroup/format.h"

#define MS_NS 1000000ll

extern int64_t perfgroup__test_clock_offset;
extern int64_t perfgroup__test_cpu_override;
struct perfgroup_test_vclock { /* runtime/clock.h */
    int on, desched;
    uint64_t tsc, hz;
    int64_t cpu_ns;
};
extern struct perfgroup_test_vclock perfgroup__test_vclock;
extern uint32_t perfgroup__tsc_scope; /* PGF_TSC_SCOPE_* */
extern void (*perfgroup__test_point)(int point);

SITE(site_a, "A", "fa");
SITE(site_b, "B", "fb");

unsigned perfgroup__jank_mask(uint64_t cpu_ns);

/* Jank buckets: an event "exceeds 2^i ms" strictly: 0.99, 1.0 and 1.01 times each edge. */
static void jank_edges(void)
{
    for (unsigned i = 0; i < PERFGROUP_JANK_BUCKETS; i++) {
        uint64_t edge = 1000000ull << i;
        unsigned below = (1u << i) - 1; /* buckets < i */
        ASSERT_U64(perfgroup__jank_mask(edge * 99 / 100), ==, below);
        ASSERT_U64(perfgroup__jank_mask(edge), ==, below);
        ASSERT_U64(perfgroup__jank_mask(edge * 101 / 100), ==, below | (1u << i));
    }
    ASSERT_U64(perfgroup__jank_mask(0), ==, 0);
    ASSERT_U64(perfgroup__jank_mask(UINT64_MAX), ==, (1u << PERFGROUP_JANK_BUCKETS) - 1);
}

/* The counter-to-ns conversion (clock.h: one multiply and shift) against the exact quotient
 * floor(ticks * 1e9 / hz), 128-bit: equal, or 1 ns above it (the multiplier's 56 bits,
 * rounded up; never above for a whole number of ns), for
 * counters of 19.2 MHz (arm64) to 5 GHz and intervals up to ~10 days; then the frequency the
 * runtime had. */
uint64_t perfgroup__clock_hz(void);
void perfgroup__clock_hz_set(uint64_t hz);
uint64_t perfgroup__test_ticks_to_ns(uint64_t ticks); /* clock.h's inline one, out of line */
static void conversion(void)
{
    static const uint64_t hzs[] = {19200000u,    24000000u,    1000000000u,  1234567891u,
                                   2095078000u, 2500000000u, 2999999999u, 3600000000u,
                                   5000000000u};
    uint64_t was = perfgroup__clock_hz();
    uint32_t x = 12345;
    for (unsigned h = 0; h < sizeof hzs / sizeof hzs[0]; h++) {
        perfgroup__clock_hz_set(hzs[h]);
        for (int i = 0; i < 20000; i++) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            /* 0..2^i-ish: every magnitude from 1 tick to ~10^15 ns */
            uint64_t ticks = i < 64 ? (uint64_t)i : ((uint64_t)x * x) >> (i % 30);
            if ((unsigned __int128)ticks * 1000000000u / hzs[h] > 1000000000000000ull)
                continue;
            uint64_t exact = (uint64_t)((unsigned __int128)ticks * 1000000000u / hzs[h]);
            uint64_t got = perfgroup__test_ticks_to_ns(ticks);
            int whole = (unsigned __int128)ticks * 1000000000u % hzs[h] == 0;
            if (got != exact && (whole || got != exact + 1)) {
                fprintf(stderr, "ticks_to_ns(%llu) at %llu Hz: %llu, exact %llu\n",
                        (unsigned long long)ticks, (unsigned long long)hzs[h],
                        (unsigned long long)got, (unsigned long long)exact);
                exit(1);
            }
        }
    }
    perfgroup__clock_hz_set(was);
}

/* The virtual clock on (clock.h): 1 GHz counter, from tick 10^6 and 1 us of CPU, CPU 0. */
static void vclock_start(void)
{
    perfgroup__test_vclock.hz = 1000000000u;
    perfgroup__test_vclock.tsc = 1000000;
    perfgroup__test_vclock.cpu_ns = 1000;
    perfgroup__test_vclock.on = 1;
    perfgroup__test_cpu_override = 0;
}

/* `test_seam clamp`: an explicit event whose two CPU-clock readings differ by more than its
 * counter's wall time (the clocks disagree) gets its wall time as CPU time, and the clamp is
 * counted; its group's CPU stays within that too. The virtual clock (clock.h) drives it. */
static int clamp_case(void)
{
    vclock_start();
    struct perfgroup_snapshot *s0 = perfgroup_snapshot_take();
    for (int i = 0; i < 3; i++) {
        perfgroup_event_begin("ev");
        uint64_t ta = __perfgroup_enter(&site_a);
        perfgroup__test_vclock.tsc += 1000000;                /* 1 ms of wall */
        perfgroup__test_vclock.cpu_ns += i == 1 ? 1000000 : 5000000; /* 5 ms of CPU, twice */
        __perfgroup_exit(&site_a, ta);
        perfgroup_event_end();
    }
    struct perfgroup_snapshot *s1 = perfgroup_snapshot_take(), *d = perfgroup_snapshot_diff(s1, s0);
    const struct perfgroup_stats *top = perfgroup_snapshot_find(d, "top"), *a = stats(d, "A");
    printf("clamp: top CPU %" PRIu64 " ns of %" PRIu64 " ns wall, A %" PRIu64 " of %" PRIu64
           ", clamped %" PRIu64 "\n", top ? top->cpu_ns : 0, top ? top->wall_ns : 0, a->cpu_ns,
           a->wall_ns, perfgroup_snapshot_clamped(d));
    ASSERT(top != NULL);
    ASSERT_U64(top->events, ==, 3);
    ASSERT_U64(top->cpu_ns, <=, top->wall_ns);
    ASSERT_U64(top->cpu_ns, ==, 3000000);
    ASSERT_U64(a->cpu_ns, <=, a->wall_ns);
    ASSERT_U64(perfgroup_snapshot_clamped(d), ==, 2);
    ASSERT_U64(perfgroup_snapshot_clamped(s1), >=, 2);
    perfgroup_snapshot_free(d);
    perfgroup_snapshot_free(s1);
    perfgroup_snapshot_free(s0);
    puts("ok clamp");
    return 0;
}

/* `test_seam nested_desched`: the thread is descheduled for 5 ms inside
 * perfgroup_nested_loop_begin, after the reading that ends the outer event's first part (at
 * test point 13, before its stopwatches are charged up to that reading, and at 14, after): the
 * stopwatches keep their CPU time. A's 2 ms before the nested loop and 1 ms after it are
 * 3 ms of CPU and of wall; the 5 ms fall in no event (the inner event begins after them).
 * When the stopwatches were charged up to a counter read of their own and the event's end
 * read the CPU clock after it, a deschedule in between was settled into A at that read:
 * A then read 1 ms. The virtual clock drives it. */
static int desched_at;
static void desched_point(int point)
{
    if (point == desched_at) {
        perfgroup__test_vclock.tsc += 5 * MS_NS;
        perfgroup__test_vclock.desched = 1;
    }
}
static void run_ms(int64_t ms)
{
    perfgroup__test_vclock.tsc += (uint64_t)(ms * MS_NS);
    perfgroup__test_vclock.cpu_ns += ms * MS_NS;
}
static int nested_desched_case(void)
{
    vclock_start();
    perfgroup__test_point = desched_point;
    for (int point = 13; point <= 14; point++) {
        struct perfgroup_snapshot *s0 = perfgroup_snapshot_take();
        perfgroup_event_begin("outer");
        uint64_t ta = __perfgroup_enter(&site_a);
        run_ms(2);
        desched_at = point;
        perfgroup_nested_loop_begin();
        desched_at = 0;
        perfgroup_event_begin("inner");
        uint64_t tb = __perfgroup_enter(&site_b);
        run_ms(1);
        __perfgroup_exit(&site_b, tb);
        perfgroup_event_end();
        perfgroup_nested_loop_end();
        run_ms(1);
        __perfgroup_exit(&site_a, ta);
        perfgroup_event_end();
        struct perfgroup_snapshot *s1 = perfgroup_snapshot_take(), *d = perfgroup_snapshot_diff(s1, s0);
        const struct perfgroup_stats *a = stats(d, "A"), *b = stats(d, "B"), *top = stats(d, "top");
        printf("descheduled at point %d: A CPU %" PRIu64 " ns, wall %" PRIu64 ", blocked %" PRIu64
               "; B %" PRIu64 "; top %" PRIu64 " in %" PRIu64 " events\n", point, a->cpu_ns,
               a->wall_ns, a->blocked_ns, b->cpu_ns, top->cpu_ns, top->events);
        ASSERT_U64(a->cpu_ns, ==, 3 * MS_NS);
        ASSERT_U64(a->wall_ns, ==, 3 * MS_NS);
        ASSERT_U64(a->blocked_ns, ==, 0);
        ASSERT_U64(a->activations, ==, 1);
        ASSERT_U64(b->cpu_ns, ==, 1 * MS_NS);
        ASSERT_U64(top->events, ==, 3);
        ASSERT_U64(top->cpu_ns, ==, 4 * MS_NS);
        ASSERT_U64(top->wall_ns, ==, 4 * MS_NS);
        perfgroup_snapshot_free(d);
        perfgroup_snapshot_free(s1);
        perfgroup_snapshot_free(s0);
    }
    perfgroup__test_point = NULL;
    puts("ok nested_desched");
    return 0;
}

/* `test_seam event_end_desched`: an explicit event ends inside a frame of A (dropped
 * uncharged, as docs/accounting.md says) that was descheduled for 5 ms before the end; A's
 * earlier activation in the event keeps its 1 ms of CPU. When the end reading settled those
 * 5 ms into A (the open frame's group), A read 0 ms of CPU and 1 ms blocked. */
static int event_end_desched_case(void)
{
    vclock_start();
    struct perfgroup_snapshot *s0 = perfgroup_snapshot_take();
    perfgroup_event_begin("ev");
    uint64_t ta = __perfgroup_enter(&site_a);
    run_ms(1);
    __perfgroup_exit(&site_a, ta);
    run_ms(1); /* the event's own code */
    ta = __perfgroup_enter(&site_a);
    perfgroup__test_vclock.tsc += 5 * MS_NS; /* off the CPU inside A's second frame */
    perfgroup__test_vclock.desched = 1;
    perfgroup_event_end();
    __perfgroup_exit(&site_a, ta); /* dropped: its event ended inside it */
    struct perfgroup_snapshot *s1 = perfgroup_snapshot_take(), *d = perfgroup_snapshot_diff(s1, s0);
    const struct perfgroup_stats *a = stats(d, "A"), *top = stats(d, "top");
    printf("event ended inside A: A CPU %" PRIu64 " ns, wall %" PRIu64 ", blocked %" PRIu64
           ", %" PRIu64 " activations; top CPU %" PRIu64 ", self %" PRIu64 "\n", a->cpu_ns,
           a->wall_ns, a->blocked_ns, a->activations, top->cpu_ns, top->self_ns);
    ASSERT_U64(a->cpu_ns, ==, 1 * MS_NS);
    ASSERT_U64(a->wall_ns, ==, 1 * MS_NS);
    ASSERT_U64(a->blocked_ns, ==, 0);
    ASSERT_U64(a->activations, ==, 1);
    ASSERT_U64(top->cpu_ns, ==, 2 * MS_NS);
    perfgroup_snapshot_free(d);
    perfgroup_snapshot_free(s1);
    perfgroup_snapshot_free(s0);
    puts("ok event_end_desched");
    return 0;
}

/* `test_seam registry_busy`: a thread's first call of a site no constructor registered
 * waits a bounded while for the registry, held by another thread resolving its own first
 * site (preempted, on a busy machine), then is refused and counted: no frame, no charge, no
 * block; the thread's next call of the site is measured. The holder keeps the registry
 * (test point 19, inside the registry lock) until the waiter's hook has returned. */
SITE(site_h, "H", "fh");
SITE(site_w, "W", "fw");
static _Atomic int holder_inside, holder_released, waiter_done;
static _Thread_local int is_holder;
static void hold_registry(int point)
{
    if (point != 19 || !is_holder)
        return;
    holder_inside = 1;
    int64_t give_up = mono_ns() + 60000 * MS_NS;
    while (!waiter_done && mono_ns() < give_up)
        usleep(1000);
    holder_released = 1;
}
static void *holder(void *arg)
{
    (void)arg;
    is_holder = 1;
    perfgroup_event_begin("hold");
    uint64_t th = __perfgroup_enter(&site_h);
    __perfgroup_exit(&site_h, th);
    perfgroup_event_end();
    return NULL;
}
static int registry_busy_case(void)
{
    perfgroup_thread_name("waiter"); /* registered before the registry is taken */
    perfgroup__test_point = hold_registry;
    pthread_t th;
    pthread_create(&th, NULL, holder, NULL);
    int64_t give_up = mono_ns() + 10000 * MS_NS;
    while (!holder_inside && mono_ns() < give_up)
        usleep(1000);
    ASSERT(holder_inside);
    perfgroup_event_begin("wait");
    int64_t t0 = mono_ns();
    uint64_t tw = __perfgroup_enter(&site_w); /* the registry is held: refused */
    int64_t waited = mono_ns() - t0;
    int released = holder_released;
    __perfgroup_exit(&site_w, tw);
    perfgroup_event_end();
    waiter_done = 1;
    pthread_join(th, NULL);
    ASSERT_U64(tw, ==, 0);
    printf("waited %.3f ms for the registry\n", waited / 1e6);
    /* bounded: it never waits for the holder, which holds the registry until the waiter is
     * done (or 60 s). Its wall time is not the test: each of its yields may give a busy CPU
     * to another runnable thread for a timeslice (7.3 s seen under ASan with a spinner on
     * every core) */
    ASSERT_I64(released, ==, 0);
    struct perfgroup_snapshot *s = perfgroup_snapshot_take();
    ASSERT_U64(perfgroup_snapshot_refused(s), ==, 1);
    ASSERT(perfgroup_snapshot_find(s, "W") == NULL || stats(s, "W")->activations == 0);
    ASSERT_U64(stats(s, "H")->activations, ==, 1);
    perfgroup_snapshot_free(s);
    /* the registry free again: the same site is resolved and measured */
    perfgroup_event_begin("wait");
    tw = __perfgroup_enter(&site_w);
    ASSERT_U64(tw, !=, 0);
    __perfgroup_exit(&site_w, tw);
    perfgroup_event_end();
    s = perfgroup_snapshot_take();
    ASSERT_U64(stats(s, "W")->activations, ==, 1);
    ASSERT_U64(stats(s, "W")->events, ==, 1);
    ASSERT_U64(perfgroup_snapshot_refused(s), ==, 1);
    perfgroup_snapshot_free(s);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "clamp") == 0)
        return clamp_case();
    if (argc > 1 && strcmp(argv[1], "event_end_desched") == 0)
        return event_end_desched_case();
    if (argc > 1 && strcmp(argv[1], "nested_desched") == 0)
        return nested_desched_case();
    if (argc > 1 && strcmp(argv[1], "registry_busy") == 0)
        return registry_busy_case();
    jank_edges();
    conversion();
    /* `test_seam cpu`: run with PERFGROUP_TSC=cpu; `test_seam kept`: where the machine's
     * TSC is valid across CPUs (else skipped: 77) */
    int percpu = argc > 1 && strcmp(argv[1], "cpu") == 0;
    ASSERT_U64(perfgroup__tsc_scope == PGF_TSC_SCOPE_CPU, ==, (uint64_t)percpu);
    if (!percpu && perfgroup__tsc_scope == PGF_TSC_SCOPE_CPU) {
        printf("skipped: counter intervals are not valid across CPUs here\n");
        return 77;
    }
    const uint64_t d1 = percpu ? 1 : 0; /* what case 1 discards */

    /* 1. CPU change between enter and exit: A's measure is dropped where the same-CPU check
     * applies, kept where counter intervals are valid across CPUs; B's (same CPU) kept */
    perfgroup__test_cpu_override = 0;
    perfgroup_event_begin("ev");
    uint64_t ta = __perfgroup_enter(&site_a);
    perfgroup__test_cpu_override = 1;
    uint64_t tb = __perfgroup_enter(&site_b);
    burn(1000000);
    __perfgroup_exit(&site_b, tb);
    __perfgroup_exit(&site_a, ta);
    perfgroup_event_end();
    struct perfgroup_snapshot *s = perfgroup_snapshot_take();
    ASSERT_U64(stats(s, "A")->discarded, ==, d1);
    ASSERT_U64(stats(s, "A")->activations, ==, 1 - d1);
    if (percpu)
        ASSERT_U64(stats(s, "A")->cpu_ns, ==, 0);
    else
        ASSERT_U64(stats(s, "A")->cpu_ns, >=, stats(s, "B")->cpu_ns);
    ASSERT_U64(stats(s, "B")->discarded, ==, 0);
    ASSERT_U64(stats(s, "B")->activations, ==, 1);
    ASSERT_U64(stats(s, "B")->wall_ns, >, 900000); /* its stopwatch: >= its 1 ms burn */
    ASSERT_U64(stats(s, "B")->cpu_ns, >, 0);
    perfgroup_snapshot_free(s);

    /* 2. The counter goes backwards inside a stopwatch (TSC reset): dropped */
    perfgroup_event_begin("ev");
    ta = __perfgroup_enter(&site_a);
    perfgroup__test_clock_offset = -((int64_t)1 << 40);
    __perfgroup_exit(&site_a, ta);
    perfgroup__test_clock_offset = 0; /* and forward again before the event ends */
    perfgroup_event_end();
    s = perfgroup_snapshot_take();
    uint64_t a_cpu = stats(s, "A")->cpu_ns; /* case 1's, if kept */
    ASSERT_U64(stats(s, "A")->discarded, ==, d1 + 1);
    perfgroup_snapshot_free(s);

    /* 3. A group's cycles larger than its event's (n > 1): discarded at commit */
    perfgroup_event_begin("ev");
    ta = __perfgroup_enter(&site_a);
    perfgroup__test_clock_offset = (int64_t)1 << 40;  /* jumps forward during A only */
    __perfgroup_exit(&site_a, ta);
    perfgroup__test_clock_offset = 0;
    perfgroup_event_end();
    s = perfgroup_snapshot_take();
    ASSERT_U64(stats(s, "A")->discarded, ==, d1 + 2);
    ASSERT_U64(stats(s, "A")->cpu_ns, ==, a_cpu);
    /* and a sane event after all that is counted normally */
    perfgroup_snapshot_free(s);
    int64_t w0 = mono_ns();
    perfgroup_event_begin("ev");
    ta = __perfgroup_enter(&site_a);
    burn(1000000);
    __perfgroup_exit(&site_a, ta);
    perfgroup_event_end();
    int64_t wall = mono_ns() - w0;
    s = perfgroup_snapshot_take();
    ASSERT_U64(stats(s, "A")->activations, ==, 2 - d1);
    /* counted: at least most of the 1 ms burn and at most the event's wall time (how exact
     * the CPU time is under load is runtime.blocked_nested's and accuracy.*'s to say: once,
     * under TSan on a loaded CI machine, a preemption inside the burn was charged, 2.34 ms) */
    ASSERT_U64(stats(s, "A")->cpu_ns - a_cpu, >=, 600000);
    ASSERT_U64(stats(s, "A")->cpu_ns - a_cpu, <=, (uint64_t)wall);
    perfgroup_snapshot_free(s);
    printf("ok seam\n");
    return 0;
}
