/* SPDX-License-Identifier: MIT */
/* ae_main: an `extern inline` gnu_inline definition is an available_externally body in the IR:
 * at -O2 the call is inlined from it, so that body must carry the hooks (ae_lib.c has the
 * out-of-line definition for the program to link). Either way: one pair per call. always_inline:
 * with the lite-frame sequence (ABI 3) clang 14's inliner costs this body 335 against its
 * threshold of 325 for an inline function, and the test is of the body's instrumentation,
 * not of the inliner's threshold (docs/plugins.md, "Lite frames"). */
#include <perfgroup.h>
#include <stdio.h>

extern inline __attribute__((gnu_inline, always_inline)) PERF_GROUP("ae") int twice(int x) { return 2 * x; }

int main(void)
{
    volatile int x = 21;
    printf("%d\n", twice(x));
    return 0;
}
