// SPDX-License-Identifier: MIT
// comdat_sets: two units whose sets of COMDAT functions differ (this one: obj::values, a
// lambda coroutine; both: the promise's members and counter<3>), every function in one group
// (default=): the program links, gives one trace with every compiler and holds one site per
// function, 11. A GCC plugin that put the COMDAT sites in a section of their own failed to
// link it at -O2 (GCC groups every COMDAT variable of one named section under the first one's
// COMDAT group: "multiple definition of __perfgroup_site_..."), docs/plugins.md.
// perfgroup-options: default=app
// perfgroup-cflags: -std=c++20
// perfgroup-sources: comdat_sets_b.cxx
// perfgroup-sites: gcc 11 clang 11
// perfgroup-only: gcc clang>=14   (clang 13 finds C++20 coroutines only in libc++'s std::experimental)
#include "comdat_sets.h"
#include <cstdio>

int drain(gen g)
{
    int s = 0;
    while (g.h.resume(), !g.h.done())
        s += g.h.promise().value;
    g.h.destroy();
    return s;
}

int main()
{
    obj o;
    auto lam = [](int n) -> gen {
        for (int i = 0; i < n; i++)
            co_yield i;
    };
    int s = drain(counter<3>(4)) + drain(o.values(3)) + drain(lam(5)) + from_b();
    std::printf("%d\n", s);
    return s == 18 + 18 + 10 + 18 ? 0 : 1;
}
