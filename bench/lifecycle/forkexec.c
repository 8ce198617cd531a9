/* SPDX-License-Identifier: MIT */
/*
 * forkexec.c — N fork()+execl("/bin/true") children of one process (issue 19): run it with
 * and without PERFGROUP_OUTPUT to see what recording costs a fork-heavy program (the
 * children's files are made at their first record: these make none). Prints wall ms.
 *
 *   gcc -O2 -Iinclude bench/lifecycle/forkexec.c -Lbuild/runtime -lperfgroup \
 *       -Wl,-rpath,$PWD/build/runtime -o /tmp/forkexec
 *   /tmp/forkexec 1000; PERFGROUP_OUTPUT=/tmp/fe.%p.pgm /tmp/forkexec 1000
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perfgroup.h"

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    perfgroup_event_begin("start"); /* a recording process: its file is open */
    perfgroup_event_end();
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(7);
        }
        int st;
        if (p < 0 || waitpid(p, &st, 0) != p)
            return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.1f\n", (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6);
    return 0;
}
