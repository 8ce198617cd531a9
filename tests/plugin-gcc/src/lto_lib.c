/* SPDX-License-Identifier: MIT */
/* lto_lib: the second file of the -flto program (see lto_main.c). */
#include <perfgroup.h>

/* not static: a static helper called only from its group would be elided (no hooks) */
PERF_GROUP("lib") int lib_helper(int x) { return x * 3; }
PERF_GROUP("lib") int lib_entry(int x) { return lib_helper(x) + lib_helper(x + 1); }
