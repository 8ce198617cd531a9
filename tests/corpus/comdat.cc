// SPDX-License-Identifier: MIT
// comdat: an inline function and a template instance emitted by two units (each in a COMDAT
// group the linker keeps once): the same trace from either unit's calls, with both plugins.
// They have one site each in the program, not one per unit: the site is a hidden COMDAT of its
// own, so a unit that inlined every call (no copy of the function) can neither keep a
// duplicate site nor discard the other unit's function. 4 sites: main, from_b, twice,
// scale<3> (GCC: the COMDAT ones outside the perfgroup_sites section, each unit's section
// pointing at them, include/perfgroup/abi.h PERFGROUP_SITE_F_INDIRECT; before, 6: one per unit).
// perfgroup-options: default=app
// perfgroup-sources: comdat_b.cxx
// perfgroup-sites: gcc 4 clang 4
#include "comdat.h"
#include <cstdio>

int main()
{
    int r = twice(1);
    r += scale<3>(1);
    r += from_b(2);
    std::printf("%d\n", r);
    return 0;
}
