/* SPDX-License-Identifier: MIT */
/* cunwind (C part, built with -fexceptions): a C frame between two C++ frames. Clang gives it
 * no personality routine; the plugin adds __gcc_personality_v0 so its exit hook runs when the
 * C++ exception unwinds through it. */
#include <perfgroup.h>

PERF_GROUP("c") void c_middle(void (*cb)(int), int x) { cb(x); }
