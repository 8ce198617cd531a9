/* SPDX-License-Identifier: MIT */
/* basic: one annotated function called twice from an uninstrumented main. */
#include <perfgroup.h>
#include <stdio.h>

PERF_GROUP("basic") int add(int a, int b) { return a + b; }

int main(void)
{
    volatile int x = 1;
    printf("%d %d\n", add(x, 2), add(x, 3));
    return 0;
}
