/* SPDX-License-Identifier: MIT */
/*
 * tests/lite/abi2_prog.c — a module of ABI 3 (the GCC plugin) with a runtime of ABI 2
 * (abi2_runtime.c, a stand-in: no __perfgroup_exit_lite, a 16-byte __perfgroup_cur). Linked
 * with -z now, it links and loads (the lite exit is a weak reference), registers with version
 * 3, is refused with the old runtime's message, and runs: every call of an instrumented
 * function reaches the enter hook (its key stays 0) and its code never reads cur past sp (a
 * NULL ctl there would crash it), with cur as a disabled runtime leaves it and with every bit
 * set (PGABI2_CUR=full, the driver's second run). Exit 0: pass.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perfgroup.h"

#define N 1000

void abi2_stats(unsigned *version, unsigned *was_refused, unsigned long *n_enter,
                unsigned long *n_exit);

static volatile unsigned sink;
PERF_GROUP("A") __attribute__((noinline)) static void fa(unsigned i) { sink += i; }
PERF_GROUP("B") __attribute__((noinline)) static void fb(unsigned i)
{
    fa(i);
    sink ^= i;
}

PERF_GROUP_NONE static int run(void)
{
    for (unsigned i = 0; i < N; i++)
        fb(i);
    unsigned v, refused;
    unsigned long enters, exits;
    abi2_stats(&v, &refused, &enters, &exits);
    printf("version %u refused %u enters %lu exits %lu\n", v, refused, enters, exits);
    return !(v == 3 && refused && enters == 2 * N && exits == 0);
}

PERF_GROUP_NONE int main(int argc, char **argv)
{
    (void)argc;
    if (getenv("PGABI2_CUR"))
        return run();
    int fail = 0;
    const char *modes[2] = {"off", "full"};
    for (int k = 0; k < 2; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            setenv("PGABI2_CUR", modes[k], 1);
            execv("/proc/self/exe", argv);
            _exit(127);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        printf("%s: cur %s: %s\n", ok ? "ok" : "FAIL", modes[k],
               WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : ok ? "refused, every call hooked" : "wrong counts");
        fail |= !ok;
    }
    return fail;
}
