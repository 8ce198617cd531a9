// SPDX-License-Identifier: MIT
// The second unit of comdat.cc: it emits twice() and scale<3>() too.
#include "comdat.h"

int from_b(int x)
{
    int r = twice(x);
    return r + scale<3>(x);
}
