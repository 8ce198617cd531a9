/* SPDX-License-Identifier: MIT */
/* longjmp: longjmp out of two instrumented frames skips both exit hooks (nothing is traced
 * for them); the next instrumented call is traced normally. */
#include <perfgroup.h>
#include <setjmp.h>
#include <stdio.h>

static jmp_buf env;

PERF_GROUP("jmp") void inner(int x)
{
    if (x)
        longjmp(env, 1);
}
PERF_GROUP("jmp") void outer(int x) { inner(x); puts("not reached"); }
PERF_GROUP("jmp") int later(int x) { return x + 1; }

int main(void)
{
    volatile int x = 1;
    if (!setjmp(env))
        outer(x);
    printf("%d\n", later(x));
    return 0;
}
