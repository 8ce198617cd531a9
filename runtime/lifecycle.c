/* SPDX-License-Identifier: MIT */
/*
 * runtime/lifecycle.c — the life of a thread's entry and of the process around it: thread
 * registration and exit, their group tables, the dead-thread pool, process start-up
 * (perfgroup__init), fork, process exit. registry.c holds the registry, events.c
 * the events, hooks.c the hot path, rec_*.c the recording file's side of the same
 * transitions.
 *
 * A thread's entry (struct pg_thread, never freed, reused by later threads):
 *
 *   state  | event                          | what happens                        | next
 *   -------+--------------------------------+-------------------------------------+------
 *   (none) | first hook / API call          | mapped, linked into thread_list     | LIVE
 *   FREE   | first hook / API call          | popped off the free list, every     | LIVE
 *          | of a thread (thread_slow)      | per-life field reset, life++,       |
 *          |                                | recorder thread start               |
 *   LIVE   | thread exit (TLS destructor)   | open frames charged, event committed| FREE
 *          |                                | (the recorder's THREAD_END), totals |
 *          |                                | folded into the dead pool and zeroed|
 *          |                                | (the entries it wrote), pushed on   |
 *          |                                | the free list                       |
 *   LIVE   | fork(), in the child, another  | totals zeroed (the next thread to   | FREE
 *          | thread's entry                 | take it starts from zero)           |
 *   LIVE   | fork(), in the child, the      | new tid, sampler ring stale, open   | LIVE
 *          | forking thread's entry         | frames and event restart at the fork|
 *   LIVE   | process exit: exit(), return   | thread exit of the exiting thread,  | FREE
 *          | from main (destructor),        | then the recording is closed        |
 *          | quick_exit() (at_quick_exit)   |                                     |
 *
 * The process and its recording file (rec_file.c, rec_exec.c):
 *
 *   event              | runtime (this file)          | file (rec_file.c, rec_exec.c)
 *   -------------------+------------------------------+----------------------------------
 *   start-up           | init: thread key, fork       | PERFGROUP_OUTPUT made unnamed,
 *                      | handlers, at_quick_exit      | linked whole (RECORDING)
 *   fork()             | prepare: registry, dead pool | the child's file made at its
 *                      | and recorder locks; child:   | first record (a child that only
 *                      | entries as above; with an    | execs or exits makes none), or
 *                      | event open, its sampler      | by its sampler when an event
 *                      | (open-event slots)           | stays open a period (progress.c)
 *   vfork() + exec     | nothing (the child shares    | exec wrappers act only in the
 *   posix_spawn()      | the parent's memory)         | process owning the file: the
 *                      |                              | parent's file stays RECORDING
 *   exec*() (own file) | nothing                      | CLOSED before the call,
 *                      |                              | RECORDING again if it fails
 *   exit() / return    | destructor: thread exit, then| CLOSED (after the exiting
 *   quick_exit()       | close (at_quick_exit)        | thread's event reached it)
 *   _exit(), crash     | nothing runs                 | stays RECORDING (crash-safe)
 *
 * Locks: `dead_lock` guards the dead pool and is held by snapshots while they walk the
 * thread list; `free_lock` the free list, only to push or pop; lock order registry
 * (registry.c), dead pool, free list, recorder.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

static pthread_mutex_t dead_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t thread_key;
/* FREE entries, for the next thread to take at once: a new thread of a process with
 * thousands never walks the live ones (a walk CASing each made thread start O(threads),
 * 3,000 threads started together 4.5x slower than plain, issue 34). Held only to push or
 * pop (thread start and exit, cold); lock order: dead pool, then this. */
static pthread_mutex_t free_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pg_thread *free_head;

static void free_push_locked(struct pg_thread *t)
{
    atomic_store(&t->state, PG_THREAD_FREE);
    t->free_next = free_head;
    free_head = t;
}

