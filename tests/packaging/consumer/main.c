/* SPDX-License-Identifier: MIT */
/* main.c — the consumer's program: group "app" (GROUP app), one function PERF_GROUP("addon"). */
#include <perfgroup.h>
#include <stdio.h>

int parse(const char *s);
int util_twice(int x);

PERF_GROUP("addon") __attribute__((noinline)) static int addon_run(int x)
{
    return util_twice(x) + 1;
}

int main(int argc, char **argv)
{
    int n = parse(argc > 1 ? argv[1] : "20");
    perfgroup_event_begin("run");
    int r = addon_run(n);
    perfgroup_event_end();
    printf("%d\n", r);
    return r == 2 * n + 1 ? 0 : 1;
}
