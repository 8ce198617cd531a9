/* SPDX-License-Identifier: MIT */
/* lto_main: with lto_lib.c, a two-file program built with -flto: calls across files are
 * inlined at link time, and every instrumented call keeps its pair. */
#include <perfgroup.h>
#include <stdio.h>

int lib_entry(int x);

PERF_GROUP("app") static int app_step(int x) { return lib_entry(x) + 1; }

int main(void)
{
    volatile int x = 2;
    printf("%d\n", app_step(x));
    return 0;
}
