/* SPDX-License-Identifier: MIT */
/* limit_const (known limit): a function declared const (or pure) may be called once for two
 * calls in the source: the optimiser merges the calls by the declaration's promise, which the
 * inserted hooks cannot change. -O0 shows two pairs, -O2 one (limit_const.O0/O2.expected). */
#include <perfgroup.h>
#include <stdio.h>

PERF_GROUP("cse") __attribute__((const, noinline)) int cube(int x) { return x * x * x; }

int main(void)
{
    volatile int in = 3;
    int x = in;
    int a = cube(x);
    int b = cube(x);   /* same argument: CSE'd with the call above at -O1 and up */
    printf("%d\n", a + b);
    return 0;
}
