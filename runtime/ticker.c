/* SPDX-License-Identifier: MIT */
/*
 * runtime/ticker.c — the adaptive accounting's coarse clock: a word a runtime thread,
 * "perfgroup-tick", advances every PG_TICK_NS (docs/accounting.md, "Hot threads: estimated
 * starts").
 *
 * An estimated start (hooks.c) reads no counter: its stopwatch starts at the thread's newest
 * reading, and the code run since that reading is charged to the group it starts. A long
 * stretch of code without a hook before such a start would land in the wrong group (and its
 * jank). So an estimated start first compares this word with the value its thread saw when
 * it last read the counter for a start: a different value means a tick fell in between, and
 * the start reads the counter (an exact start, outside the estimate's sampling). A stretch a
 * tick fell in is never estimated; one that is, is shorter than the longest interval between
 * two ticks (perfgroup_tick_max_ns: PG_TICK_NS plus how late the ticker ran).
 *
 * The word: even while the ticker runs at PG_TICK_NS, odd while it does not (not started,
 * a fork child before its own starts, or idle): an odd word makes every start of an
 * estimating event exact. The ticker slows to PG_TICK_IDLE_NS (odd word) after
 * PG_TICK_IDLE_TICKS ticks no estimating thread looked at, and speeds up at its next wake-up
 * once one has (perfgroup__tick_used): no hook ever wakes it (no system call in a hook), an
 * event that starts estimating while it idles starts exact for up to PG_TICK_IDLE_NS.
 * Cost: a wake-up every 2 ms while threads estimate (~10-13 us of CPU each on a KVM guest:
 * 0.47 % of one core, bench/ticker.c, docs/benchmarks.md), ten a second otherwise; one load
 * and compare per estimated start.
 *
 * Started at start-up when the accounting is adaptive (never from a hook: a thread creation),
 * in a fork child by its first perfgroup_event_begin; it takes no signal of the program.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <time.h>

#include "internal.h"

/* ThreadSanitizer cannot follow a fork of a multi-threaded process (it kills a child that
 * starts a thread, and ignores everything in one that does not, its signals delivered where
 * the runtime refuses them): the runtime built with it starts no ticker, so a program that was
 * single-threaded stays so; the word stays odd and every start of an estimating event reads
 * the counter (the adaptive paths run, nothing is estimated). */
#if defined(__SANITIZE_THREAD__)
#define PG_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PG_TSAN 1
#endif
#endif
#ifndef PG_TSAN
#define PG_TSAN 0
#endif

#define PG_TICK_NS         2000000ull   /* 2 ms */
#define PG_TICK_IDLE_NS    100000000ull /* 100 ms */
#define PG_TICK_IDLE_TICKS 500u         /* a second of ticks nobody looked at */

PG_HIDDEN _Atomic uint64_t perfgroup__tick = 1;
PG_HIDDEN _Atomic uint32_t perfgroup__tick_used;
static _Atomic uint64_t tick_max_ns;
enum { TICKER_NONE = 0, TICKER_RUNNING = 1, TICKER_OFF = 2 };
static _Atomic int ticker_state;

