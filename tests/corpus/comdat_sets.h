// SPDX-License-Identifier: MIT
// comdat_sets.h — shared by comdat_sets.cc and comdat_sets_b.cxx: a generator type whose
// promise members, a template coroutine and a member coroutine are inline (COMDAT) functions
// of both units; each unit also has COMDAT functions the other lacks.
#include <perfgroup.h>
#include <coroutine>
#include <exception>

struct gen {
    struct promise_type {
        int value = 0;
        gen get_return_object() { return gen{std::coroutine_handle<promise_type>::from_promise(*this)}; }
        std::suspend_always initial_suspend() noexcept { return {}; }
        std::suspend_always final_suspend() noexcept { return {}; }
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

template <int K> gen counter(int n)
{
    for (int i = 0; i < n; i++)
        co_yield i * K;
}

struct obj {
    int base = 5;
    gen values(int n)
    {
        for (int i = 0; i < n; i++)
            co_yield base + i;
    }
};

int drain(gen g);
int from_b(void);
