// SPDX-License-Identifier: MIT
// cxx_members: constructors, destructors, member functions, templates (two instantiations)
// and a lambda, each instrumented; names are demangled by the harness.
#include <perfgroup.h>
#include <cstdio>

static volatile int sink;

struct Counter {
    int n;
    PERF_GROUP("obj") Counter() : n(0) { sink = 1; }
    PERF_GROUP("obj") ~Counter() { sink = n; }
    PERF_GROUP("obj") void bump(int by) { n += by; sink = n; }
};

template <class T>
PERF_GROUP("tmpl") T twice(T x)
{
    sink = 2;
    return x + x;
}

int main()
{
    {
        Counter c;
        c.bump(twice(3));
        auto lam = [&c](int v) PERF_GROUP("lambda") { c.bump(v); sink = v; };
        lam(4);
    }
    std::printf("%g\n", twice(1.5));
    return 0;
}
