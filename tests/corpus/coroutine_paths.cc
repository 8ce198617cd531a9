// SPDX-License-Identifier: MIT
// coroutine_paths: the other ways a coroutine's run ends or goes on, each the same pairs with
// both plugins.
//   body(x)  an exception thrown in a resumption leaves it through resume() (unhandled_exception
//            rethrows): the run's exit runs on the way out; destroy() later is one more pair.
//   veto()   await_suspend returning false (no suspension: the run goes on, no pair ends) and an
//            awaiter that is ready (no suspension either); final_suspend is suspend_never: the
//            body's end frees the frame, the run's exit comes after.
// perfgroup-cflags: -std=c++20
// perfgroup-only: gcc clang>=14   (clang 13 finds C++20 coroutines only in libc++'s std::experimental)
#include <perfgroup.h>
#include <coroutine>
#include <cstdio>
#include <stdexcept>

struct task {
    struct promise_type {
        task get_return_object() { return task{std::coroutine_handle<promise_type>::from_promise(*this)}; }
        std::suspend_always initial_suspend() noexcept { return {}; }
        std::suspend_always final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() { throw; }
    };
    std::coroutine_handle<promise_type> h;
};

/* starts at once and frees itself at its end */
struct eager {
    struct promise_type {
        eager get_return_object() { return {}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept {}
    };
};

struct veto_awaiter {
    bool await_ready() noexcept { return false; }
    bool await_suspend(std::coroutine_handle<>) noexcept { return false; } /* do not suspend */
    int await_resume() noexcept { return 1; }
};

PERF_GROUP("leaf") void thrower(int x)
{
    if (x)
        throw std::runtime_error("boom");
}

PERF_GROUP("leaf") int step(int x) { return x + 1; }

PERF_GROUP("coro") task body(int x)
{
    co_await std::suspend_always{};
    thrower(x);
    co_await std::suspend_always{};
}

static int vetoed;

PERF_GROUP("coro2") eager veto(void)
{
    int a = co_await veto_awaiter{};
    a = step(a);
    co_await std::suspend_never{};
    vetoed = step(a);
}

int main()
{
    task t = body(1);
    t.h.resume();
    try {
        t.h.resume();
    } catch (const std::exception &e) {
        std::printf("caught %s\n", e.what());
    }
    t.h.destroy();
    veto();
    std::printf("vetoed %d\n", vetoed);
    return vetoed == 3 ? 0 : 1;
}
