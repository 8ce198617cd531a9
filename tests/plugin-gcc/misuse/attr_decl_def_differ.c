/* SPDX-License-Identifier: MIT */
/* Declaration and definition in different groups: a warning, and the definition's group is
 * the one used (the verbose note shows the decision). */
/* perfgroup-flags: -fplugin-arg-perfgroup-verbose */
/* expect: 9: warning: 'perf_group' attribute: the definition of 'f' is in group 'def' but an earlier declaration says 'decl'; the definition wins */
/* expect: 9: note: perfgroup: instrumenting 'f' (group 'def', file group '') */
__attribute__((perf_group("decl"))) int f(int x);
__attribute__((noinline))
__attribute__((perf_group("def"))) int f(int x) { return x; }
int g(int x) { return f(x); }
