/* SPDX-License-Identifier: MIT */
/* The attribute without its group argument. */
/* expect: 4: error: wrong number of arguments specified for 'perf_group' attribute */
__attribute__((perf_group)) int f(void) { return 0; }
