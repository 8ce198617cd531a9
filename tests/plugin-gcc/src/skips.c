/* SPDX-License-Identifier: MIT */
/* skips: functions that carry a group but must never be instrumented, each for its reason. */
#include <perfgroup.h>
#include <stdio.h>

PERF_GROUP("g") __attribute__((naked)) void naked_fn(void) { __asm__("ret"); }
PERF_GROUP("g") __attribute__((no_instrument_function)) int opted_out(int x) { return x + 1; }
PERF_GROUP("g") int perfgroup_lookalike(int x) { return x + 2; }
PERF_GROUP("g") int __perfgroup_internal(int x) { return x + 3; }
PERF_GROUP("g") int kept(int x) { return x + 4; }

int main(void)
{
    volatile int x = 0;
    naked_fn();
    printf("%d\n", opted_out(x) + perfgroup_lookalike(x) + __perfgroup_internal(x) + kept(x));
    return 0;
}
