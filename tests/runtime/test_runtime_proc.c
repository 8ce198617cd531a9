/* SPDX-License-Identifier: MIT */
/*
 * tests/runtime/test_runtime_proc.c — test_runtime's cases of threads, processes, the
 * control API and modules (test_runtime.c runs them by name; see there).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "task.h"
#include "../bounds/bounds.h"
#include "runtime_cases.h"

static void *exiting_thread(void *arg)
{
    (void)arg;
    perfgroup_thread_name("worker");
    __perfgroup_enter(&site_c); /* never exits: the thread ends inside C */
    burn(3 * MS);
    return NULL;
}
void case_thread_exit(void)
{
    pthread_t th;
    int64_t st0 = pg_steal_ns();
    pthread_create(&th, NULL, exiting_thread, NULL);
    pthread_join(th, NULL);
    /* stolen from the vCPUs meanwhile (+ 1 tick): counted by the stopwatch, not by the CPU
     * clock burn() reads (docs/accounting.md, "Error bounds") */
    double stolen = pg_steal_ns() > st0 ? (double)(pg_steal_ns() - st0) + 1e7 : 0;
    struct perfgroup_snapshot *s = snap();
    ASSERT_U64(stats(s, "C")->events, ==, 1);
    ASSERT_U64(stats(s, "C")->activations, ==, 1);
    ASSERT_NEAR(stats(s, "C")->cpu_ns, 3 * MS, 1.2 * MS + stolen);
    perfgroup_snapshot_free(s);
}

#define NTHREADS 8
#define NEVENTS 100000
static _Atomic int running_threads;
static void *event_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < NEVENTS; i++) {
        perfgroup_event_begin("ev");
        uint64_t ta = __perfgroup_enter(&site_a);
        uint64_t tb = __perfgroup_enter(&site_b);
        __perfgroup_exit(&site_b, tb);
        __perfgroup_exit(&site_a, ta);
        perfgroup_event_end();
    }
    running_threads--;
    return NULL;
}
void case_threads(void)
{
    pthread_t th[NTHREADS];
    running_threads = NTHREADS;
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, event_thread, NULL);
    uint64_t last = 0;
    while (running_threads > 0) { /* snapshots while the threads commit: monotonic */
        struct perfgroup_snapshot *s = snap();
        const struct perfgroup_stats *a = perfgroup_snapshot_find(s, "A");
        uint64_t ev = a ? a->events : 0;
        ASSERT_U64(ev, >=, last);
        ASSERT_U64(ev, <=, (uint64_t)NTHREADS * NEVENTS);
        last = ev;
        perfgroup_snapshot_free(s);
        usleep(2000);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    struct perfgroup_snapshot *s = snap();
    const uint64_t n = (uint64_t)NTHREADS * NEVENTS;
    /* These sites are not registered by a module constructor: every thread's first call of
     * each resolves it, and one that waits too long for another thread holding the registry
     * (preempted, on a busy machine) is refused and counted, nothing else is */
    uint64_t refused = perfgroup_snapshot_refused(s);
    ASSERT_U64(refused, <=, 2 * NTHREADS);
    ASSERT_U64(stats(s, "top")->events, ==, n);
    ASSERT_U64(stats(s, "A")->events, <=, n);
    ASSERT_U64(stats(s, "B")->events, <=, n);
    ASSERT_U64(stats(s, "A")->events + stats(s, "B")->events + refused, >=, 2 * n);
    /* unpinned threads migrate: a stopwatch that ends on another CPU is discarded, counted */
    ASSERT_U64(stats(s, "A")->activations + stats(s, "A")->discarded +
               stats(s, "B")->activations + stats(s, "B")->discarded + refused, ==, 2 * n);
    perfgroup_snapshot_free(s);
}

