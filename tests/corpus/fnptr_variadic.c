/* SPDX-License-Identifier: MIT */
/* fnptr_variadic: calls through function pointers, and a variadic function. */
#include <perfgroup.h>
#include <stdarg.h>
#include <stdio.h>

PERF_GROUP("ops") static int inc(int x) { return x + 1; }
PERF_GROUP("ops") static int dbl(int x) { return x * 2; }

PERF_GROUP("va") int sum(int n, ...)
{
    va_list ap;
    int s = 0;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        s += va_arg(ap, int);
    va_end(ap);
    return s;
}

int main(void)
{
    int (*volatile table[2])(int) = { inc, dbl };
    int r = 0;
    for (int i = 0; i < 2; i++)
        r += table[i](10);
    printf("%d %d\n", r, sum(3, 1, 2, 3));
    return 0;
}
