// SPDX-License-Identifier: MIT
// target_versions: C++ function multiversioning — target_clones and one definition per
// target("...") — shows each function under its own name, whichever version the CPU runs
// (GCC names the avx2 version _Z4kindv.avx2, clang kind.avx2 / sum.avx2.0: the site shows
// kind(), sum()); the ifunc resolvers have no hooks.
// perfgroup-options: default=simd
// clang 13 has no target_clones:
// perfgroup-only: gcc clang>=14
#include <cstdio>

__attribute__((target_clones("default", "avx2"))) int sum(const int *a, int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += a[i];
    return s;
}

__attribute__((target("default"))) int kind() { return 0; }
__attribute__((target("avx2"))) int kind() { return 1; }

int main()
{
    int a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int s = sum(a, 8);
    int k = kind();
    std::printf("%d %d\n", s, k >= 0);
    return 0;
}