void case_control(void)
{
    ASSERT(perfgroup_is_active());
    ASSERT_I64(perfgroup_stop(), ==, 0);
    ASSERT(!perfgroup_is_active());
    ASSERT_U64(__perfgroup_enter(&site_a), ==, 0);
    one_event(&site_b, MS / 10);
    ASSERT_I64(perfgroup_start(), ==, 0);
    struct perfgroup_snapshot *s = snap();
    ASSERT(perfgroup_snapshot_find(s, "B") == NULL || stats(s, "B")->activations == 0);
    perfgroup_snapshot_free(s);

    ASSERT_I64(perfgroup_group_activate("no such group"), ==, -ENOENT);
    one_event(&site_a, MS / 10);                            /* site_a known from here */
    ASSERT_I64(perfgroup_group_activate("fa"), ==, 0);      /* the function group fa() */
    one_event(&site_a, MS / 10);
    s = snap();
    ASSERT_U64(stats(s, "fa()")->activations, ==, 1);
    ASSERT_U64(stats(s, "A")->activations, ==, 2);
    perfgroup_snapshot_free(s);
    ASSERT_I64(perfgroup_group_deactivate("A"), ==, 0);
    one_event(&site_a, MS / 10);
    s = snap();
    ASSERT_U64(stats(s, "A")->activations, ==, 2);   /* inactive now: not charged */
    ASSERT_U64(stats(s, "fa()")->activations, ==, 2);
    perfgroup_snapshot_free(s);

    ASSERT_I64(perfgroup_reset(), ==, 0);
    s = snap();
    ASSERT_U64(stats(s, "fa()")->activations, ==, 0);
    ASSERT_U64(stats(s, "top")->events, ==, 0);
    perfgroup_snapshot_free(s);
    one_event(&site_a, MS / 10);
    s = snap();
    ASSERT_U64(stats(s, "fa()")->activations, ==, 1);
    perfgroup_snapshot_free(s);

    ASSERT_I64(perfgroup_event_end(), ==, -ENOENT);
    ASSERT_I64(perfgroup_event_begin("x"), ==, 0);
    ASSERT_I64(perfgroup_event_begin("x"), ==, -EALREADY);
    ASSERT_I64(perfgroup_event_end(), ==, 0);
    ASSERT_I64(perfgroup_thread_name(NULL), ==, -EINVAL);
}

/* Module registration: every site resolved at once; a second registration changes nothing.
 * The last entry points at a site outside the section (PERFGROUP_SITE_F_INDIRECT, a GCC
 * COMDAT function's): that site is resolved, the entry itself left as emitted. */
static struct perfgroup_site comdat_site __attribute__((aligned(8))) =
    {PERFGROUP_ABI_VERSION, PERFGROUP_SITE_F_INLINE, 3, "M\0", "m3\0mod.h", 0, 0};
static struct perfgroup_site mod_sites[4] __attribute__((aligned(8))) = {
    {PERFGROUP_ABI_VERSION, 0, 1, "M\0", "m1\0mod.c", 0, 0},
    {PERFGROUP_ABI_VERSION, 0, 2, "M\0", "m2\0mod.c", 0, 0},
    {PERFGROUP_ABI_VERSION, 0, 1, "M\0", "m1\0mod.c", 0, 0}, /* same function, another TU */
    {PERFGROUP_ABI_VERSION, PERFGROUP_SITE_F_INLINE | PERFGROUP_SITE_F_INDIRECT, 3, "M\0",
     "m3\0mod.h", &comdat_site, 0},
};
void case_modules(void)
{
    __perfgroup_register_module(PERFGROUP_ABI_VERSION, mod_sites, mod_sites + 4);
    __perfgroup_register_module(PERFGROUP_ABI_VERSION, mod_sites, mod_sites + 4);
    for (int i = 0; i < 3; i++)
        ASSERT(mod_sites[i].cache != NULL);
    ASSERT(mod_sites[0].cache == mod_sites[2].cache);
    ASSERT(mod_sites[0].cache != mod_sites[1].cache);
    ASSERT(mod_sites[3].cache == &comdat_site);
    ASSERT(comdat_site.cache != NULL && comdat_site.cache != mod_sites[0].cache);
    /* re-entry keys (include/perfgroup/abi.h): the complement of the active groups' bits, on
     * every site of a registered module, never on an indirect entry; one bit (group "M");
     * a group's activation re-keys: m1's sites get the bit of "m1()" too */
    uint64_t k = mod_sites[0].key;
    ASSERT(k != 0 && __builtin_popcountll(~k) == 1 && !(~k >> 63));
    ASSERT(mod_sites[1].key == k && mod_sites[2].key == k && comdat_site.key == k);
    ASSERT_U64(mod_sites[3].key, ==, 0);
    ASSERT_I64(perfgroup_group_activate("m1"), ==, 0);
    ASSERT(__builtin_popcountll(~mod_sites[0].key) == 2 && (~mod_sites[0].key & ~k) == ~k);
    ASSERT(mod_sites[2].key == mod_sites[0].key);
    ASSERT(mod_sites[1].key == k && comdat_site.key == k);
    one_event(&mod_sites[0], MS / 10);
    one_event(&mod_sites[2], MS / 10);
    struct perfgroup_snapshot *s = snap();
    ASSERT_U64(stats(s, "m1()")->events, ==, 2);
    ASSERT_U64(stats(s, "M")->events, ==, 2);
    perfgroup_snapshot_free(s);
}

