// SPDX-License-Identifier: MIT
// elision_cxx: elision (elision.c) in C++: templates, lambdas, an anonymous namespace, a
// virtual member, a lambda through std::function. Each function says which case it is.
// (Known limit, perfgroup-clang: clang names the lambdas of a non-inline function $_0, $_1, …
// in the order its code generator first mangles them, the plugin's front end in source order;
// where the two differ a lambda's site gets another lambda's row. Here they agree.)
#include <perfgroup.h>
#include <cstdio>
#include <functional>

namespace {
// elided: internal (anonymous namespace) template, called only from helper, in its group
template <class T> PERF_GROUP("cx") T sq(T x) { return x * x; }
// elided: internal, its one caller (run) is in its group
PERF_GROUP("cx") int helper(int x) { return sq(x) + sq(x + 1); }
struct Base {
    virtual int f(int) = 0;
    virtual ~Base() {}
};
// kept: virtual (its address is in the vtable)
struct Impl : Base {
    PERF_GROUP("cx") int f(int x) override { return x + 1; }
};
}  // namespace

// kept: externally visible (an inline template's instantiation: any unit may call it)
template <class T> PERF_GROUP("cx") T twice(T x) { return x + x; }

// kept: externally visible
PERF_GROUP("cx") __attribute__((noinline)) int via_function(int x)
{
    // kept: called through std::function (its invoker is not instrumented)
    std::function<int(int)> stored = [](int v) PERF_GROUP("cx") { return v - 5; };
    return stored(x);
}

// kept: externally visible
PERF_GROUP("cx") __attribute__((noinline)) int run(int x)
{
    // elided: a lambda called directly, from its group
    auto direct = [](int v) PERF_GROUP("cx") { return v * 5; };
    Impl i;
    Base &b = i;
    return helper(x) + twice(x) + direct(x) + via_function(x) + b.f(x);
}

int main()
{
    volatile int x = 2;
    std::printf("%d\n", run(x));
    return 0;
}
