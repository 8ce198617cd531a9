/* SPDX-License-Identifier: MIT */
/* nested_function: a GNU C nested function (GCC only) is instrumented as a function of its
 * own, and can be called through a pointer (trampoline) from another function. The nested
 * function's address is taken: it keeps its hooks; apply() is static and called only from
 * outer() in its group: elided. */
/* perfgroup-only: gcc */
#include <perfgroup.h>
#include <stdio.h>

PERF_GROUP("nest") static int apply(int (*f)(int), int x) { return f(x); }

PERF_GROUP("nest") int outer(int base)
{
    PERF_GROUP("nest") int add_base(int x) { return x + base; }
    return apply(add_base, 1) + add_base(2);
}

int main(void)
{
    volatile int b = 10;
    printf("%d\n", outer(b));
    return 0;
}
