/* SPDX-License-Identifier: MIT */
/* ae_lib: the out-of-line definition of ae_main.c's gnu_inline function. */
#include <perfgroup.h>

PERF_GROUP("ae") int twice(int x);
PERF_GROUP("ae") int twice(int x) { return 2 * x; }
