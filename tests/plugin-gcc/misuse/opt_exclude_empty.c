/* SPDX-License-Identifier: MIT */
/* exclude= with an empty pattern list. */
/* perfgroup-flags: -fplugin-arg-perfgroup-exclude= */
/* expect: -: error: '-fplugin-arg-perfgroup-exclude' needs a value: '-fplugin-arg-perfgroup-exclude=GLOB' */
int f(void) { return 0; }