static void free_push(struct pg_thread *t)
{
    pthread_mutex_lock(&free_lock);
    free_push_locked(t);
    pthread_mutex_unlock(&free_lock);
}

/* A new entry, carved from slabs of PG_ENTRY_SLAB: one mapping per PG_ENTRY_SLAB threads,
 * not one per thread (threads started together contend on the address space's lock, and
 * each mapping is one more of the process's 65,530). Zeroed, never freed. */
#define PG_ENTRY_SLAB 16
static struct pg_thread *entry_new(void)
{
    static struct pg_thread *slab;
    static unsigned left;
    pthread_mutex_lock(&free_lock);
    if (left == 0) {
        slab = perfgroup__map(sizeof *slab * PG_ENTRY_SLAB);
        left = slab ? PG_ENTRY_SLAB : 0;
    }
    struct pg_thread *t = left ? &slab[PG_ENTRY_SLAB - left--] : NULL;
    pthread_mutex_unlock(&free_lock);
    return t;
}

static struct pg_thread *free_pop(void)
{
    pthread_mutex_lock(&free_lock);
    struct pg_thread *t = free_head;
    if (t) {
        free_head = t->free_next;
        t->free_next = NULL;
        atomic_store(&t->state, PG_THREAD_LIVE);
    }
    pthread_mutex_unlock(&free_lock);
    return t;
}
static _Atomic uint32_t thread_index_next = 1;
static struct pg_totals *dead_blocks[PG_GROUP_BLOCKS];

/* ---- the dead-thread pool ---------------------------------------------------------------- */

PG_HIDDEN void perfgroup__dead_lock(void) { pthread_mutex_lock(&dead_lock); }
PG_HIDDEN void perfgroup__dead_unlock(void) { pthread_mutex_unlock(&dead_lock); }

PG_HIDDEN const struct pg_totals *perfgroup__dead_totals(uint32_t gid)
{
    struct pg_totals *b = dead_blocks[gid / PG_GROUP_BLOCK];
    return b ? &b[gid % PG_GROUP_BLOCK] : NULL;
}

/* dead_lock held: the pool starts from zero (perfgroup_reset, fork child) */
PG_HIDDEN void perfgroup__dead_clear_locked(void)
{
    for (unsigned b = 0; b < PG_GROUP_BLOCKS; b++)
        if (dead_blocks[b])
            memset(dead_blocks[b], 0, sizeof(struct pg_totals) * PG_GROUP_BLOCK);
}

/* ---- threads ----------------------------------------------------------------------------- */

static void thread_exit(void *arg);
static struct pg_thread *thread_build(void);

/*
 * perfgroup__tls is NULL here: the thread has no entry yet (PG_TLS_NONE: take one), or the
 * runtime is busy on it (LIVE, latched), or it is being registered (BUILDING: a signal
 * handler interrupted its registration) or gone (GONE: its entry was released at thread
 * exit; a signal handler or a later TLS destructor running instrumented code): refused and
 * counted, never a second entry for one thread, never an allocation in an exiting thread.
 * The entry is published in perfgroup__tls only once whole (its recorder writer too).
 */
PG_HIDDEN struct pg_thread *perfgroup__thread_slow(void)
{
    if (perfgroup__tls_state != PG_TLS_NONE) {
        pg_refuse();
        return NULL;
    }
    perfgroup__tls_state = PG_TLS_BUILDING;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    struct pg_thread *t = thread_build();
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    perfgroup__tls_state = t ? PG_TLS_LIVE : PG_TLS_NONE;
    pg_latch_drop(t);
    return t;
}

