/* SPDX-License-Identifier: MIT */
/* inline: static inline and C99 inline functions are inlined at -O2 but keep one enter/exit
 * pair per logical call (the pair is part of the body that gets inlined). */
#include <perfgroup.h>
#include <stdio.h>

PERF_GROUP("inl") static inline int square(int x) { return x * x; }
PERF_GROUP("inl") inline int cube(int x) { return x * square(x); }
extern inline int cube(int x); /* the external definition of cube lives in this TU */

int main(void)
{
    volatile int x = 3;
    int r = square(x) + cube(x);
    printf("%d\n", r);
    return 0;
}
