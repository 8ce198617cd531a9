/* SPDX-License-Identifier: MIT */
/* unwind_c: the C frame a C++ exception unwinds through (see unwind_main.cc). Its exit hook
 * runs on unwinding only if this file is compiled with -fexceptions. */
#include <perfgroup.h>

PERF_GROUP("c") void c_middle(void (*cb)(void)) { cb(); }
