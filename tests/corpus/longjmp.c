/* SPDX-License-Identifier: MIT */
/* longjmp: longjmp out of two instrumented frames skips both exit hooks (in trace mode they
 * are recorded up to the resynchronisation that drops them); the same call, made again from the same place, is traced normally, and the
 * runtime drops the two stale frames when it sees it (the same call instruction at the same
 * stack position cannot be live twice), so `jmp` is charged again — on both compilers. */
#include <perfgroup.h>
#include <setjmp.h>
#include <stdio.h>

static jmp_buf env;

PERF_GROUP("jmp") void inner(int x)
{
    if (x)
        longjmp(env, 1);
}
PERF_GROUP("jmp") void outer(int x) { inner(x); puts("returned"); }
PERF_GROUP("jmp") int later(int x) { return x + 1; }

int main(void)
{
    for (volatile int i = 0; i < 2; i++)
        if (!setjmp(env))
            outer(i == 0); /* one call site: the second call resynchronises exactly */
    printf("%d\n", later(1));
    return 0;
}
