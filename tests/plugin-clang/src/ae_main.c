/* SPDX-License-Identifier: MIT */
/* ae_main: an `extern inline` gnu_inline definition is an available_externally body in the IR:
 * at -O2 the call is inlined from it, so that body must carry the hooks (ae_lib.c has the
 * out-of-line definition the -O0 call goes to). Either way: one pair per call. */
#include <perfgroup.h>
#include <stdio.h>

extern inline __attribute__((gnu_inline)) PERF_GROUP("ae") int twice(int x) { return 2 * x; }

int main(void)
{
    volatile int x = 21;
    printf("%d\n", twice(x));
    return 0;
}
