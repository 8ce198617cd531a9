/* SPDX-License-Identifier: MIT */
/* bench/emitted/calls.c — what the code the plugins emit costs per call, against the same
 * program built plain (docs/benchmarks.md, "The code the plugins emit"). Run by
 * bench/emitted/run.py. Two loops, thread-CPU ns per iteration, the best of 9 runs each:
 *   reentry  a loop in group g calling two small functions of g (a lookup in a hash chain and
 *            a store): every call a re-entry, which the inline check skips — the cost of the
 *            check and of what it does to a small function (its prologue, registers);
 *   lite     a loop in group top calling fa (group a) calling fb (group b) in one explicit
 *            event: the event goes hot, and each call is a lite frame made inline — two
 *            transitions and their exits per iteration (one in PERFGROUP_LITE_R through the
 *            runtime).
 * Built plain (-DPERF_GROUP(x)=) the groups vanish and the loops are the baseline. */
#include <perfgroup.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct node { long key, next; };
struct table { unsigned char lsz; struct node *node; };

PERF_GROUP("g") __attribute__((noinline)) struct node *lookup(const struct table *t, long key)
{
    struct node *n = t->node + (key & ((1 << t->lsz) - 1));
    for (;;) {
        if (n->key == key)
            return n;
        if (!n->next)
            return 0;
        n += n->next;
    }
}
PERF_GROUP("g") __attribute__((noinline)) long store(struct node *n, long v)
{
    long o = n->next;
    n->next = 0;
    return o + v;
}
PERF_GROUP("g") __attribute__((noinline)) long reentry_loop(const struct table *t, long n)
{
    long s = 0;
    for (long i = 0; i < n; i++) {
        struct node *x = lookup(t, i & 255);
        s += x ? x->key : 1;
        s += store(x ? x : t->node, i & 1);
    }
    return s;
}

PERF_GROUP("b") __attribute__((noinline)) int fb(int x) { return x * 3 + 1; }
PERF_GROUP("a") __attribute__((noinline)) int fa(int x) { return fb(x) + 2; }
PERF_GROUP("top") __attribute__((noinline)) long lite_loop(long n)
{
    long s = 0;
    for (long i = 0; i < n; i++)
        s += fa((int)i);
    return s;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "reentry";
    long n = argc > 2 ? atol(argv[2]) : 10000000;
    struct table t = {8, calloc(256, sizeof(struct node))};
    for (int i = 0; i < 256; i++)
        t.node[i].key = i;
    double best = 1e9;
    long s = 0;
    for (int r = 0; r < 9; r++) {
        double a = cpu_s();
        if (strcmp(which, "lite") == 0) {
            perfgroup_event_begin("lite");
            s += lite_loop(n);
            perfgroup_event_end();
        } else {
            s += reentry_loop(&t, n);
        }
        double b = cpu_s() - a;
        best = b < best ? b : best;
    }
    printf("%.3f ns/iteration (%ld)\n", best / (double)n * 1e9, s & 1);
    return 0;
}
