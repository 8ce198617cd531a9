/* SPDX-License-Identifier: MIT */
/* opts: the target of the option tests (default=, map=, exclude=, system-headers). */
#include <perfgroup.h>
#include <stdio.h>
#include <sysh.h>

PERF_GROUP("attr") int alpha(int x) { return x + 1; }
int beta(int x) { return alpha(x) * 2; }
int skipme(int x) { return x - 1; }

int main(void)
{
    volatile int x = 1;
    printf("%d\n", beta(x) + skipme(x) + sys_helper(x));
    return 0;
}
