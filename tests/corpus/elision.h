/* SPDX-License-Identifier: MIT */
/* elision.h: a static inline function of a header, in a group (elision.c). */
#ifndef ELISION_H
#define ELISION_H
#include <perfgroup.h>

/* elided: static, its one caller (entry) is in its group */
PERF_GROUP("app") static inline int hdr_twice(int x) { return 2 * x; }

#endif
