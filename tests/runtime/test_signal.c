/* SPDX-License-Identifier: MIT */
/*
 * tests/runtime/test_signal.c — instrumented signal handlers (issue 19), hand-built sites.
 *
 *   alarm   SIGALRM every 50 µs (20 kHz) calls a grouped function while the main thread runs
 *           N one-call implicit events of another group: the main group's activations and
 *           events are exactly N (a handler that ran while the runtime was busy on the thread
 *           never nested into a commit), and the handler's activations, discards and the
 *           refused count add up to the handler's calls exactly, the truth counted in the
 *           handler itself; and the hooks leave the handler's errno alone.
 *   churn   runs `churn_once` 50 times (PERFGROUP_CHURN_RUNS) as child processes, each with
 *           a 30 s limit: threads start and exit while SIGALRM every 50 µs calls a grouped
 *           function on whichever thread it lands (a thread's first hook, its registration,
 *           can be in the handler); any crash, hang or changed errno fails. Run under each
 *           recording mode, and under ASan and TSan (ctest).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <glob.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <spawn.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perfgroup/format.h"
#include "task.h"

extern char **environ;

SITE(site_main, "main", "work");
SITE(site_sig, "handler", "on_alarm");

/* the handler runs on whichever thread the signal lands: a lock-free counter */
static _Atomic unsigned long handler_calls;
static _Thread_local volatile uint64_t sink;

static void grouped(struct perfgroup_site *s)
{
    uint64_t tok = __perfgroup_enter(s);
    for (int i = 0; i < 20; i++)
        sink += (uint64_t)i;
    __perfgroup_exit(s, tok);
}

static void on_alarm(int sig)
{
    (void)sig;
    int e = errno;
    errno = 12345; /* the hooks must keep the handler's errno */
    grouped(&site_sig);
    if (errno != 12345) {
        char m[64];
        int n = snprintf(m, sizeof m, "errno %d after the hooks\n", errno);
        (void)!write(2, m, (size_t)n);
        _exit(3);
    }
    errno = e;
    atomic_fetch_add_explicit(&handler_calls, 1, memory_order_relaxed);
}

static void timer_on(long usec)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, usec}, {0, usec}};
    setitimer(ITIMER_REAL, &it, NULL);
}

static void timer_off(void)
{
    struct itimerval it = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &it, NULL);
    signal(SIGALRM, SIG_IGN);
}

/* The recording of process `pid` (PERFGROUP_OUTPUT's %p), in path. */
static void recording_path(char *path, size_t size, pid_t pid)
{
    const char *tmpl = getenv("PERFGROUP_OUTPUT"), *p = strstr(tmpl, "%p");
    ASSERT(p != NULL);
    snprintf(path, size, "%.*s%d%s", (int)(p - tmpl), tmpl, (int)pid, p + 2);
}

/* A passed run's recordings of process `pid` removed (its own and those of its execs,
 * PATH.execN): 50 churn runs in two modes left ~400 MB in every build tree, per ctest run. */
static void recording_remove(pid_t pid)
{
    char path[512], pattern[520];
    recording_path(path, sizeof path, pid);
    snprintf(pattern, sizeof pattern, "%s*", path);
    glob_t g;
    if (glob(pattern, GLOB_NOSORT, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++)
            unlink(g.gl_pathv[i]);
        globfree(&g);
    }
}

/* Recording: the file's header has the process's refused calls and clamped events (stored
 * at close), the snapshot's totals since the start. */
static void check_header_counts(const struct perfgroup_snapshot *now)
{
    ASSERT_I64(perfgroup_record_close(), ==, 0);
    char path[512];
    recording_path(path, sizeof path, getpid());
    FILE *f = fopen(path, "rb");
    if (!f)
        FAIL("open %s", path);
    struct pgf_file_header h;
    ASSERT(fread(&h, sizeof h, 1, f) == 1);
    fclose(f);
    printf("alarm: header of %s: %" PRIu64 " refused, %" PRIu64 " clamped\n", path, h.refused,
           h.clamped);
    ASSERT_U64(h.state, ==, PGF_STATE_CLOSED);
    ASSERT_U64(h.refused, ==, perfgroup_snapshot_refused(now));
    ASSERT_U64(h.clamped, ==, perfgroup_snapshot_clamped(now));
    recording_remove(getpid());
}

