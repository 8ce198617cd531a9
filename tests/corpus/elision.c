/* SPDX-License-Identifier: MIT */
/* elision: hooks only where a group can be entered (docs/plugins.md, "Elision"). A function
 * that is not externally visible, whose address is never taken and whose every caller in the
 * unit is instrumented with the same groups, none of them beginning an event or a nested loop
 * or being main or a thread's start routine, can only ever be a re-entry: no hooks, so not in
 * the trace. Every other case keeps its hooks; each function says which case it is. */
#include <perfgroup.h>
#include <stdio.h>
#include "elision.h"

/* elided: static, called only from functions of its group (mid, twice from it) */
PERF_GROUP("app") static int leaf(int x) { return x * 3; }
/* elided: static, its one caller (entry) is in its group */
PERF_GROUP("app") static int mid(int x) { return leaf(x) + leaf(x + 1); }
/* elided: recursive within its group, first called from entry */
PERF_GROUP("app") static int fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }
/* kept: its address is taken (a callback: whoever holds the pointer may call it) */
PERF_GROUP("app") static int by_callback(int x) { return x + 7; }
/* kept: called from another group's function too */
PERF_GROUP("app") static int shared(int x) { return x - 1; }
/* kept: called from a function with no group */
PERF_GROUP("app") static int from_plain(int x) { return x ^ 5; }
/* kept: called from a function that begins events (each call is in an event of its own) */
PERF_GROUP("app") static int per_event(int x) { return x + 2; }
/* kept: called from a function that begins a nested loop (a new iteration) */
PERF_GROUP("app") static int in_nested(int x) { return x + 3; }
/* kept, both: recursion across groups (each has a caller in the other group) */
PERF_GROUP("other") static int pong(int n);
PERF_GROUP("app") static int ping(int n) { return n > 0 ? pong(n - 1) + 1 : 0; }
PERF_GROUP("other") static int pong(int n) { return n > 0 ? ping(n - 1) : 0; }

/* no group: calls what it is given */
__attribute__((noinline)) int call_with(int (*f)(int), int x) { return f(x); }
__attribute__((noinline)) int plain(int x) { return from_plain(x); }

/* kept: exported (externally visible: callers outside this unit) */
PERF_GROUP("other") int other_entry(int x) { return shared(x) * 2; }

PERF_GROUP("app") int entry(int x)
{
    return mid(x) + fact(3) + shared(x) + hdr_twice(x) + ping(3) + call_with(by_callback, x);
}

PERF_GROUP("app") int ticks(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++) {
        perfgroup_event_begin("tick");
        s += per_event(i);
        perfgroup_event_end();
    }
    return s;
}

PERF_GROUP("app") int nested(int x)
{
    perfgroup_nested_loop_begin();
    int r = in_nested(x);
    perfgroup_nested_loop_end();
    return r;
}

int main(void)
{
    volatile int x = 4;
    int r = entry(x) + other_entry(x) + plain(x) + ticks(2) + nested(x);
    printf("%d\n", r);
    return 0;
}
