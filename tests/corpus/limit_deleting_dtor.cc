// SPDX-License-Identifier: MIT
// limit_deleting_dtor (known limit): `delete p` through a virtual destructor calls the
// deleting destructor (D0), a separate function that runs the complete destructor (D1) and
// then operator delete. Both carry the destructor's group, so one logical destruction shows
// as two nested pairs of ~Base() (both demangle to the same name).
#include <perfgroup.h>
#include <cstdio>

struct Base {
    PERF_GROUP("dtor") virtual ~Base() { std::puts("~Base"); }
};

int main()
{
    Base *volatile p = new Base;
    delete p;
    return 0;
}
