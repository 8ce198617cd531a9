/* SPDX-License-Identifier: MIT */
/* A switch given a value. */
/* perfgroup-flags: -fplugin-arg-perfgroup-system-headers=yes */
/* expect: -: error: '-fplugin-arg-perfgroup-system-headers' takes no value (got '-fplugin-arg-perfgroup-system-headers=yes') */
int f(void) { return 0; }
