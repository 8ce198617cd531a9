/* SPDX-License-Identifier: MIT */
/* default= without its GROUP. */
/* perfgroup-flags: -fplugin-arg-perfgroup-default */
/* expect: -: error: '-fplugin-arg-perfgroup-default' needs a value: '-fplugin-arg-perfgroup-default=GROUP' */
int f(void) { return 0; }