static struct pg_thread *thread_build(void)
{
    perfgroup__init();
    if (perfgroup__disabled())
        return NULL;
    struct pg_thread *t = free_pop();
    if (!t) {
        t = entry_new();
        if (!t)
            return NULL;
        atomic_store(&t->state, PG_THREAD_LIVE);
        struct pg_thread *head = atomic_load(&perfgroup__thread_list);
        do
            t->next = head;
        while (!atomic_compare_exchange_weak(&perfgroup__thread_list, &head, t));
    }
    if (t->sw) {
        memset(t->sw, 0, sizeof *t->sw * t->cap);
        memset(t->goff, 0, sizeof *t->goff * t->cap);
    }
    t->errno_at = &errno;
    t->iter = 1;
    t->depth = 0;
    t->event_open = PG_EV_NONE;
    pg_exec_clear(t);
    t->nest_depth = 0;
    t->task_open = PG_TASK_NONE;
    t->task_refused = 0;
    t->pending_alerts = 0;
    perfgroup__implicit_thread_start(t);
    perfgroup__cputime_thread_start(t);
    if (!t->measured) /* the anchor's reading: the estimates' first point (implicit.c) */
        perfgroup__implicit_own(t, t->m_tsc, t->m_cpu);
    t->ov_commit_ns = t->ov_commits = t->ov_slow = t->ov_resyncs = t->ov_dropped = 0;
    t->rec_name_ptr = NULL;
    atomic_store(&t->reset_epoch, atomic_load(&perfgroup__reset_epoch));
    t->tid = (uint32_t)gettid();
    t->index = atomic_fetch_add(&thread_index_next, 1);
    if (t->tid == (uint32_t)getpid())
        strcpy(t->name, "main");
    else
        t->name[0] = '\0';
    if (perfgroup__grow_groups(t, 63) != 0) {
        free_push(t);
        return NULL;
    }
    pthread_setspecific(thread_key, t);
    t->rec = perfgroup__rec_thread_start(t->index, t->tid, t->name);
    return t;
}

/* ---- exit and fork ---------------------------------------------------------------------- */

/* Thread exit (TLS destructor; the runtime's destructor or at_quick_exit for the thread ending the process): frames still open
 * are charged up to now, the pending event is committed, totals go to the dead pool. */
static void thread_exit(void *arg)
{
    struct pg_thread *t = arg;
    if (!t || perfgroup__tls != t)
        return;
    struct pg_thread *latch = pg_latch_take();
    uint64_t tsc = pg_clock_settled(t);
    uint32_t cpu = pg_cpu_now();
    perfgroup__trace_frames(t, 0, t->depth, tsc);
    while (t->depth > 0) {
        pg_frame_end(t, t->depth - 1, tsc, cpu, NULL); /* innermost first: self time as at exits */
        t->depth--;
    }
    perfgroup__event_close(t, tsc);
    perfgroup__cputime_thread_end(t);
    pg_latch_drop(latch);
    perfgroup__alerts_deliver(t); /* user callbacks: not latched */
    latch = pg_latch_take();
    if (t->rec) {
        perfgroup__rec_overhead(t->rec, t->ov_commit_ns, t->ov_commits, t->ov_slow, t->ov_resyncs,
                                t->ov_dropped);
        perfgroup__rec_thread_end(t->rec, tsc);
        t->rec = NULL;
    }
    pthread_mutex_lock(&dead_lock);
    if (atomic_load(&t->reset_epoch) == atomic_load(&perfgroup__reset_epoch)) {
        uint32_t n = t->tot_hi; /* its groups with totals are below */
        for (uint32_t gid = 0; gid < n; gid++) {
            struct pg_totals *b = atomic_load(pg_tslot(t, gid / PG_GROUP_BLOCK));
            if (!b || (b[gid % PG_GROUP_BLOCK].events == 0 &&
                       b[gid % PG_GROUP_BLOCK].discarded == 0 &&
                       b[gid % PG_GROUP_BLOCK].tasks == 0))
                continue;
            if (!dead_blocks[gid / PG_GROUP_BLOCK])
                dead_blocks[gid / PG_GROUP_BLOCK] = perfgroup__map(sizeof(struct pg_totals) * PG_GROUP_BLOCK);
            struct pg_totals *d = dead_blocks[gid / PG_GROUP_BLOCK];
            struct pg_totals *s = &b[gid % PG_GROUP_BLOCK];
            if (!d)
                continue;
            d = &d[gid % PG_GROUP_BLOCK];
            PG_TOTALS_FOLD(d, s);
        }
    }
    perfgroup__thread_totals_zero(t);
    pg_cur_off(); /* its calls reach the hooks, which refuse them */
    PERFGROUP_TLS_CUR.ctl = &perfgroup__lite_none; /* no lite frame (the entry is reused) */
    perfgroup__tls_state = PG_TLS_GONE; /* perfgroup__tls stays NULL: latched for good */
    free_push(t);
    pthread_mutex_unlock(&dead_lock);
    (void)latch;
}

