/* SPDX-License-Identifier: MIT */
/* map= naming a file that does not exist. */
/* perfgroup-flags: -fplugin-arg-perfgroup-map=%S/no-such.map */
/* expect: -: error: '-fplugin-arg-perfgroup-map=%S/no-such.map': cannot open '%S/no-such.map': No such file or directory */
int f(void) { return 0; }
