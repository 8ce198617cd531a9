// SPDX-License-Identifier: MIT
// st: what only the front end knows — a group written with the PERF_GROUP macro (needs
// __PERFGROUP__ at preprocessing time) and a constructor's group (clang 14 never annotates
// constructors: it reaches the pass through the plugin's table). Used for -save-temps and
// .ll input, where the AST and the pass run in different cc1 processes.
#include <perfgroup.h>
#include <cstdio>

struct Box {
    PERF_GROUP("box") explicit Box(int v) : v(v) {}
    int v;
};

PERF_GROUP("st") int twice(int x)
{
    Box b(x);
    return 2 * b.v;
}

int main()
{
    volatile int x = 4;
    std::printf("%d\n", twice(x));
    return 0;
}