/* Process exit: the exiting thread's open frames and event are committed, then the
 * recording is closed. From a destructor, not atexit(): with the shared runtime an atexit
 * handler registered by this library's constructor runs after the dynamic linker's
 * destructors (rtld_fini is registered after it), so the recorder was closed before the
 * event open at exit() could reach the file. A destructor of this library runs after every
 * atexit handler and after the destructors of the objects that depend on it, with the
 * shared and the static runtime alike. quick_exit() runs no destructor: at_quick_exit. */
static void process_exit(void)
{
    thread_exit(perfgroup__tls);
    perfgroup__rec_close();
}

__attribute__((destructor)) static void perfgroup_dtor(void)
{
    if (perfgroup__owner)
        return; /* a deferring copy (owner.c) started nothing */
    process_exit();
}

/* fork(): the child has one thread, the one that forked. It keeps its shadow stack (its
 * frames are live in the child too) under the child's tid, and an event open at the fork
 * goes on in the child from the fork (fork_restart_event); the other threads' entries are
 * freed with their totals zeroed, and the child's totals start from zero: a child is a
 * process of its own (and the recorder gives it a file of its own). */

static void atfork_prepare(void)
{
    perfgroup__reg_lock();   /* lock order: registry, dead pool, recorder */
    pthread_mutex_lock(&dead_lock);
    pthread_mutex_lock(&free_lock);
    perfgroup__rec_atfork_prepare();
}

static void atfork_parent(void)
{
    perfgroup__rec_atfork_parent();
    pthread_mutex_unlock(&free_lock);
    pthread_mutex_unlock(&dead_lock);
    perfgroup__reg_unlock();
}

/* The child's part of an event open at fork() is its own: the event and every stopwatch
 * still running start over at the fork (what ran before is the parent's), and the child's
 * thread CPU clock, which starts from zero, is read for the event's begin. */
static void fork_restart_event(struct pg_thread *t)
{
    perfgroup__cputime_anchor(t); /* the child's CPU clock starts from zero */
    if (!t->measured)
        perfgroup__implicit_own(t, t->m_tsc, t->m_cpu);
    uint64_t tsc = pg_clock_now();
    uint32_t cpu = pg_cpu_now();
    for (uint32_t i = 0; i < t->depth; i++) {
        t->stack[i].tsc = tsc;
        t->stack[i].cpu = cpu;
        t->stack[i].inner = 0;
    }
    t->ev_inner = 0;
    for (uint32_t i = 0; i < t->nexec; i++) {
        struct pg_gstate *s = &t->sw[t->exec[i]];
        s->recent = 0;
        s->self = 0;
        t->goff[t->exec[i]] = 0;
        s->acts = 0;
        s->discarded = 0;
    }
    pg_exec_clear(t);
    /* a lite event's hot part: the child's from the fork (the only thread in a lite event) */
    atomic_store(&perfgroup__lite_threads, t->est_on == PG_EST_LITE);
    if (t->est_on == PG_EST_LITE) {
        perfgroup__lite_restart(t, tsc);
        /* the lite frames open at the fork (their bits: the mask's, less the runtime's frames')
         * count in the child, as its runtime frames do when they end there */
        for (uint64_t m = pg_lite_open_bits(t); m; m &= m - 1)
            t->lite.ctl.acts[__builtin_ctzll(m)] = 1;
    }
    t->event_stamp++; /* the groups of the stopwatches still running join the list anew */
    if (t->event_open == PG_EV_NONE)
        return;
    int64_t c = pg_clock_gettime_ns(CLOCK_THREAD_CPUTIME_ID);
    t->event_begin_tsc = tsc;
    t->event_begin_cpu_ns = c;
    perfgroup__implicit_own(t, tsc, c);
    if (t->event_open == PG_EV_IMPLICIT) {
        t->imp_begin_cpu = c;
        t->imp_off = t->off;
    }
    perfgroup__progress_open(t, 0); /* the child's event, from the fork (locks held) */
}