/* fork: the child's totals start from zero, under its own tid; the parent's are intact. */
void case_fork(void)
{
    one_event(&site_a, MS / 10);
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        struct perfgroup_snapshot *s = snap();
        const struct perfgroup_stats *a = perfgroup_snapshot_find(s, "A");
        if (a && a->events != 0)
            _exit(10);
        one_event(&site_a, MS / 10);
        perfgroup_snapshot_free(s);
        s = snap();
        _exit(stats(s, "A")->events == 1 ? 0 : 11);
    }
    int st;
    ASSERT_I64(waitpid(pid, &st, 0), ==, pid);
    ASSERT(WIFEXITED(st));
    ASSERT_I64(WEXITSTATUS(st), ==, 0);
    struct perfgroup_snapshot *s = snap();
    ASSERT_U64(stats(s, "A")->events, ==, 1);
    perfgroup_snapshot_free(s);
}

/* fork with another thread alive: that thread's entry is freed in the child, and the
 * child's thread that takes it starts from zero (not from the parent thread's 1000). */
static pthread_mutex_t park_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cv = PTHREAD_COND_INITIALIZER;
static int park_state; /* 1: the worker did its events; 2: it may exit */

static void *parked_worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1000; i++)
        one_event(&site_a, 0);
    pthread_mutex_lock(&park_mu);
    park_state = 1;
    pthread_cond_broadcast(&park_cv);
    while (park_state != 2)
        pthread_cond_wait(&park_cv, &park_mu);
    pthread_mutex_unlock(&park_mu);
    return NULL;
}

static void *one_work(void *arg)
{
    (void)arg;
    one_event(&site_a, 0);
    return NULL;
}

void case_fork_threads(void)
{
#if defined(__SANITIZE_THREAD__)
    printf("skipped: TSan cannot start a thread in the child of a multi-threaded fork\n");
    exit(77);
#endif
    pthread_t w;
    ASSERT(pthread_create(&w, NULL, parked_worker, NULL) == 0);
    pthread_mutex_lock(&park_mu);
    while (park_state != 1)
        pthread_cond_wait(&park_cv, &park_mu);
    pthread_mutex_unlock(&park_mu);
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        pthread_t c;
        if (pthread_create(&c, NULL, one_work, NULL) != 0 || pthread_join(c, NULL) != 0)
            _exit(12);
        struct perfgroup_snapshot *s = snap();
        const struct perfgroup_stats *a = perfgroup_snapshot_find(s, "A");
        uint64_t acts = a ? a->activations : 0, evs = a ? a->events : 0;
        if (acts != 1 || evs != 1) {
            fprintf(stderr, "child: A has %llu activations in %llu events, want 1 in 1\n",
                    (unsigned long long)acts, (unsigned long long)evs);
            _exit(13);
        }
        _exit(0);
    }
    int st;
    ASSERT_I64(waitpid(pid, &st, 0), ==, pid);
    ASSERT(WIFEXITED(st));
    ASSERT_I64(WEXITSTATUS(st), ==, 0);
    pthread_mutex_lock(&park_mu);
    park_state = 2;
    pthread_cond_broadcast(&park_cv);
    pthread_mutex_unlock(&park_mu);
    ASSERT(pthread_join(w, NULL) == 0);
    struct perfgroup_snapshot *s = snap();
    ASSERT_U64(stats(s, "A")->activations, ==, 1000);
    perfgroup_snapshot_free(s);
}

