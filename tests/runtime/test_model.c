/* SPDX-License-Identifier: MIT */
/*
 * tests/runtime/test_model.c — the differential test's driver: performs a schedule on the
 * real runtime (built with PERFGROUP_TESTING) under the virtual clock, and prints the
 * snapshot. tests/runtime/model.py generates the schedules from a seed, computes what
 * docs/accounting.md says they must be charged, and compares (exact integers: both sides
 * share the virtual clock).
 *
 * A schedule is one operation per line (read from stdin):
 *   H hz [percpu]   the counter's frequency (first line; percpu: model.py sets
 *                   PERFGROUP_TSC=cpu); the driver prints "mask 1" if the same-CPU
 *                   check applies
 *   C id            the thread is now on CPU `id` (the seam's CPU override)
 *   A group         perfgroup_group_activate
 *   E f             enter function f (a real, deeper C frame: run_frame recurses)
 *   X               exit the innermost function entered by E
 *   R ns            run: the counter and the thread's CPU clock advance
 *   S ns            sleep: the counter advances, the CPU clock does not, "descheduled"
 *   B / N           perfgroup_event_begin("ev") / perfgroup_event_end()
 *   L / M           perfgroup_nested_loop_begin() / perfgroup_nested_loop_end()
 *   J               setjmp at the current level
 *   K level         longjmp to the setjmp of that level (exits skipped)
 *   G a b           a signal now: its handler runs two grouped functions (a ns, then b ns
 *                   nested)
 *   P k             the next operation raises the signal at its k-th runtime test point
 *                   (0: at every point); the handler then runs with the clock frozen
 *   F               fork: the child goes on with the schedule, the parent waits for it,
 *                   prints its snapshot, then goes on too
 *   D               print the snapshot ("proc <path>", "g <name> <fields>", "refused n")
 * Everything but the clock is real: hooks, events, commits, signals, fork.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "task.h"
#include "clock.h" /* runtime/: the virtual clock and the test points (PERFGROUP_TESTING) */

SITE(f0, "A\0F1", "f0");
SITE(f1, "B\0F1", "f1");
SITE(f2, "\0F2", "f2");
SITE(f3, "A\0F2", "f3");
SITE(f4, "C", "f4");
SITE(f5, "", "f5");
SITE(h0, "SIG", "h0");
SITE(h1, "SIG\0SIGF", "h1");
static struct perfgroup_site *const sites[] = {&f0, &f1, &f2, &f3, &f4, &f5};
#define NSITES (sizeof sites / sizeof sites[0])

#define MAX_OPS 100000
#define MAX_LEVEL 64
struct op {
    char c;
    long a, b;
};
static struct op ops[MAX_OPS];
static int nops;
static volatile int pc; /* the next operation; global: a longjmp keeps it */
static jmp_buf jb[MAX_LEVEL + 1];
static char path[64] = "p";
static uint64_t ticks_per_ns;

/* Point signals of the current operation: at point hit `point_at` (0: all). */
static volatile int point_armed, point_at, point_hits, in_handler;
static volatile long sig_a, sig_b;
static uint64_t point_signals;

static void advance(long ns, int on_cpu)
{
    perfgroup__test_vclock.tsc += (uint64_t)ns * ticks_per_ns;
    if (on_cpu)
        perfgroup__test_vclock.cpu_ns += ns;
    else if (ns > 0)
        perfgroup__test_vclock.desched = 1;
}

static void on_signal(int sig)
{
    (void)sig;
    int saved = errno;
    if (!in_handler) /* a signal delivery clears rseq_cs; at a point: no effect wanted */
        perfgroup__test_vclock.desched = 1;
    uint64_t t0 = __perfgroup_enter(&h0);
    advance(sig_a, 1);
    uint64_t t1 = __perfgroup_enter(&h1);
    advance(sig_b, 1);
    __perfgroup_exit(&h1, t1);
    __perfgroup_exit(&h0, t0);
    errno = saved;
}

static void on_point(int point)
{
    (void)point;
    if (!point_armed || in_handler)
        return;
    point_hits++;
    if (point_at == 0 || point_hits == point_at) {
        in_handler = 1;
        sig_a = sig_b = 0;
        point_signals++;
        raise(SIGUSR1);
        in_handler = 0;
    }
}