static void atfork_child(void)
{
    struct pg_thread *me = perfgroup__tls;
    /* Every other thread's entry is freed with its totals zeroed: the next thread of the
     * child to take it starts from zero, not from a parent thread's totals. */
    free_head = NULL;
    for (struct pg_thread *t = atomic_load(&perfgroup__thread_list); t; t = t->next) {
        if (t == me)
            continue;
        perfgroup__thread_totals_zero(t);
        free_push_locked(t);
    }
    if (me) {
        me->tid = (uint32_t)gettid();
        if (me->tid == (uint32_t)getpid() && !me->name[0])
            strcpy(me->name, "main");
    }
    int sampler = perfgroup__implicit_atfork_child(me);
    perfgroup__ticker_atfork_child(); /* exact till its first event_begin starts one */
    if (me)
        fork_restart_event(me);
    atomic_fetch_add(&perfgroup__reset_epoch, 1);
    perfgroup__dead_clear_locked();
    atomic_store(&perfgroup__refused, 0);
    atomic_store(&perfgroup__clamped, 0);
    atomic_store(&perfgroup__estimated, 0);
    perfgroup__rec_atfork_child(); /* its own file; releases the recorder's lock */
    pthread_mutex_unlock(&free_lock);
    pthread_mutex_unlock(&dead_lock);
    perfgroup__reg_unlock();
    if (sampler)
        perfgroup__sampler_ensure(); /* as the parent: open events' slots, implicit events'
                                      * CPU without rseq (the child's first implicit event
                                      * is in a hook, which may not start it) */
}

PG_HIDDEN void perfgroup__lifecycle_init(void)
{
    pthread_key_create(&thread_key, thread_exit);
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    at_quick_exit(process_exit);
}

/* ---- process start-up: once, from the constructor or the first call that needs it ------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* A recording opened or closed by the API (rec_file.c calls it after its lock is let go). */
static void recording_changed(int opened)
{
    if (opened)
        perfgroup__sampler_ensure(); /* it keeps the open events' slots (progress.c) */
    perfgroup__rekey();              /* trace mode has no keys (reentry.c) */
}

static const struct perfgroup_rec_host rec_host = {
    &perfgroup__refused, &perfgroup__clamped, recording_changed};