/* fork inside an event, inside A: the child's event is its own, from the fork: A is charged
 * the child's work after the fork, not the parent's before it, and not zero (the child's
 * thread CPU clock starts from zero, behind the parent's at the event's begin). Checked in
 * the child against its own CPU clock. */
void case_fork_in_event(void)
{
    burn(50 * MS); /* the parent's CPU clock is well ahead of the child's, which starts at 0 */
    perfgroup_event_begin("ev");
    uint64_t ta = __perfgroup_enter(&site_a);
    burn(30 * MS);
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        struct pg_obs o0 = pg_obs_now();
        burn(40 * MS);
        __perfgroup_exit(&site_a, ta);
        perfgroup_event_end();
        struct pg_obs o1 = pg_obs_now();
        struct pg_cfg cfg = pg_cfg_now();
        /* the child's part before o0 (the fork's return) is in neither: the hooks' term */
        int64_t truth = o1.cpu - o0.cpu, bound = pg_bound_explicit(&cfg, truth, &o0, &o1);
        struct perfgroup_snapshot *s = snap();
        const struct perfgroup_stats *a = perfgroup_snapshot_find(s, "A");
        const struct perfgroup_stats *top = perfgroup_snapshot_find(s, "top");
        int64_t got = a ? (int64_t)a->cpu_ns : -1, ev = top ? (int64_t)top->cpu_ns : -1;
        if (got < truth - bound || got > truth + bound || ev < got || ev > truth + bound) {
            fprintf(stderr, "child: A %lld ns, event %lld ns, truth %lld ns +- %lld (%s)\n",
                    (long long)got, (long long)ev, (long long)truth, (long long)bound, pg_bound_why);
            _exit(14);
        }
        _exit(0);
    }
    __perfgroup_exit(&site_a, ta);
    perfgroup_event_end();
    int st;
    ASSERT_I64(waitpid(pid, &st, 0), ==, pid);
    ASSERT(WIFEXITED(st));
    ASSERT_I64(WEXITSTATUS(st), ==, 0);
}

/* Is a thread of this process named `name` (its comm) now? */
static int thread_named(const char *name)
{
    char path[300], comm[32];
    int found = 0;
    DIR *d = opendir("/proc/self/task");
    ASSERT(d != NULL);
    for (struct dirent *e; !found && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        ssize_t n = pg_read_head(path, comm, sizeof comm);
        found = n > 0 && (size_t)n == strlen(name) + 1 && !memcmp(comm, name, strlen(name));
    }
    closedir(d);
    return found;
}

/* A runtime thread is running its own code when the call that started it returns
 * (runtime/spawn.c): a program that forks right after its first event must not fork it
 * half-way through its start-up (GCC 12's libasan took its allocator's lock there, and the
 * child hung). A fork child has no ticker till its first perfgroup_event_begin, which starts
 * one: named perfgroup-tick on its first instruction, so at the return of that call. */
void case_spawn_started(void)
{
#if defined(__SANITIZE_THREAD__)
    printf("skipped: no ticker under TSan (runtime/ticker.c)\n");
    exit(77);
#endif
    const char *acc = getenv("PERFGROUP_ACCOUNTING");
    if (acc && !strcmp(acc, "exact")) {
        printf("skipped: PERFGROUP_ACCOUNTING=exact starts no ticker\n");
        exit(77);
    }
    ASSERT(thread_named("perfgroup-tick")); /* the process's own, started at load */
    for (int i = 0; i < 20; i++) {
        pid_t pid = fork();
        ASSERT(pid >= 0);
        if (pid == 0) {
            int before = thread_named("perfgroup-tick");
            perfgroup_event_begin("ev");
            int after = thread_named("perfgroup-tick");
            perfgroup_event_end();
            _exit(before ? 12 : after ? 0 : 13);
        }
        int st;
        ASSERT_I64(waitpid(pid, &st, 0), ==, pid);
        ASSERT(WIFEXITED(st));
        ASSERT_I64(WEXITSTATUS(st), ==, 0); /* 12: a ticker before; 13: not started yet */
    }
}
