/* SPDX-License-Identifier: MIT */
/*
 * tests/bounds/modes.h — for the tests that compare the accounting modes in one binary
 * (tests/adaptive, tests/self): the driver runs itself as a child per mode
 * (PERFGROUP_ACCOUNTING), reads what the child prints, and counts failed checks; the busy
 * work they share, by iterations (a CPU-clock read costs more than their short pieces).
 * Not instrumented (PERF_GROUP_NONE): the tests' groups are their own functions'.
 */
#ifndef PERFGROUP_TEST_MODES_H
#define PERFGROUP_TEST_MODES_H

/* needs _GNU_SOURCE and perfgroup.h before it */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int pg_failures;
static volatile uint64_t pg_burn_sink;

/* Count a failed check, saying why (the table still prints). */
PERF_GROUP_NONE __attribute__((format(printf, 2, 3), unused)) static void pg_check(int ok, const char *fmt, ...)
{
    if (ok)
        return;
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    pg_failures++;
}

/* Busy work of n iterations. */
PERF_GROUP_NONE __attribute__((noinline, unused)) static void pg_burn_iters(uint64_t n)
{
    uint64_t x = pg_burn_sink;
    for (uint64_t i = 0; i < n; i++) {
        x ^= x << 7;
        x ^= x >> 9;
        __asm__ __volatile__("" : "+r"(x));
    }
    pg_burn_sink = x;
}

/* This program's path, for running itself again (/proc/self/exe if unreadable). */
PERF_GROUP_NONE __attribute__((unused)) static const char *pg_exe_path(char *buf, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n <= 0)
        return "/proc/self/exe";
    buf[n] = 0;
    return buf;
}

/* `exe --child` with PERFGROUP_ACCOUNTING=mode (unset for ""), its stdout to read; NULL on
 * failure. */
PERF_GROUP_NONE __attribute__((unused)) static FILE *pg_spawn_mode(const char *exe, const char *mode,
                                                                   pid_t *pid)
{
    int p[2];
    if (pipe(p) != 0)
        return NULL;
    fflush(stdout);
    *pid = fork();
    if (*pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        if (*mode)
            setenv("PERFGROUP_ACCOUNTING", mode, 1);
        else
            unsetenv("PERFGROUP_ACCOUNTING"); /* "": the default (adaptive) */
        execl(exe, exe, "--child", (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    return fdopen(p[0], "r");
}

/* The child read to its end: 0 if it exited 0. */
PERF_GROUP_NONE __attribute__((unused)) static int pg_spawn_end(FILE *f, pid_t pid)
{
    fclose(f);
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

#endif
