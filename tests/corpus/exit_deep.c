/* SPDX-License-Identifier: MIT */
/* exit_deep: exit() three instrumented frames deep: every enter is in the trace (one write
 * per line, nothing buffered is lost), no exit is. */
/* perfgroup-exit: 3 */
#include <perfgroup.h>
#include <stdio.h>
#include <stdlib.h>

PERF_GROUP("deep") void level3(int x)
{
    if (x)
        exit(3);
}
PERF_GROUP("deep") void level2(int x) { level3(x); puts("not reached"); }
PERF_GROUP("deep") void level1(int x) { level2(x); puts("not reached"); }

int main(void)
{
    volatile int x = 1;
    level1(x);
    return 0;
}
