/* SPDX-License-Identifier: MIT */
/* elision_all: elision.c with all-functions (the profiling mode): every instrumented function
 * keeps its hooks, so the trace has the whole call tree, elided functions too. */
/* perfgroup-options: all-functions */
#include "elision.c"
