/* SPDX-License-Identifier: MIT */
/* An option the plugin does not know: the error names the exact flag. */
/* perfgroup-flags: -fplugin-arg-perfgroup-defualt=core */
/* expect: -: error: unknown option '-fplugin-arg-perfgroup-defualt' (known: default=GROUP, map=FILE, exclude=GLOB, system-headers, verbose, weak-hooks, all-functions) */
int f(void) { return 0; }
