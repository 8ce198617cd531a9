// SPDX-License-Identifier: MIT
// tests/coroutines/coro_cpu.cc — built with a plugin: the coroutine `crunch` (group "coro")
// burns ~1 ms of CPU in each of its N resumptions, the first N/2 resumed by main, the rest by
// a second thread, then main destroys the suspended frame. Before, GCC charged only the ramp
// (the call that creates the coroutine: 0.01 ms for all of it) and clang skipped coroutines.
// Checks the process's snapshot: "coro" has one activation and one event per run of the body
// (the first call, N resumptions, the destruction: N + 2), its CPU time is the CPU its
// resumptions used (truth: each thread's CPU clock around each resume(), summed; the hooks'
// cost and the clock reads are inside the truth: within the sum of each run's bound, from
// docs/accounting.md "Error bounds", tests/bounds/bounds.h), and its longest event is one
// resumption's, not the whole run's. Exit 0 = pass.
#include <perfgroup.h>
#include <coroutine>
#include <cstdio>
#include <exception>
#include <pthread.h>
#include <time.h>

#include "../bounds/bounds.h"

#define N 40

struct task {
    struct promise_type {
        task get_return_object() { return task{std::coroutine_handle<promise_type>::from_promise(*this)}; }
        std::suspend_always initial_suspend() noexcept { return {}; }
        std::suspend_always final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() { std::terminate(); }
    };
    std::coroutine_handle<promise_type> h;
};

static volatile unsigned sink;

PERF_GROUP("coro") task crunch(void)
{
    for (;;) {
        unsigned s = sink;
        for (unsigned i = 0; i < 400000; i++) /* ~1 ms, more under load or sanitizers */
            s = s * 1664525u + 1013904223u;
        sink = s;
        co_await std::suspend_always{};
    }
}

static double truth_ms[2]; /* per thread: main, worker */
static double longest_ms;
static int64_t bound_ns, longest_bound_ns; /* the runs' bounds summed; the largest one */
static int64_t run_stolen_ns;                /* the most stolen from one run (bounds.h) */

/* One run of the body, an implicit event: its bound (measured, else the sampler's estimate). */
__attribute__((no_instrument_function)) static double account(const pg_obs &o0, const pg_obs &o1)
{
    pg_cfg cfg = pg_cfg_now();
    int64_t b = cfg.measured ? pg_bound_measured(o1.cpu - o0.cpu, &o0, &o1)
                             : pg_bound_sampled(&cfg, &o0, &o1);
    __atomic_fetch_add(&bound_ns, b, __ATOMIC_RELAXED);
    if (b > longest_bound_ns)
        longest_bound_ns = b;
    int64_t st = pg_stolen(&o0, &o1);
    if (st > run_stolen_ns)
        run_stolen_ns = st;
    return (double)(o1.cpu - o0.cpu) / 1e6;
}

__attribute__((no_instrument_function)) static void resume_timed(task &t, int who)
{
    pg_obs o0 = pg_obs_now();
    t.h.resume();
    pg_obs o1 = pg_obs_now();
    double d = account(o0, o1);
    truth_ms[who] += d;
    if (d > longest_ms)
        longest_ms = d;
}

__attribute__((no_instrument_function)) static void *worker(void *arg)
{
    task *t = static_cast<task *>(arg);
    for (int i = N / 2; i < N; i++)
        resume_timed(*t, 1);
    return nullptr;
}

__attribute__((no_instrument_function)) int main(void)
{
    int64_t steal0 = pg_steal_ns();
    pg_obs o0 = pg_obs_now();
    task t = crunch(); /* the first run of the body: up to initial_suspend */
    pg_obs o1 = pg_obs_now();
    double first = account(o0, o1);
    for (int i = 0; i < N / 2; i++)
        resume_timed(t, 0);
    pthread_t th;
    if (pthread_create(&th, nullptr, worker, &t) != 0 || pthread_join(th, nullptr) != 0) {
        std::printf("FAIL: pthread_create\n");
        return 1;
    }
    o0 = pg_obs_now();
    t.h.destroy();
    o1 = pg_obs_now();
    double last = account(o0, o1);
    double truth = truth_ms[0] + truth_ms[1] + first + last;

    struct perfgroup_snapshot *s = perfgroup_snapshot_take();
    const struct perfgroup_stats *g = s ? perfgroup_snapshot_find(s, "coro") : nullptr;
    if (!g) {
        std::printf("FAIL: no group 'coro' in the snapshot\n");
        return 1;
    }
    double cpu = g->cpu_ns / 1e6, max_ms = g->max_event_ns / 1e6;
    /* the runs are short against /proc/stat's 10 ms steal ticks: the time stolen from the
     * vCPUs over the whole test (+ 1 tick) bounds what the runs' own terms missed of it */
    double stolen = pg_steal_between(steal0, pg_steal_ns()) / 1e6;
    double bound = bound_ns / 1e6 + stolen, lbound = longest_bound_ns / 1e6;
    /* one resumption's event, not a run of them: under a quarter of all of them by the CPU
     * clock, + the most stolen from one run (the event is a stopwatch's, docs/accounting.md
     * "Error bounds"); an event spanning the runs reads all of them */
    double run_stolen = run_stolen_ns / 1e6;
    bool ok = g->activations == N + 2 && g->events == N + 2 && cpu >= truth - bound &&
              cpu <= truth + bound && max_ms <= longest_ms + lbound && max_ms < truth / 4 + run_stolen;
    std::printf("%s coro: %llu activations, %llu events (want %d each); CPU %.3f ms, truth %.3f "
                "+- %.3f ms (main %.3f, worker %.3f); longest event %.3f ms, longest resumption "
                "%.3f ms (+- %.3f)\n", ok ? "ok" : "FAIL", (unsigned long long)g->activations,
                (unsigned long long)g->events, N + 2, cpu, truth, bound, truth_ms[0], truth_ms[1],
                max_ms, longest_ms, lbound);
    perfgroup_snapshot_free(s);
    return ok ? 0 : 1;
}
