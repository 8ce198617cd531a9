/* SPDX-License-Identifier: MIT */
/*
 * open_prog.c — events that never end reach the file (issue 19, open_test.py):
 *   kill     a thread opens the event "stuck", runs `read_config` (group "io") to its end,
 *            then enters `addon_run` (group "addon") and works there until the process is
 *            SIGKILLed; it prints "thread <tid>" once it is in "addon" (the test reads its
 *            CPU time from /proc just before the kill). Groups so far: addon running, io.
 *   killimp  the same in an implicit event: the thread enters `spin` (group "app"), which
 *            opens it and never returns, and inside it runs `read_config` and enters
 *            `addon_run`: addon and app running (innermost first), io.
 *   fork MS  a child forked inside an explicit event (the parent inside `spin`, "app") runs
 *            `read_config` and works MS of CPU in `spin` and leaves with _exit (no commit,
 *            no destructor); it prints "child <pid> cpu_ns <n>", its CPU since the fork (its
 *            thread's CPU clock starts at zero there), the truth. Groups: app running, io.
 *   forkimp MS  a child forked with no event open enters `spin` (an implicit event begins
 *            in the child), works MS there and leaves with _exit: app running.
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
SITE(site_io, "io", "read_config");
SITE(site_addon, "addon", "addon_run");

/* a function of group io that returns: its group ran and stopped in the event */
static __attribute__((noinline)) void read_config(void)
{
    uint64_t tok = __perfgroup_enter(&site_io);
    burn(2000000);
    __perfgroup_exit(&site_io, tok);
}

static __attribute__((noinline, noreturn)) void addon_run(void)
{
    (void)__perfgroup_enter(&site_addon); /* never left */
    printf("thread %d\n", (int)gettid());
    fflush(stdout);
    for (;;)
        burn(1000000);
}

static void *stuck(void *arg)
{
    if (arg)
        (void)__perfgroup_enter(&site_spin); /* an implicit event begins, never ends */
    else
        perfgroup_event_begin("stuck");
    read_config();
    addon_run();
    return NULL;
}

/* the runtime's sampler thread, started at start-up, settled first: under ASan a fork while
 * a thread is inside its allocator (a thread starting) leaves the child's allocator locked
 * (libasan's fork is not fork-safe for other threads) */
static void settle(void)
{
    struct timespec ts = {0, 20000000};
    nanosleep(&ts, NULL);
}

static void child_report(void)
{
    printf("child %d cpu_ns %lld\n", (int)getpid(), (long long)thread_cpu_ns());
    fflush(stdout);
    _exit(0);
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "fork") == 0) {
        settle();
        perfgroup_event_begin("frame");
        uint64_t tok = __perfgroup_enter(&site_spin);
        pid_t pid = fork();
        if (pid == 0) {
            read_config();
            burn(atol(argv[2]) * 1000000);
            child_report();
        }
        __perfgroup_exit(&site_spin, tok);
        int st;
        waitpid(pid, &st, 0);
        perfgroup_event_end();
        return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
    }
    if (argc >= 3 && strcmp(argv[1], "forkimp") == 0) {
        settle();
        pid_t pid = fork();
        if (pid == 0) {
            (void)__perfgroup_enter(&site_spin); /* the child's first event, implicit */
            burn(atol(argv[2]) * 1000000);
            child_report();
        }
        int st;
        waitpid(pid, &st, 0);
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
