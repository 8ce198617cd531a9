/* SPDX-License-Identifier: MIT */
/* mapped: map= gives every function of this file the file group "core"; one function also
 * has an attribute group, so its site carries both. main is instrumented too (file group). */
/* perfgroup-options: map=%S/mapped.map */
#include <perfgroup.h>
#include <stdio.h>

PERF_GROUP("addon") int both(int x) { return x + 1; }
int file_only(int x) { return both(x) * 2; }

int main(void)
{
    volatile int x = 1;
    printf("%d\n", file_only(x));
    return 0;
}
