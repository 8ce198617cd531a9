/* SPDX-License-Identifier: MIT */
/* An empty group name. */
/* expect: 4: error: 'perf_group' attribute: the group name must not be empty */
__attribute__((perf_group(""))) int f(void) { return 0; }
