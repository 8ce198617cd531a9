/* SPDX-License-Identifier: MIT */
/* The annotate spelling <perfgroup.h> uses for clang, written by hand with no group. */
/* expect: 4: error: 'perf_group' attribute: the group name must not be empty */
__attribute__((annotate("perfgroup:"))) int f(void) { return 0; }
