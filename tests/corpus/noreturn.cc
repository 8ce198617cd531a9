// SPDX-License-Identifier: MIT
// noreturn: a [[noreturn]] instrumented function leaves by throwing; its exit hook and its
// caller's run on unwinding although no normal return path exists.
#include <perfgroup.h>
#include <cstdio>

[[noreturn]] PERF_GROUP("nr") void fail(int code) { throw code; }
PERF_GROUP("nr") int check(int x)
{
    if (x > 0)
        fail(x);
    return x;
}

int main()
{
    volatile int x = 7;
    try {
        check(x);
    } catch (int code) {
        std::printf("caught %d\n", code);
    }
    return check(0);
}
