/* SPDX-License-Identifier: MIT */
/* spellings: the three spellings of the attribute, each on its own function. Compiled as
 * C2x (-std=c2x, for [[...]]) and, copied to a .cc, as C++. */
#include <perfgroup.h>
#include <stdio.h>

__attribute__((perf_group("gnu"))) int by_gnu(int x) { return x + 1; }
[[gnu::perf_group("std_gnu")]] int by_std_gnu(int x) { return x + 2; }
[[perfgroup::group("scoped")]] int by_scoped(int x) { return x + 3; }

int main(void)
{
    volatile int x = 0;
    printf("%d\n", by_gnu(x) + by_std_gnu(x) + by_scoped(x));
    return 0;
}
