// SPDX-License-Identifier: MIT
// tests/coroutines/coro_cpu.cc — built with a plugin: the coroutine `crunch` (group "coro")
// burns ~1 ms of CPU in each of its N resumptions, the first N/2 resumed by main, the rest by
// a second thread, then main destroys the suspended frame. Before, GCC charged only the ramp
// (the call that creates the coroutine: 0.01 ms for all of it) and clang skipped coroutines.
// Checks the process's snapshot: "coro" has one activation and one event per run of the body
// (the first call, N resumptions, the destruction: N + 2), its CPU time is the CPU its
// resumptions used (truth: each thread's CPU clock around each resume(), summed; the hooks'
// cost and the clock reads are inside the truth, so within 10 % below and 0.5 ms above), and
// its longest event is one resumption's, not the whole run's. Exit 0 = pass.
#include <perfgroup.h>
#include <coroutine>
#include <cstdio>
#include <exception>
#include <pthread.h>
#include <time.h>

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

__attribute__((no_instrument_function)) static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

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

__attribute__((no_instrument_function)) static void resume_timed(task &t, int who)
{
    double t0 = cpu_ms();
    t.h.resume();
    double d = cpu_ms() - t0;
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
    double c0 = cpu_ms();
    task t = crunch(); /* the first run of the body: up to initial_suspend */
    double first = cpu_ms() - c0;
    for (int i = 0; i < N / 2; i++)
        resume_timed(t, 0);
    pthread_t th;
    if (pthread_create(&th, nullptr, worker, &t) != 0 || pthread_join(th, nullptr) != 0) {
        std::printf("FAIL: pthread_create\n");
        return 1;
    }
    c0 = cpu_ms();
    t.h.destroy();
    double last = cpu_ms() - c0;
    double truth = truth_ms[0] + truth_ms[1] + first + last;

    struct perfgroup_snapshot *s = perfgroup_snapshot_take();
    const struct perfgroup_stats *g = s ? perfgroup_snapshot_find(s, "coro") : nullptr;
    if (!g) {
        std::printf("FAIL: no group 'coro' in the snapshot\n");
        return 1;
    }
    double cpu = g->cpu_ns / 1e6, max_ms = g->max_event_ns / 1e6;
    bool ok = g->activations == N + 2 && g->events == N + 2 && cpu >= 0.9 * truth &&
              cpu <= truth + 0.5 && max_ms <= longest_ms + 0.5 && max_ms < truth / 4;
    std::printf("%s coro: %llu activations, %llu events (want %d each); CPU %.3f ms, truth %.3f ms "
                "(main %.3f, worker %.3f); longest event %.3f ms, longest resumption %.3f ms\n",
                ok ? "ok" : "FAIL", (unsigned long long)g->activations,
                (unsigned long long)g->events, N + 2, cpu, truth, truth_ms[0], truth_ms[1], max_ms,
                longest_ms);
    perfgroup_snapshot_free(s);
    return ok ? 0 : 1;
}
