/* SPDX-License-Identifier: MIT */
/*
 * runtime/tasks.c — work handed to another thread (perfgroup_task_*, docs/accounting.md
 * "Tasks"): the groups running where the work was queued are captured as a value, and the
 * worker's CPU time between perfgroup_task_begin and _end is charged to them as well as to
 * the groups the worker enters itself (their `task_cpu_ns`, apart from their own `cpu_ns`).
 *
 * State of a thread's task (own thread only; t->task_open):
 *
 *   state  | call                                   | action                          | next
 *   -------+----------------------------------------+---------------------------------+------
 *   NONE   | begin, no event open                   | an explicit event `name` opened | EVENT
 *          | begin, an event open (explicit or      | the CPU clock read              | PART
 *          |   implicit: a worker loop's own event) |                                 |
 *          | begin while the runtime is busy on the | refused, counted                | NONE
 *          |   thread (a signal handler)            |                                 |
 *          | end                                    | nothing                         | NONE
 *   EVENT/ | begin (nested, or a handler that       | refused, counted; task_refused++| same
 *   PART   |   interrupted the task)                |                                 |
 *          | end, task_refused > 0                  | task_refused--, nothing         | same
 *          | end                                    | captured groups charged the     | NONE
 *          |                                        | task's CPU less their own there;|
 *          |                                        | EVENT: its event ended first    |
 *   any    | thread exit / a new thread on the entry| the task dropped, not charged   | NONE
 *
 * capture reads the thread's re-entry mask (PERFGROUP_TLS_CUR.mask, reentry.c): the bits of
 * the groups its frames started in the current iteration — the groups running now — kept
 * exact by the hooks and written in an order a signal handler may read between (mask before
 * sp). Bits are given once, never taken back, so a captured value stays valid.
 */
#include <stdatomic.h>
#include <stdio.h>

#include "internal.h"

#define PG_TASK_MAGIC 0x50475441ull /* "PGTA" in opaque[1]'s upper half: a captured value */

void perfgroup__task_capture(perfgroup_task *out)
{
    uint64_t mask = __atomic_load_n(&PERFGROUP_TLS_CUR.mask, __ATOMIC_RELAXED);
    struct pg_thread *t = perfgroup__tls; /* NULL while the runtime is busy here: index 0 */
    out->opaque[0] = mask & ~(1ull << 63); /* bit 63 is never given */
    out->opaque[1] = PG_TASK_MAGIC << 32 | (t ? t->index : 0u);
}

/* Group gid's own CPU ticks in the thread's current event so far (its stopwatches that
 * ended; measured: wall less the off-CPU time settled inside them; else the wall ticks). */
static uint64_t own_ticks(const struct pg_thread *t, uint32_t gid)
{
    if (gid >= t->cap || t->sw[gid].stamp != t->event_stamp || t->event_open == PG_EV_NONE)
        return 0;
    int64_t recent = (int64_t)t->sw[gid].recent;
    if (recent <= 0)
        return 0;
    uint64_t off = t->measured ? t->goff[gid] : 0;
    return (uint64_t)recent > off ? (uint64_t)recent - off : 0;
}

static uint32_t bit_gid(unsigned bit)
{
    struct pg_group *g = atomic_load_explicit(&perfgroup__bit_group[bit], memory_order_acquire);
    return g ? g->id : UINT32_MAX;
}

