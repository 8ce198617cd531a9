/* SPDX-License-Identifier: MIT */
/* musttail: a guaranteed tail call leaves the caller's frame before the callee runs, so the
 * caller's exit hook goes before the call (nothing may sit between it and the ret). */
#include <perfgroup.h>
#include <stdio.h>

PERF_GROUP("mt") __attribute__((noinline)) int callee(int x) { return x + 1; }

PERF_GROUP("mt") int caller(int x)
{
    if (x < 0)
        return 0;
    __attribute__((musttail)) return callee(x);
}

int main(void)
{
    volatile int x = 1;
    printf("%d\n", caller(x));
    return 0;
}