static int test_alarm(void)
{
    const uint64_t n = 200000;
    grouped(&site_sig); /* the site's first resolution outside the handler */
    struct perfgroup_snapshot *before = perfgroup_snapshot_take();
    timer_on(50);
    for (uint64_t i = 0; i < n; i++)
        grouped(&site_main); /* no event open: each call is an implicit event of its own */
    timer_off();
    struct perfgroup_snapshot *after = perfgroup_snapshot_take();
    struct perfgroup_snapshot *d = perfgroup_snapshot_diff(after, before);
    const struct perfgroup_stats *m = stats(d, "main");
    const struct perfgroup_stats *h = perfgroup_snapshot_find(d, "handler");
    uint64_t hacts = h ? h->activations : 0, hdisc = h ? h->discarded : 0;
    uint64_t refused = perfgroup_snapshot_refused(d), calls = (uint64_t)atomic_load(&handler_calls);
    printf("alarm: main %" PRIu64 " acts %" PRIu64 " events; handler %" PRIu64 " acts + %"
           PRIu64 " discarded + %" PRIu64 " refused of %" PRIu64 " calls\n", m->activations,
           m->events, hacts, hdisc, refused, calls);
    /* the interrupted thread's own group: exact, never a nested commit */
    ASSERT_U64(m->activations, ==, n);
    ASSERT_U64(m->events, ==, n);
    ASSERT_U64(m->discarded, ==, 0);
    /* the handler's: every call an activation, a counted discard (a signal counts as a
     * deschedule, cputime.c) or refused (it landed while the runtime, a hook's fast path
     * included, was busy on the thread): exactly its calls */
    ASSERT(calls > 0);
    ASSERT_U64(hacts + hdisc + refused, ==, calls);
    if (getenv("PERFGROUP_OUTPUT"))
        check_header_counts(after);
    perfgroup_snapshot_free(d);
    perfgroup_snapshot_free(after);
    perfgroup_snapshot_free(before);
    puts("ok alarm");
    return 0;
}

static void *short_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20; i++)
        grouped(&site_main);
    return NULL;
}

static int test_churn_once(void)
{
    timer_on(50);
    for (int round = 0; round < 60; round++) {
        pthread_t th[4];
        for (int i = 0; i < 4; i++)
            if (pthread_create(&th[i], NULL, short_thread, NULL) != 0)
                FAIL("pthread_create");
        grouped(&site_main);
        for (int i = 0; i < 4; i++)
            pthread_join(th[i], NULL);
    }
    timer_off();
    return 0;
}

/* 50 runs (PERFGROUP_CHURN_RUNS) of churn_once, each a process of its own with a 30 s limit
 * (a hang fails). */
static int test_churn(const char *self)
{
    const char *env = getenv("PERFGROUP_CHURN_RUNS"); /* fewer under TSan (ctest) */
    int runs = env && atoi(env) > 0 ? atoi(env) : 50;
    for (int run = 0; run < runs; run++) {
        pid_t pid;
        char *argv[] = {(char *)self, "churn_once", NULL};
        if (posix_spawn(&pid, self, NULL, NULL, argv, environ) != 0)
            FAIL("posix_spawn");
        int status = 0;
        int64_t deadline = mono_ns() + 30 * 1000000000LL;
        while (waitpid(pid, &status, WNOHANG) == 0) {
            if (mono_ns() > deadline) {
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                FAIL("run %d: hung (killed after 30 s)", run);
            }
            sleep_ms(5);
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            FAIL("run %d: %s %d", run, WIFSIGNALED(status) ? "signal" : "exit status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        if (getenv("PERFGROUP_OUTPUT")) /* kept where a run failed */
            recording_remove(pid);
    }
    puts("ok churn");
    return 0;
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "";
    if (!strcmp(c, "alarm"))
        return test_alarm();
    if (!strcmp(c, "churn_once"))
        return test_churn_once();
    if (!strcmp(c, "churn"))
        return test_churn(argv[0]);
    fprintf(stderr, "usage: %s alarm|churn|churn_once\n", argv[0]);
    return 2;
}