void perfgroup__task_begin(const perfgroup_task *task, const char *name)
{
    struct pg_thread *t = pg_self(); /* NULL: busy (a handler inside the runtime), refused */
    if (!t)
        return;
    if (t->task_open != PG_TASK_NONE) {
        t->task_refused++;
        pg_refuse();
        return;
    }
    uint64_t mask = task && task->opaque[1] >> 32 == PG_TASK_MAGIC ? task->opaque[0] : 0;
    /* open from here: a signal handler's begin in between is refused, not a task that
     * would overwrite this one's readings */
    t->task_open = PG_TASK_PART;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    /* the task's CPU: from here to the end of perfgroup_task_end, the runtime's own work for
     * it (its event's open and commit, its records) included */
    struct pg_thread *latch = pg_latch_take();
    t->task_begin_cpu = perfgroup__cputime_read(t, &t->task_begin_tsc);
    pg_latch_drop(latch);
    if (t->event_open == PG_EV_NONE) {
        if (perfgroup_event_begin(name ? name : "task") != 0) {
            t->task_open = PG_TASK_NONE;
            return;
        }
        t->task_event_tsc = t->event_begin_tsc;
        t->task_open = PG_TASK_EVENT;
    }
    t->task_mask = mask;
    t->task_name = name ? name : "task";
    t->task_from = (uint32_t)(task ? task->opaque[1] : 0);
    for (uint64_t m = mask; m; m &= m - 1) {
        unsigned b = (unsigned)__builtin_ctzll(m);
        uint32_t gid = bit_gid(b);
        t->task_base[b] = gid == UINT32_MAX ? 0 : own_ticks(t, gid);
    }
}

/* Recording: the task as an interval marker "task" on the worker's track, its text naming
 * it, the groups it was charged to and the thread that captured it ("job for addon_a;
 * queued on thread 1": the converters' link, docs/converter.md). */
static void task_marker(const struct pg_thread *t, const char *name, const uint32_t *gid,
                        unsigned n)
{
    char text[512];
    int k = snprintf(text, sizeof text, "%s for ", name ? name : "task");
    for (unsigned i = 0; i < n && k > 0 && (size_t)k < sizeof text; i++) {
        struct pg_group *g = perfgroup__group_at(gid[i]);
        k += snprintf(text + k, sizeof text - (size_t)k, "%s%s", i ? ", " : "", g ? g->name : "?");
    }
    if (!n && k > 0 && (size_t)k < sizeof text)
        k += snprintf(text + k, sizeof text - (size_t)k, "no group");
    if (k > 0 && (size_t)k < sizeof text && t->task_from)
        snprintf(text + k, sizeof text - (size_t)k, "; queued on thread %u", t->task_from);
    perfgroup_marker_end("task", text, t->task_begin_tsc);
}

void perfgroup__task_end(void)
{
    struct pg_thread *t = perfgroup__tls; /* NULL: busy, the begin was refused as well */
    if (!t || t->task_open == PG_TASK_NONE)
        return;
    if (t->task_refused) {
        t->task_refused--;
        return;
    }
    /* the captured groups' own CPU in the task, before a commit zeroes it */
    uint32_t gid[64];
    uint64_t own[64];
    unsigned n = 0;
    for (uint64_t m = t->task_mask; m; m &= m - 1) {
        unsigned b = (unsigned)__builtin_ctzll(m);
        uint32_t g = bit_gid(b);
        if (g == UINT32_MAX)
            continue;
        uint64_t now = own_ticks(t, g);
        /* below its begin's: the event was committed in between (a nested loop) */
        own[n] = perfgroup__ticks_to_ns(now >= t->task_base[b] ? now - t->task_base[b] : now);
        gid[n++] = g;
    }
    /* the task stays open (a handler's begin refused) until its readings are taken */
    int kind = t->task_open;
    const char *name = t->task_name;
    if (kind == PG_TASK_EVENT && t->event_open == PG_EV_EXPLICIT &&
        t->event_begin_tsc == t->task_event_tsc)
        perfgroup_event_end(); /* its own event (not one the task's code ended and began) */
    struct pg_thread *latch = pg_latch_take(); /* a handler's hooks meanwhile: refused */
    if (perfgroup__rec_mode_now())
        task_marker(t, name, gid, n);
    uint64_t tsc;
    int64_t c = perfgroup__cputime_read(t, &tsc);
    pg_latch_drop(latch);
    /* 0 when either reading failed (0) or the clock went back (a fork child's starts anew) */
    uint64_t cpu = t->task_begin_cpu > 0 && c > t->task_begin_cpu ? (uint64_t)(c - t->task_begin_cpu) : 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->task_open = PG_TASK_NONE;
    for (unsigned i = 0; i < n; i++)
        own[i] = own[i] < cpu ? cpu - own[i] : 0; /* on its behalf: what it did not run itself */
    if (n)
        perfgroup__task_charge(t, gid, own, n);
}
