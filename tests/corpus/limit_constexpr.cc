// SPDX-License-Identifier: MIT
// limit_constexpr (known limit, GCC only): g++ evaluates calls of constexpr functions (and
// lambdas, implicitly constexpr) with constant arguments at compile time even outside
// constant expressions: always for a variable's initializer, from -O1 on for a call argument.
// Folded calls leave no hook pair: -O0 shows one pair (the argument), -O2 none.
// Clang keeps the runtime call, hence gcc-only.
// perfgroup-only: gcc
#include <perfgroup.h>
#include <cstdio>

PERF_GROUP("cx") constexpr int square(int x) { return x * x; }

int main()
{
    int r = square(7);             // folded at every -O level: never traced
    std::printf("%d\n", square(8)); // a call at -O0, folded at -O2
    return r - 49;
}
