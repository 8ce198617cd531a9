// SPDX-License-Identifier: MIT
// cunwind (C++ part): throws through the C frame of cunwind.c.
#include <perfgroup.h>
#include <cstdio>

extern "C" void c_middle(void (*cb)(int), int x);

extern "C" PERF_GROUP("cxx") void boom(int x)
{
    if (x)
        throw x;
}

PERF_GROUP("cxx") int outer(int x)
{
    try {
        c_middle(boom, x);
    } catch (int v) {
        return v;
    }
    return 0;
}

int main()
{
    volatile int x = 5;
    std::printf("%d\n", outer(x));
    return 0;
}
