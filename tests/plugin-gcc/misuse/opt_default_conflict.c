/* SPDX-License-Identifier: MIT */
/* Two different default= groups for one translation unit. */
/* perfgroup-flags: -fplugin-arg-perfgroup-default=a -fplugin-arg-perfgroup-default=b */
/* expect: -: error: '-fplugin-arg-perfgroup-default=b' conflicts with an earlier '-fplugin-arg-perfgroup-default=a' */
int f(void) { return 0; }
