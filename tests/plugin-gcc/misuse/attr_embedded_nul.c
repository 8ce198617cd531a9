/* SPDX-License-Identifier: MIT */
/* A group name with a NUL inside would be cut short in the site's "attr\0file\0" string. */
/* expect: 4: error: 'perf_group' attribute: the group name must not contain a NUL character */
__attribute__((perf_group("a\0b"))) int f(void) { return 0; }
