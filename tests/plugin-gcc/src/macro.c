/* SPDX-License-Identifier: MIT */
/* macro: compiles only if the plugin predefines __PERFGROUP__ and __has_attribute sees
 * perf_group; used with -save-temps (preprocess and compile in two cc1 runs). */
#include <perfgroup.h>
#include <stdio.h>

#ifndef __PERFGROUP__
#error "__PERFGROUP__ is not defined"
#endif
#if !__has_attribute(perf_group)
#error "__has_attribute(perf_group) is false"
#endif

PERF_GROUP("st") int twice(int x) { return 2 * x; }

int main(void)
{
    volatile int x = 4;
    printf("%d\n", twice(x));
    return 0;
}
