/* SPDX-License-Identifier: MIT */
/* recursion: a recursive function gets one enter/exit pair per call, properly nested, even
 * when the optimiser would like to turn the recursion into a loop. */
#include <perfgroup.h>
#include <stdio.h>

PERF_GROUP("rec") unsigned fact(unsigned n)
{
    if (n <= 1)
        return 1;
    return n * fact(n - 1);
}

int main(void)
{
    volatile unsigned n = 4;
    printf("%u\n", fact(n));
    return 0;
}
