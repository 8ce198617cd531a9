/* SPDX-License-Identifier: MIT */
/* shmain: the executable linked against shlib.so; one site of its own. */
#include <perfgroup.h>
#include <stdio.h>

int lib_work(int x);
int lib_sites_resolved(void);

PERF_GROUP("app") static int app_work(int x) { return lib_work(x) + 1; }

int main(void)
{
    int before = lib_sites_resolved();
    volatile int x = 1;
    printf("%d\n", app_work(x));
    printf("library sites resolved before main: %d\n", before);
    return 0;
}
