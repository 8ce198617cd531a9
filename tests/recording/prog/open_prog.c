/* SPDX-License-Identifier: MIT */
/*
 * open_prog.c — events that never end reach the file (issue 19, open_test.py):
 *   fork MS  a child forked inside an explicit event works MS of CPU in it and leaves with
 *            _exit (no commit, no destructor); it prints "child <pid> cpu_ns <n>", its CPU
 *            since the fork (its thread's CPU clock starts at zero there), the truth
 *   kill     a thread opens the event "stuck" and works until the process is SIGKILLed; it
 *            prints "thread <tid>" once its event is open (the test reads its CPU time from
 *            /proc just before the kill)
 *   killimp  the same in an implicit event: the thread enters the group "app" (a function
 *            `spin` an instrumented build would call) and never leaves it
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../runtime/task.h"

SITE(site_spin, "app", "spin");

static void *stuck(void *arg)
{
    if (arg)
        (void)__perfgroup_enter(&site_spin); /* an implicit event begins, never ends */
    else
        perfgroup_event_begin("stuck");
    printf("thread %d\n", (int)gettid());
    fflush(stdout);
    for (;;)
        burn(1000000);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "fork") == 0) {
        /* the runtime's sampler thread, started at start-up, settled first: under ASan a
         * fork while a thread is inside its allocator (a thread starting) leaves the child's
         * allocator locked (libasan's fork is not fork-safe for other threads) */
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
        perfgroup_event_begin("frame");
        pid_t pid = fork();
        if (pid == 0) {
            burn(atol(argv[2]) * 1000000);
            printf("child %d cpu_ns %lld\n", (int)getpid(), (long long)thread_cpu_ns());
            fflush(stdout);
            _exit(0);
        }
        int st;
        waitpid(pid, &st, 0);
        perfgroup_event_end();
        return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
    }
    if (argc >= 2 && (strcmp(argv[1], "kill") == 0 || strcmp(argv[1], "killimp") == 0)) {
        pthread_t th;
        pthread_create(&th, NULL, stuck, argv[1][4] ? (void *)1 : NULL);
        for (;;)
            pause();
    }
    return 2;
}
