/* SPDX-License-Identifier: MIT */
/* tests/header/task_noruntime.c — the task API without the runtime: linked with no
 * libperfgroup (the runtime's entry points are weak in perfgroup.h), the three calls compile,
 * link and do nothing; capture gives a zero value (header.task_noruntime). */
#include <perfgroup.h>
#include <stdio.h>

int main(void)
{
    perfgroup_task k = perfgroup_task_capture();
    perfgroup_task_begin(k, "job");
    perfgroup_task_end();
    if (k.opaque[0] || k.opaque[1]) {
        fprintf(stderr, "capture without the runtime gave a value\n");
        return 1;
    }
    return 0;
}
