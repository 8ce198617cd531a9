// SPDX-License-Identifier: MIT
// coroutine: a C++20 coroutine's body is charged where it runs, once per resumption. Both
// compilers split a coroutine: GCC into the ramp (the function called: allocates the frame,
// calls the actor once), the actor (the body: every resumption) and a destroyer; LLVM into the
// ramp (the body up to the first suspension), .resume and .destroy clones. Each plugin charges
// the body as the coroutine itself (its group, its name): one pair per run from one
// suspension to the next, on the thread that resumes it, and the destruction of a suspended
// frame (its locals' destructors run) as one more. What the ramp does before the body (the
// frame's allocation, the promise's construction, get_return_object) is charged to the
// caller (comdat_sets.cc instruments those too); the resumption of
// another coroutine it transfers to (symmetric transfer) is that coroutine's.
//
// gen(n) suspends at its start, then after each value (suspend_always); ints() is a second
// coroutine (a symmetric transfer: gen's final awaiter resumes it), `pump` a plain function
// of another group that resumes gen (gen's pairs nest in pump's), `inner` a function gen calls
// (its pair nests in gen's), make_ints a plain function of ints' group that creates it.
// perfgroup-cflags: -std=c++20
// perfgroup-only: gcc clang>=14   (clang 13 finds C++20 coroutines only in libc++'s std::experimental)
#include <perfgroup.h>
#include <coroutine>
#include <cstdio>
#include <exception>

struct gen {
    struct promise_type {
        int value = 0;
        std::coroutine_handle<> next; /* resumed by the final awaiter: symmetric transfer */
        gen get_return_object() { return gen{std::coroutine_handle<promise_type>::from_promise(*this)}; }
        std::suspend_always initial_suspend() noexcept { return {}; }
        struct final_awaiter {
            bool await_ready() noexcept { return false; }
            std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept
            {
                return h.promise().next ? h.promise().next : std::noop_coroutine();
            }
            void await_resume() noexcept {}
        };
        final_awaiter final_suspend() noexcept { return {}; }
        std::suspend_always yield_value(int v) noexcept
        {
            value = v;
            return {};
        }
        void return_void() noexcept {}
        void unhandled_exception() { std::terminate(); }
    };
    std::coroutine_handle<promise_type> h;
};

PERF_GROUP("leaf") int inner(int i) { return i * 10; }

struct ctx {
    int *sink;
    ~ctx() { *sink += 1; }
};

static int destroyed;

PERF_GROUP("coro") gen gen_values(int n)
{
    ctx c{&destroyed};
    for (int i = 1; i <= n; i++)
        co_yield inner(i);
}

/* Static, and its one caller is in its group: an ordinary function would lose its hooks
 * (elision); a coroutine keeps them, its resumptions come from anywhere (here, gen's). */
PERF_GROUP("coro2") static gen ints(void)
{
    co_yield 7;
}

PERF_GROUP("coro2") gen make_ints(void)
{
    return ints();
}

PERF_GROUP("pump") int pump(gen &g)
{
    g.h.resume();
    return g.h.done() ? -1 : g.h.promise().value;
}

int main()
{
    gen g = gen_values(2); /* runs nothing of the body: initial_suspend */
    int a = pump(g);       /* 10 */
    int b = pump(g);       /* 20 */
    gen g2 = make_ints();
    g.h.promise().next = g2.h;
    g.h.resume(); /* gen runs to its final suspension, which transfers to ints: 7 */
    int c = g2.h.promise().value;
    g.h.destroy(); /* ctx's destructor ran when the body ended: destroys the frame only */
    g2.h.destroy(); /* ints is suspended at its yield: its frame's destruction is charged */
    std::printf("%d %d %d %d\n", a, b, c, destroyed);
    return a == 10 && b == 20 && c == 7 && destroyed == 1 ? 0 : 1;
}
