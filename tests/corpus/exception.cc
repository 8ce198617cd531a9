// SPDX-License-Identifier: MIT
// exception: a C++ exception thrown in the innermost of three instrumented frames unwinds
// through all three; every frame's exit hook runs (innermost first), then main carries on.
#include <perfgroup.h>
#include <cstdio>
#include <stdexcept>

PERF_GROUP("exc") void thrower(int x)
{
    if (x > 0)
        throw std::runtime_error("boom");
}
PERF_GROUP("exc") void middle(int x) { thrower(x); std::puts("not reached"); }
PERF_GROUP("exc") void outer(int x) { middle(x); std::puts("not reached"); }
PERF_GROUP("exc") void after(void) { std::puts("after"); }

int main()
{
    volatile int x = 1;
    try {
        outer(x);
    } catch (const std::exception &e) {
        std::printf("caught %s\n", e.what());
    }
    after();
    return 0;
}
