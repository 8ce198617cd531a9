/* SPDX-License-Identifier: MIT */
/* early_return: every return path of a function runs the exit hook exactly once. */
#include <perfgroup.h>
#include <stdio.h>

PERF_GROUP("ret") int classify(int x)
{
    if (x < 0)
        return -1;
    for (int i = 0; i < 10; i++)
        if (i == x)
            return i;      /* from inside a loop */
    switch (x) {
    case 10: return 100;
    default: break;
    }
    return 1000;
}

PERF_GROUP("ret") void maybe_print(int x)
{
    if (!x)
        return;            /* early return from a void function */
    printf("x=%d\n", x);
}

int main(void)
{
    volatile int in[4] = { -5, 3, 10, 42 };
    int sum = 0;
    for (int i = 0; i < 4; i++)
        sum += classify(in[i]);
    maybe_print(0);
    maybe_print(sum);
    return 0;
}
