/* SPDX-License-Identifier: MIT */
/* The definition first, a redeclaration in another group after it: the definition still
 * wins, whatever order GCC merges the attributes in. */
/* perfgroup-flags: -fplugin-arg-perfgroup-verbose */
/* expect: 7: warning: 'perf_group' attribute: the definition of 'f' is in group 'def' but an earlier declaration says 'decl'; the definition wins */
/* expect: 7: note: perfgroup: instrumenting 'f' (group 'def', file group '') */
__attribute__((perf_group("def"))) int f(int x) { return x; }
__attribute__((perf_group("decl"))) int f(int x);
int g(int x) { return f(x); }
