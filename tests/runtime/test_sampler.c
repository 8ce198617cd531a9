/* SPDX-License-Identifier: MIT */
/*
 * test_sampler.c — the runtime's own thread ("perfgroup-cpu", runtime/implicit.c) is started
 * outside any hook (issue 19): a thread creation allocates and takes locks, so a hook that
 * started it from a signal handler could deadlock (the handler may have interrupted malloc).
 *
 * pthread_create is interposed (the executable's definition wins over libc's for
 * libperfgroup.so too) to count the threads created while a signal handler runs. A SIGUSR1
 * handler calls a grouped function: the process's first implicit event begins inside the
 * handler; then a fork child does the same with its first one. No thread may be created in
 * either handler, and the sampler must run where it is needed (argv[1]):
 *   none     rseq, not recording: no sampler in the parent or the child
 *   sampler  no rseq (PERFGROUP_CPU=getcpu) or recording: one in the parent from start-up
 *            and one in the child from the fork (its implicit events' CPU, its open-event
 *            slots), before the handler runs
 * Each handler's event is counted (1 in the parent; 1 in the child, whose totals start from
 * zero) and gets CPU time: the handler's own by its CPU clock, within the bound of
 * docs/accounting.md ("Error bounds": measured with rseq, else the sampler's estimate).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "task.h"
#include "../bounds/bounds.h"

#define MS 1000000ll

SITE(site_h, "handler", "on_signal_work");

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static volatile sig_atomic_t in_handler;
static _Atomic int created_in_handler;
static struct pg_obs handler_o0, handler_i0, handler_i1, handler_o1;

int pthread_create(pthread_t *th, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
    static create_fn real;
    if (in_handler)
        created_in_handler++;
    if (!real)
        real = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
    return real(th, a, fn, arg);
}

static void on_usr1(int sig)
{
    (void)sig;
    in_handler = 1;
    handler_o0 = pg_obs_now();
    uint64_t tok = __perfgroup_enter(&site_h); /* the first implicit event begins here */
    handler_i0 = pg_obs_now();
    burn(4 * MS);
    handler_i1 = pg_obs_now();
    __perfgroup_exit(&site_h, tok);
    handler_o1 = pg_obs_now();
    in_handler = 0;
}

/* Is a thread named perfgroup-cpu in this process? Waits up to 2 s for it (or, want == 0,
 * checks once after 50 ms). */
static int sampler_seen(int want)
{
    for (int tries = 0; tries < (want ? 200 : 5); tries++) {
        DIR *d = opendir("/proc/self/task");
        struct dirent *e;
        int seen = 0;
        while (d && (e = readdir(d)) != NULL) {
            char p[300], comm[32] = "";
            snprintf(p, sizeof p, "/proc/self/task/%s/comm", e->d_name);
            FILE *f = fopen(p, "r");
            if (f) {
                if (fgets(comm, sizeof comm, f) && strncmp(comm, "perfgroup-cpu", 13) == 0)
                    seen = 1;
                fclose(f);
            }
        }
        if (d)
            closedir(d);
        if (seen)
            return 1;
        sleep_ms(10);
    }
    return 0;
}

static void check(const char *who, int want)
{
    ASSERT_I64(created_in_handler, ==, 0);
    int seen = sampler_seen(want);
    if (seen != want)
        FAIL("%s: sampler thread %s, expected %s", who, seen ? "running" : "absent",
             want ? "running" : "absent");
    struct perfgroup_snapshot *s = perfgroup_snapshot_take();
    ASSERT(s);
    ASSERT_U64(stats(s, "handler")->events, ==, 1);
    /* at least the burn (read inside the stopwatch), at most what the handler took around
     * the calls (the process's first hook call sets the thread up, and in a recording child
     * makes its file, before its counter read): measured, or estimated from the sampler's
     * readings (no rseq: with no reading in the event, its wall time at the ratio of the
     * newest interval) */
    struct pg_cfg cfg = pg_cfg_now();
    int64_t lo = handler_i1.cpu - handler_i0.cpu, hi = handler_o1.cpu - handler_o0.cpu;
    PG_ASSERT_BRACKET(stats(s, "handler")->cpu_ns, lo, hi,
                      cfg.measured ? pg_bound_measured(hi, &handler_o0, &handler_o1)
                                   : pg_bound_sampled(&cfg, &handler_o0, &handler_o1));
    perfgroup_snapshot_free(s);
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "none") != 0 && strcmp(argv[1], "sampler") != 0))
        FAIL("usage: test_sampler none|sampler");
    int want = strcmp(argv[1], "sampler") == 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    if (want && !sampler_seen(1)) /* from start-up, before any hook */
        FAIL("parent: no sampler thread after start-up");
    raise(SIGUSR1);
    check("parent", want);
    pid_t pid = fork();
    if (pid == 0) {
        if (want && !sampler_seen(1)) /* from the fork, before any hook */
            FAIL("child: no sampler thread after the fork");
        raise(SIGUSR1);
        check("child", want);
        fflush(stdout);
        _exit(0);
    }
    int st;
    ASSERT(waitpid(pid, &st, 0) == pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        FAIL("child failed (status %d)", st);
    printf("ok sampler %s\n", argv[1]);
    return 0;
}
