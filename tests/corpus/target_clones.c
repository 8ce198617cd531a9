/* SPDX-License-Identifier: MIT */
/* target_clones: a multiversioned function (one body per target, an ifunc resolver choosing
 * at load time) is instrumented as the function itself: every version has its hooks under the
 * function's own name and group, whichever version the CPU gets; the resolver has none.
 * The group comes from default= here: clang rejects every annotate attribute, so
 * PERF_GROUP(), on a multiversioned function ("cannot be combined with attribute
 * 'annotate'"); GCC accepts both. */
/* perfgroup-options: default=simd */
/* clang 13 has no target_clones: */
/* perfgroup-only: gcc clang>=14 */
#include <stdio.h>

__attribute__((target_clones("default", "avx2"))) int sum(const int *a, int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += a[i];
    return s;
}

int main(void)
{
    int a[64];
    for (int i = 0; i < 64; i++)
        a[i] = i;
    printf("%d\n", sum(a, 64));
    return 0;
}
