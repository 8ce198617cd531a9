/* SPDX-License-Identifier: MIT */
/* A group that is not a string literal. */
/* expect: 4: error: 'perf_group' attribute argument must be a string literal naming a group */
__attribute__((perf_group(42))) int f(void) { return 0; }
