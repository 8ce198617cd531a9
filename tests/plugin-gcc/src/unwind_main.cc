// SPDX-License-Identifier: MIT
// unwind_main: a C++ exception thrown below a C frame (unwind_c.c) unwinds through it.
#include <perfgroup.h>
#include <cstdio>

extern "C" void c_middle(void (*cb)(void));

PERF_GROUP("cxx") static void thrower() { throw 42; }

int main()
{
    try {
        c_middle(thrower);
    } catch (int v) {
        std::printf("caught %d\n", v);
    }
    return 0;
}
