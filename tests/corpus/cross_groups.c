/* SPDX-License-Identifier: MIT */
/* cross_groups: A -> B -> A, each function in its attribute group. */
#include <perfgroup.h>
#include <stdio.h>

PERF_GROUP("alpha") int leaf_a(int x);
PERF_GROUP("beta") int middle_b(int x);

PERF_GROUP("alpha") int top_a(int x) { return middle_b(x + 1) * 2; }
PERF_GROUP("beta") int middle_b(int x) { return leaf_a(x + 1) + 1; }
PERF_GROUP("alpha") int leaf_a(int x) { return x * 3; }

int main(void)
{
    volatile int x = 1;
    printf("%d\n", top_a(x));
    return 0;
}
