/* SPDX-License-Identifier: MIT */
/* map= with a malformed line: the error gives file:line and the flag. */
/* perfgroup-flags: -fplugin-arg-perfgroup-map=%S/malformed.map */
/* expect: -: error: %S/malformed.map:3: expected 'GLOB GROUP' (in '-fplugin-arg-perfgroup-map=%S/malformed.map') */
int f(void) { return 0; }
