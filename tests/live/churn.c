/* SPDX-License-Identifier: MIT */
/*
 * churn.c — a recording that recycles its chunks as fast as it can: a group entered and left
 * millions of times a second (trace mode writes one 29-byte interval per call), an event
 * every 1000 calls. Runs for argv[1] seconds (default 3). The live tests read its file while
 * it runs.
 *   churn SECONDS fork      forks a child after a quarter of the time; both churn on
 *   churn 0 BATCHES         a fixed amount of work (bench/live: CPU time per batch)
 * Built with the GCC plugin (live_churn), or with -DLIVE_CHURN_HOOKS (live_churn_hooks) calling
 * the same hooks by hand, for the builds without a plugin (the sanitizer builds).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <perfgroup.h>

static volatile unsigned sink;

#ifdef LIVE_CHURN_HOOKS
#include <perfgroup/abi.h>
static struct perfgroup_site spell_site __attribute__((aligned(8))) = {
    PERFGROUP_ABI_VERSION, 0, __LINE__, "spell\0", "spell_check\0" __FILE__, 0, 0};
__attribute__((noinline)) static void spell_check(unsigned x)
{
    uint64_t t = __perfgroup_enter(&spell_site);
    sink += x * 2654435761u;
    __perfgroup_exit(&spell_site, t);
}
#else
PERF_GROUP("spell") __attribute__((noinline)) static void spell_check(unsigned x)
{
    sink += x * 2654435761u;
}
#endif

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void batch(void)
{
    perfgroup_event_begin("batch");
    for (unsigned i = 0; i < 1000; i++)
        spell_check(i);
    perfgroup_event_end();
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 3.0, start = now(), end = start + secs;
    int do_fork = argc > 2 && !strcmp(argv[2], "fork");
    pid_t child = -1;
    perfgroup_thread_name("churn");
    if (secs <= 0 && argc > 2) {
        for (long n = atol(argv[2]); n > 0; n--)
            batch();
        return 0;
    }
    while (now() < end) {
        batch();
        if (do_fork && child < 0 && now() > start + secs / 4)
            child = fork();
    }
    if (child > 0)
        waitpid(child, NULL, 0);
    return 0;
}
