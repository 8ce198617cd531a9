// SPDX-License-Identifier: MIT
// comdat_sets_b.cxx — the second unit of comdat_sets.cc: counter<3> and the promise's members
// again, without obj::values or the lambda.
#include "comdat_sets.h"

int from_b(void) { return drain(counter<3>(4)); }