static void dump(void)
{
    struct perfgroup_snapshot *s = perfgroup_snapshot_take();
    printf("proc %s\n", path);
    for (size_t i = 0; i < perfgroup_snapshot_count(s); i++) {
        const struct perfgroup_stats *g = perfgroup_snapshot_at(s, i);
        if (g->events == 0 && g->discarded == 0 && g->activations == 0)
            continue;
        printf("g %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
               " %" PRIu64 " %" PRIu64, g->name, g->cpu_ns, g->wall_ns, g->blocked_ns, g->cycles,
               g->activations, g->events, g->max_event_ns, g->min_event_ns);
        for (int j = 0; j < PERFGROUP_JANK_BUCKETS; j++)
            printf(" %" PRIu64, g->jank[j]);
        printf(" %" PRIu64 "\n", g->discarded);
    }
    printf("refused %" PRIu64 "\n", perfgroup_snapshot_refused(s));
    printf("points %" PRIu64 "\n", point_signals);
    perfgroup_snapshot_free(s);
    fflush(stdout);
}

static void interp(int level);

/* The end of the schedule: the snapshot, and out without unwinding (frames stay open). */
static void finish(void)
{
    dump();
    _exit(0);
}

/* One instrumented function at `level`: a real frame, deeper than its caller's. */
static __attribute__((noinline)) void run_frame(int level, int f)
{
    struct perfgroup_site *site = sites[f];
    uint64_t tok = __perfgroup_enter(site);
    point_armed = 0;
    interp(level);
    __perfgroup_exit(site, tok);
    __asm__ __volatile__("" ::: "memory"); /* no tail call: the frame stays */
}

static __attribute__((noinline)) void interp(int level)
{
    while (pc < nops) {
        struct op o = ops[pc++];
        if (o.c == 'P') {
            point_armed = 1;
            point_at = (int)o.a;
            point_hits = 0;
            continue;
        }
        switch (o.c) {
        case 'E':
            run_frame(level + 1, (int)o.a);
            break;
        case 'X':
            if (level > 0)
                return; /* run_frame calls the exit hook: its points may signal */
            break;
        case 'R': advance(o.a, 1); break;
        case 'S': advance(o.a, 0); break;
        case 'B': perfgroup_event_begin("ev"); break;
        case 'N': perfgroup_event_end(); break;
        case 'L': perfgroup_nested_loop_begin(); break;
        case 'M': perfgroup_nested_loop_end(); break;
        case 'J':
            setjmp(jb[level]); /* a longjmp comes back here: on with the schedule */
            break;
        case 'K':
            point_armed = 0;
            longjmp(jb[o.a], 1);
        case 'G':
            sig_a = o.a;
            sig_b = o.b;
            raise(SIGUSR1);
            break;
        case 'D': dump(); break;
        case 'F': {
            fflush(stdout);
            pid_t pid = fork();
            if (pid < 0)
                FAIL("fork");
            if (pid == 0) {
                strcat(path, "c");
                point_signals = 0; /* the child's refusals start from zero too */
                break;
            }
            int st;
            if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                FAIL("child of %s failed", path);
            strcat(path, "p");
            break;
        }
        case 'A': perfgroup_group_activate("f5"); break;
        case 'C': perfgroup__test_cpu_override = o.a; break;
        default: FAIL("bad op %c", o.c);
        }
        point_armed = 0;
    }
    finish();
}

int main(void)
{
    char line[128];
    while (fgets(line, sizeof line, stdin)) {
        if (nops == MAX_OPS)
            FAIL("schedule too long");
        struct op *o = &ops[nops];
        o->a = o->b = 0;
        if (sscanf(line, " %c %ld %ld", &o->c, &o->a, &o->b) < 1)
            continue;
        if (o->c == 'H') {
            ticks_per_ns = (uint64_t)o->a / 1000000000u;
            continue;
        }
        if (o->c == 'E' && (o->a < 0 || (size_t)o->a >= NSITES))
            FAIL("bad function %ld", o->a);
        if (o->c == 'K' && (o->a < 0 || o->a > MAX_LEVEL))
            FAIL("bad level %ld", o->a);
        nops++;
    }
    if (!ticks_per_ns)
        FAIL("no H line");
    perfgroup__test_vclock.hz = ticks_per_ns * 1000000000u;
    perfgroup__test_vclock.tsc = 1000000;
    perfgroup__test_vclock.cpu_ns = 1000;
    perfgroup__test_vclock.on = 1;
    perfgroup__test_cpu_override = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    /* every site known before the schedule starts (as a module's constructor does), so
     * that "A" finds f5's function group */
    struct perfgroup_site *all[] = {&f0, &f1, &f2, &f3, &f4, &f5, &h0, &h1};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        PERFGROUP_MODULE_REGISTER(PERFGROUP_ABI_VERSION, all[i], all[i] + 1);
    /* The thread registers here, not in a signal handler: registration is outside the
     * model (runtime.signal.churn.* covers a first hook in a handler). */
    perfgroup_thread_name("model");
    perfgroup__test_point = on_point;
    printf("mask %u\n", perfgroup__cpu_mask != 0); /* the same-CPU check applies */
    interp(0);
    return 0;
}
