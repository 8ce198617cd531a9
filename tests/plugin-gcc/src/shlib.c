/* SPDX-License-Identifier: MIT */
/* shlib: a shared library with sites of its own (it registers them from its own module
 * constructor: the executable's __start_/__stop_ bounds do not cover them). */
#include <perfgroup.h>

PERF_GROUP("lib") static int lib_inner(int x) { return x + 40; }
PERF_GROUP("lib") __attribute__((visibility("default"))) int lib_work(int x) { return lib_inner(x); }