static void nap(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* threads in a lite event now (hooks.c, lite.c): the walk below only while there are some */
PG_HIDDEN _Atomic uint32_t perfgroup__lite_threads;

/*
 * Lite frames (hooks.c): every wake-up stores 1 into the countdown of each live thread in a
 * lite event (left > 1), so that its next transition reaches the runtime and reads the
 * counter: a stretch in which two ticks fell is charged whole, never estimated. Why this is
 * safe: the word is in the thread's pg_thread entry (the heap: entries are never unmapped,
 * a dead thread's is reused), never in its TLS, which is freed with the thread; the thread
 * itself only loads it, counts it down and stores it (no pointer is taken from it). A store
 * of ours that lands between the owner's load and its store of left - 1 is lost: the owner
 * was in a transition then (its segment was ending anyway), and the next tick stores again;
 * a long segment has no transition in flight, so the store stays. A store into an entry
 * whose thread just left its lite event (left 0 -> 1: the check raced its commit) or that a
 * new thread took makes that thread's next lite exit, if any, go through the runtime, which
 * treats it as any other (left <= 1 starts no lite frame). The owner's accesses are plain
 * 8-byte aligned loads and stores, single-copy atomic on the architectures perfgroup runs
 * on; ThreadSanitizer builds start no ticker.
 */
/* (The owner reads the word after it saw left == 1; were that order not kept — a weakly
 * ordered CPU — the forced transition would be taken for the countdown's end: a segment
 * measured because of when a tick fell, a small selection effect.) */
static void lite_force(void)
{
    if (atomic_load_explicit(&perfgroup__lite_threads, memory_order_relaxed) == 0)
        return; /* no thread in a lite event: no walk (a process of thousands of threads) */
    for (struct pg_thread *t = perfgroup__threads(); t; t = t->next)
        if (atomic_load_explicit(&t->state, memory_order_relaxed) == PG_THREAD_LIVE &&
            __atomic_load_n(&t->lite.ctl.left, __ATOMIC_RELAXED) > 1)
            __atomic_store_n(&t->lite.ctl.left, 1, __ATOMIC_RELAXED);
}

static void *ticker_main(void *arg)
{
    (void)arg;
    unsigned idle = 0;
    /* running: the word goes even (every start of an estimating event was exact till now);
     * this thread is its only writer in the process */
    int64_t prev = pg_clock_gettime_ns(CLOCK_MONOTONIC); /* the previous tick's time */
    uint64_t w0 = atomic_load_explicit(&perfgroup__tick, memory_order_relaxed);
    atomic_store_explicit(&perfgroup__tick, (w0 | 1) + 1, memory_order_relaxed);
    for (;;) {
        uint64_t w = atomic_load_explicit(&perfgroup__tick, memory_order_relaxed);
        nap((w & 1) ? PG_TICK_IDLE_NS : PG_TICK_NS);
        int used = atomic_exchange_explicit(&perfgroup__tick_used, 0, memory_order_relaxed);
        if (w & 1) { /* slow: speed up once an estimating thread looked */
            if (used) {
                idle = 0;
                prev = pg_clock_gettime_ns(CLOCK_MONOTONIC);
                atomic_store_explicit(&perfgroup__tick, w + 1, memory_order_relaxed);
                lite_force();
            }
            continue;
        }
        int64_t now = pg_clock_gettime_ns(CLOCK_MONOTONIC);
        if ((uint64_t)(now - prev) > atomic_load(&tick_max_ns))
            atomic_store(&tick_max_ns, (uint64_t)(now - prev));
        prev = now;
        idle = used ? 0 : idle + 1;
        /* the tick: odd (slow) after a second nobody looked */
        atomic_store_explicit(&perfgroup__tick, w + (idle >= PG_TICK_IDLE_TICKS ? 1 : 2),
                              memory_order_relaxed);
        lite_force(); /* after the word: the thread that comes to the runtime sees the tick */
    }
    return NULL;
}

/* Start the ticker: a one-time thread creation, never in a hook. 0 if it runs. One load
 * once it does (perfgroup_event_begin calls it for a fork child's). */
PG_HIDDEN int perfgroup__ticker_ensure(void)
{
    if (PG_TSAN)
        return 0; /* no ticker (above) */
    int expect = atomic_load_explicit(&ticker_state, memory_order_relaxed);
    if (expect != TICKER_NONE)
        return expect == TICKER_RUNNING ? 0 : -1;
    if (!atomic_compare_exchange_strong(&ticker_state, &expect, TICKER_RUNNING))
        return expect == TICKER_RUNNING ? 0 : -1;
    static const struct pg_spawn ticker = {ticker_main, "perfgroup-tick"};
    if (perfgroup__spawn(&ticker) == 0)
        return 0;
    atomic_store(&ticker_state, TICKER_OFF);
    return -1;
}

/* In a fork child (one thread): the parent's ticker is not here. The word goes odd — every
 * start of an estimating event exact — until the child's own runs: its first
 * perfgroup_event_begin starts it (not the fork: a child that execs at once, the common
 * case, would pay a thread creation for nothing). */
PG_HIDDEN void perfgroup__ticker_atfork_child(void)
{
    uint64_t w = atomic_load(&perfgroup__tick);
    atomic_store(&perfgroup__tick, w | 1);
    if (atomic_load(&ticker_state) == TICKER_RUNNING)
        atomic_store(&ticker_state, TICKER_NONE);
}

uint64_t perfgroup_tick_max_ns(void)
{
    return atomic_load_explicit(&tick_max_ns, memory_order_relaxed);
}