static void init_once_fn(void)
{
    /* the recorder is hosted from here on, a deferring copy's too: our fork handlers and
     * destructor, not its own */
    perfgroup__rec_host(&rec_host);
    if (perfgroup__owner_elect()) { /* a deferring copy starts nothing: owner.c */
        perfgroup__gate_update();
        return;
    }
    perfgroup__clock_init();
    perfgroup__cputime_init();
    perfgroup__implicit_init();
    perfgroup__lifecycle_init(); /* thread key, fork handlers, at_quick_exit */
    perfgroup__rec_init(); /* before the first definition, so the recorder sees them all */
    perfgroup__registry_init(); /* the top group, id 0 == PG_TOP_GROUP */
    const char *text = perfgroup__getenv("PERFGROUP_TEXT");
    if (text && *text && perfgroup__text_init(text) == 0)
        perfgroup__text_on = 1;
    /* adaptive unless PERFGROUP_ACCOUNTING=exact: hot events estimate their starts, with
     * the ticker's coarse clock (ticker.c); exact if it cannot start */
    const char *acc = perfgroup__getenv("PERFGROUP_ACCOUNTING");
    if (!(acc && strcmp(acc, "exact") == 0) && perfgroup__ticker_ensure() == 0) {
        perfgroup__est_window = PG_EST_WINDOW;
        /* hot events' lite frames (hooks.c): a transition in PERFGROUP_LITE_R on average
         * through the runtime (0: none, the estimated starts alone) */
        const char *r = perfgroup__getenv("PERFGROUP_LITE_R");
        perfgroup__lite_r = r && *r ? strtoull(r, NULL, 10) : PG_LITE_R;
        if (perfgroup__lite_r > PG_LITE_R_MAX) /* (R + 1 wrapped to 0: a division by zero) */
            perfgroup__lite_r = PG_LITE_R_MAX;
        if (perfgroup__lite_r == 1)
            perfgroup__lite_r = 2; /* the least countdown that lets a lite frame start */
    }
    const char *en = perfgroup__getenv("PERFGROUP_ENABLE");
    if (en && strcmp(en, "0") == 0)
        perfgroup__gate_user(0);
    perfgroup__gate_update();
    if (perfgroup__rec_mode_now() || perfgroup__rseq_cs_off < 0)
        perfgroup__sampler_ensure(); /* the open events' slots (progress.c); implicit events'
                                      * CPU without rseq (implicit.c): never from a hook */
}

PG_HIDDEN void perfgroup__init(void)
{
    pthread_once(&init_once, init_once_fn);
}

__attribute__((constructor(101))) static void perfgroup_ctor(void)
{
    perfgroup__init();
}

/* ---- per-thread group tables ------------------------------------------------------------ */

/* The group table, and with it the list of groups executed in an event (at most one entry
 * per group) and the groups' off-CPU ticks in the event (cold: only cputime.c's settling
 * and commits touch them): the exit hook never has to grow anything. The first
 * PG_GROUPS_INLINE groups' live in the thread's entry; beyond, a mapping each for the group
 * table and for exec + goff + shares (an event's groups for its record), doubled as needed. */
PG_HIDDEN int perfgroup__grow_groups(struct pg_thread *t, uint32_t max_gid)
{
    if (t->cap == 0) { /* a new entry: the tables inside it, no mapping of their own */
        t->sw = t->sw0;
        t->exec = t->exec0;
        t->goff = t->goff0;
        t->shares = t->shares0;
        t->cap = t->exec_cap = PG_GROUPS_INLINE;
    }
    if (max_gid < t->cap)
        return 0;
    uint32_t cap = t->cap;
    while (cap <= max_gid)
        cap *= 2;
    struct pg_gstate *g = perfgroup__map(sizeof *g * cap);
    /* exec[i], goff[i], shares[i] */
    const size_t esz = sizeof(uint32_t) + sizeof(uint64_t) + sizeof(struct perfgroup_rec_group_share);
    uint32_t *e = perfgroup__map(esz * cap);
    if (!g || !e) {
        if (g)
            munmap(g, sizeof *g * cap);
        if (e)
            munmap(e, esz * cap);
        return -ENOMEM;
    }
    uint64_t *goff = (uint64_t *)(void *)(e + cap); /* cap >= 64, a power of 2: aligned */
    struct perfgroup_rec_group_share *shares = (void *)(goff + cap);
    memcpy(g, t->sw, sizeof *g * t->cap);
    memcpy(e, t->exec, sizeof *e * t->nexec);
    memcpy(goff, t->goff, sizeof *goff * t->cap);
    if (t->sw != t->sw0)
        munmap(t->sw, sizeof *g * t->cap);
    if (t->exec != t->exec0)
        munmap(t->exec, esz * t->exec_cap);
    t->sw = g;
    t->exec = e;
    t->goff = goff;
    t->shares = shares;
    t->exec_cap = cap;
    t->cap = cap;
    return 0;
}
