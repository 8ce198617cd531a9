/* SPDX-License-Identifier: MIT */
/* The attribute on a variable: a warning naming the attribute, then ignored. */
/* expect: 4: warning: 'perf_group' attribute only applies to functions; ignored */
__attribute__((perf_group("x"))) int not_a_function;
int f(void) { return not_a_function; }
