/* SPDX-License-Identifier: MIT */
/*
 * runtime/internal.h — the runtime's internal data structures, shared by hooks.c (hot path),
 * registry.c, events.c, lifecycle.c (threads, fork, exit), the sampler, alerts, snapshots and
 * the text trace.
 * Not installed.
 *
 * Who writes what:
 *   struct pg_group, struct pg_func   global, created under the registry lock, never freed;
 *                                     `active` / `active_mask` change at run time (relaxed)
 *   struct pg_thread                  one per thread; everything but `totals` and `seq` is
 *                                     touched by its own thread only
 *   pg_thread.totals                  written by its thread at commit inside a seqlock
 *                                     (`seq` odd while writing), read by snapshots
 *   pg_thread.samples                 written by the CPU-clock sampler thread (implicit.c)
 *                                     inside its own seqlock, read by the thread; the
 *                                     sampler reads `life`, `imp_open`, `imp_count`, `cpu_clock`
 *   pg_thread.pub_*                   the open event, written by its thread at open and
 *                                     commit inside `pub_seq`, read by the sampler
 *                                     (progress.c); `smp_*` are the sampler's own
 */
#ifndef PERFGROUP_RUNTIME_INTERNAL_H
#define PERFGROUP_RUNTIME_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>

#include "perfgroup.h"
#include "perfgroup/abi.h"
#include "clock.h"
#include "record.h"

#define PG_STACK_MAX        256    /* live acquiring frames per thread; deeper ones are dropped */
#define PG_SITE_GROUPS      3      /* attribute group, file group, function group */
#define PG_GROUP_BLOCK      1024   /* groups per registry / totals block */
#define PG_GROUP_BLOCKS     4096   /* => at most 4M groups */
#define PG_GROUPS_INLINE    64     /* groups whose per-thread tables live in the entry */
#define PG_SHARES_INLINE    16     /* of them, room in the entry for an event's record */
#define PG_MAX_GROUPS       (PG_GROUP_BLOCK * PG_GROUP_BLOCKS)
#define PG_NEST_MAX         16     /* nested event loops per thread */
#define PG_ALERTS_MAX       16
#define PG_PENDING_ALERTS   8
#define PG_TOP_GROUP        0u     /* group id of the top group */
#define PG_THREAD_NAME_MAX  64

/* perfgroup__gate: what the hooks do. Read first on every hook call. */
enum {
    PG_GATE_OFF = 0,      /* switched off (perfgroup_stop) or disabled: return at once */
    PG_GATE_ON = 1,       /* the fast path */
    PG_GATE_SPECIAL = 2,  /* on, through the slow path: a debug mode (text trace), or clocks
                           * other than the counter + rseq pair (pg_clocks_fast) */
};
extern PG_HIDDEN _Atomic uint32_t perfgroup__gate;
extern PG_HIDDEN int perfgroup__text_on;

struct pg_group {
    const char *name;
    uint32_t id;
    uint8_t kind;               /* enum perfgroup_group_kind */
    _Atomic uint8_t active;
    uint8_t bit;                /* its bit in re-entry masks + 1 (reentry.c); 0: none yet */
    struct pg_group *hash_next;
};

struct pg_func {
    uint64_t rec_head;           /* perfgroup__rec_interval_head(id): a trace record's start */
    uint32_t id;
    uint8_t ngroups;
    _Atomic uint8_t active_mask; /* bit i: gid[i] is active */
    uint16_t flags;              /* PERFGROUP_SITE_F_* of the first site seen */
    uint64_t key;                /* its sites' re-entry key (reentry.c); 0: never skipped;
                                  * atomic: a re-key writes it while hooks read it */
    uint64_t gbit[PG_SITE_GROUPS]; /* gid[i]'s re-entry bit, 0 if none (atomic, as key) */
    uint32_t gid[PG_SITE_GROUPS];
    uint32_t max_gid;
    uint32_t line;
    const char *name;            /* as emitted (mangled for C++) */
    const char *file;
    const char *module;          /* the object its code is in ("" the program): interned */
    const char *attr_group;      /* "" if none; for the text trace */
    const char *file_group;
    struct pg_func *hash_next;
    struct pg_func *all_next;
};

/* Per thread, per group: the stopwatch and what it measured in the current event. */
struct pg_gstate {
    uint64_t running;   /* iteration whose stopwatch holds the group; 0: none */
    uint64_t recent;    /* cycles charged in the current event */
    uint64_t self;      /* of them, the cycles its frames were the innermost acquiring one
                         * (self time, docs/accounting.md "Self time"), less the off-CPU
                         * ticks settled while they were; modulo 2^64 (a sampled start's
                         * correction may take it below 0): commit() clamps it */
    uint32_t acts;      /* stopwatches committed in the current event */
    uint32_t stamp;     /* == thread's event_stamp: executed in the current event */
    uint32_t discarded; /* measures dropped in the current event (CPU change, TSC backwards) */
    uint16_t est_left;  /* estimated starts left to this group's next sampled one (hooks.c) */
    uint16_t est_cycle; /* the length of its current sampling cycle; 0: none yet */
    uint32_t parent;    /* in the current event (set with stamp): the innermost running group
                         * (id + 1) when its first stopwatch of the event ran; 0: the event's
                         * root (the recording's call tree, docs/accounting.md "Self time");
                         * lite frames' groups: learnt (lparent, "Lite frames") */
    uint32_t lparent;   /* the parent learnt for it in lite events of this thread (hooks.c,
                         * lite_learn): the group's id + 2, 1 the root, 0 none yet (in the
                         * struct's padding: no memory more per thread and group) */
};
_Static_assert(sizeof(struct pg_gstate) == 48, "pg_gstate: lparent in its padding");

/* One acquiring activation on the shadow stack. */
struct pg_frame {
    uintptr_t sp;        /* the enter hook's CFA: deeper frames have lower values */
    uintptr_t ra;        /* the enter hook's return address: which call instruction */
    uint64_t tsc;
    uint64_t iter;
    struct pg_func *fn;
    uint64_t bits;       /* re-entry bits of the groups it started (reentry.c) */
    uint64_t inner;      /* the cycles of its span its nested acquiring frames took (their
                          * spans as they ended), modulo 2^64: its self is span - inner; a
                          * segment-accounted frame (lite) the runtime pushed: cur.sp when it
                          * was pushed, which its exit restores (0: the frame below's) */
    uint32_t cpu;
    uint16_t gen;        /* token check: a frame dropped by resync is never charged */
    uint8_t mask;        /* bit i: fn->gid[i] was acquired here */
    uint8_t lite;        /* 0: charged its span; PG_FRAME_SEG | the cur.top it covered: in
                          * an event's segment-accounted hot part (lite frames, hooks.c) */
};
#define PG_FRAME_SEG 0x80u

/* A thread's lite frames and the sampled accounting of an event's hot part (hooks.c). The
 * state of a segment (the stretch between two transitions) is the running mask and the
 * innermost frame (cur.top); per re-entry bit, the sampled segments' cycles in which the bit
 * ran (run) or was innermost (self), and the long spans' (lrun, lself), charged whole. */
struct pg_lite {
    struct perfgroup_lite ctl;  /* cur.ctl: the countdown (the ticker stores 1) and acts */
    uint64_t hot_tsc, hot_off;  /* the hot part's start, and the thread's off-CPU total then */
    uint64_t last, last_off;    /* the newest counter reading in the hot part, `off` then */
    uint64_t tick;              /* perfgroup__tick at that reading */
    uint64_t early;             /* the enter hook's reading at its start (0: none) */
    uint64_t seg_tsc;           /* the measured segment's start */
    uint64_t seg_mask, seg_self;/* its state: the running bits, the innermost frame's bits (bit
                                 * 63: none, the event's own code: the top group's self) */
    uint32_t rng;               /* xorshift32 state of the countdown's lengths */
    uint8_t armed;              /* a measured segment is open: the next transition ends it */
    uint64_t sum, lsum;         /* cycles of the measured segments, of the long spans */
    uint64_t touched;           /* bits with cycles below */
    uint64_t run[64], self[64], lrun[64], lself[64]; /* [63]: the top group's self */
    /* The parents of lite frames' groups (the recording's call tree), learnt at the
     * transitions the runtime sees in the hot part (a frame it pushes has the innermost frame
     * then as its parent, a lite frame's exit through it the frame it restores) into the
     * group's pg_gstate.lparent: the bits learnt in this event (the first counts; the others
     * keep an earlier event's). perfgroup__lite_fold stamps them. */
    uint64_t learnt;
};

struct pg_nest {          /* an event suspended by a nested loop */
    const char *name;
    uint32_t open;        /* PG_EV_* */
    uint32_t implicit_frame;
    uint32_t depth;       /* frames live when the nested loop began */
    uint64_t iter;        /* their iteration */
    uint64_t lite_bits;   /* the bits of lite frames open then (a lite event), given back */
    uint64_t lite_top;    /* cur.top then */
};

enum { PG_EV_NONE = 0, PG_EV_EXPLICIT = 1, PG_EV_IMPLICIT = 2 };
enum { PG_TASK_NONE = 0, PG_TASK_EVENT = 1, PG_TASK_PART = 2 };

/* The last PG_SAMPLES readings of a thread's CPU clock, taken by the sampler thread
 * (implicit.c). Sample k (0-based since the ring was reset) is at index k % PG_SAMPLES. */
#define PG_SAMPLES 8
struct pg_samples {
    _Atomic uint32_t seq;              /* odd while the sampler writes */
    _Atomic uint32_t n;                /* samples taken since the reset */
    _Atomic uint32_t life;             /* the pg_thread life they belong to */
    _Atomic uint64_t tsc[PG_SAMPLES];  /* pg_clock_now() at the reading */
    _Atomic int64_t cpu[PG_SAMPLES];   /* the thread's CPU clock, ns */
};
enum { PG_THREAD_FREE = 0, PG_THREAD_LIVE = 1 };

struct pg_thread {
    /* ---- hot: touched by the hooks ---- */
    uint64_t iter;              /* iteration number; bumped per event and nested loop */
    uint32_t depth;             /* frames on the shadow stack */
    uint16_t gen;
    uint8_t event_open;         /* PG_EV_* */
    uint8_t est_on;             /* estimating: stopwatches start at last_tsc (below);
                                 * PG_EST_LITE: its hot part segment-accounted (lite frames) */
    uint32_t cap;               /* entries in g[] */
    uint32_t event_stamp;
    uint32_t implicit_frame;    /* stack index of the frame that opened the implicit event */
    uint32_t nexec, exec_cap;   /* groups executed in the current event */
    struct pg_gstate *sw;       /* the groups' stopwatches, by group id (sw0, or a mapping) */
    uint32_t *exec;
    struct perfgroup_rec_group_share *shares; /* an event's groups for its record (cold):
                                 * shares0 (PG_SHARES_INLINE of them) or grow_groups' (cap) */
    struct perfgroup_rec_group_share *shares_big; /* PG_GROUPS_INLINE of them, mapped at the
                                 * first recorded event of more than PG_SHARES_INLINE groups
                                 * while the tables are the entry's (kept for its life) */
    uint64_t *goff;             /* per group: of its `recent`, the ticks the thread spent off
                                 * its CPU, added by the settling of a deschedule to every
                                 * stopwatch live across it (cputime.c); cold, never touched
                                 * by the hooks' fast path */
    struct perfgroup_rec_thread *rec;
    /* adaptive accounting (docs/accounting.md, "Hot threads: estimated starts") */
    uint64_t last_tsc;          /* the newest counter reading of a hook or an event open */
    uint32_t est_left;          /* exact: starts left in this rate window */
    uint32_t est_rng;           /* xorshift32 state of the sampling cycles' lengths */
    uint64_t est_win;           /* exact: the counter at the rate window's first start */
    uint64_t est_tick;          /* perfgroup__tick at the newest start that read the counter
                                 * in an estimating event (0: an odd one) */
    uint64_t ev_inner;          /* the event's cycles its outermost acquiring frames took, and
                                 * its off-CPU ticks while none ran: the top group's self is
                                 * the event's cycles less these (pg_frame.inner's for the
                                 * event's root) */

    /* ---- cold: events and commits, own thread only ---- */
    const char *event_name;
    uint64_t event_begin_tsc;
    int64_t event_begin_cpu_ns;
    uint32_t event_flags;
    uint32_t nest_depth;
    struct pg_nest nest[PG_NEST_MAX];
    /* measured CPU time (cputime.c): the reading the off-CPU time is settled from */
    uint8_t measured;           /* rseq armed: CPU time measured, not estimated */
    uint8_t own_n;              /* own CPU-clock readings kept (outside the hooks), <= 2
                                 * (implicit.c, below: here, it fills measured's padding) */
    uint64_t off;               /* off-CPU ticks so far, as far as settled */
    uint32_t m_cpu_id;          /* the CPU at the last reading (same-CPU check only) */
    uint64_t m_tsc;             /* counter at the last CPU-clock reading */
    int64_t m_cpu;              /* the thread's CPU clock then, ns */
    uint64_t imp_off;           /* `off` at the implicit event's begin */
    /* implicit events' CPU time without rseq (implicit.c) */
    double cpu_ratio;           /* on-CPU ratio of the newest sample interval; 1 at start */
    int64_t imp_begin_cpu;      /* CPU clock estimated at the event's begin; < 0: none */
    uint64_t own_tsc[2];        /* newest last (own_n of them, above) */
    int64_t own_cpu[2];
    uint32_t smp_count, smp_idle, smp_life; /* the sampler's own bookkeeping of this thread */
    uint32_t pending_alerts;
    struct perfgroup_alert_info alerts[PG_PENDING_ALERTS];
    int alert_ids[PG_PENDING_ALERTS];
    uint64_t alerts_lost;
    int *errno_at;              /* the thread's errno (thread_build): the cold paths of the
                                 * hooks save and restore it through this, no libc call */
    const char *rec_name_ptr;    /* last event name interned for the recorder */
    uint32_t rec_name_id;
    /* the runtime's own cost, reported to the recorder */
    uint64_t ov_commit_ns, ov_commits, ov_slow, ov_resyncs, ov_dropped;
    uint32_t tot_hi;            /* totals written for groups below this id (thread only) */
    /* the open task (tasks.c, docs/accounting.md "Tasks"), own thread only */
    uint8_t task_open;          /* PG_TASK_*: none, its own explicit event, part of the open one */
    uint32_t task_refused;      /* begins refused while a task was open: their ends do nothing */
    uint32_t task_from;         /* the capturing thread's index (0: unknown) */
    uint64_t task_mask;         /* the captured groups' re-entry bits */
    int64_t task_begin_cpu;     /* the CPU clock at its begin, ns */
    uint64_t task_begin_tsc;    /* the counter then (its marker's begin) */
    uint64_t task_event_tsc;    /* the begin of the event it opened (PG_TASK_EVENT) */
    const char *task_name;

    /* ---- shared with snapshots ---- */
    _Atomic uint32_t seq;                    /* seqlock over totals */
    _Atomic uint32_t reset_epoch;            /* perfgroup_reset() generation seen */
    _Atomic(struct pg_totals *) totals_b0;   /* the first block's totals (pg_tslot) */
    _Atomic int state;                       /* PG_THREAD_* */
    _Atomic uint32_t life;                   /* bumped each time a thread takes this entry */
    _Atomic uint32_t imp_open;               /* an implicit event is open (for the sampler) */
    _Atomic uint32_t imp_count;              /* implicit events begun (sampler: activity) */
    _Atomic int32_t cpu_clock;               /* this thread's CPU clock id */
    /* the open event as the sampler reads it for the file's open-event slot (progress.c):
     * written by the thread at its events' open and commit while recording, a seqlock */
    _Atomic uint32_t pub_seq;                /* odd while the thread rewrites it */
    _Atomic uint32_t pub_open;               /* an event is open: 1 explicit, 2 implicit */
    _Atomic uint32_t pub_index;              /* the thread index it records under */
    _Atomic uint32_t pub_name;               /* string id of its name, 0: implicit */
    _Atomic uint32_t pub_tid;
    _Atomic uint64_t pub_begin_tsc;
    _Atomic int64_t pub_begin_cpu;           /* the CPU clock at its begin; < 0: unknown */
    _Atomic uint64_t pub_iter;               /* t->iter at its open: its frames have >= */
    /* the event's groups that ran and stopped (exec[]), mirrored outside the seqlock for the
     * sampler, which cannot read exec[] (reallocated by the thread): the count always, the
     * first PGF_OPEN_GROUPS ids (pg_exec_add, pg_exec_clear) */
    _Atomic uint32_t pub_nexec;
    _Atomic uint32_t pub_exec[PGF_OPEN_GROUPS];
    uint64_t smp_slot_begin;                 /* sampler: the event in the slot, 0: empty */
    uint32_t smp_slot_index;                 /* sampler: that slot's thread index */
    struct pg_samples samples;
    uint32_t index;                          /* 1-based, stable for the process */
    uint32_t tid;
    char name[PG_THREAD_NAME_MAX];
    struct pg_thread *next;                  /* registry list, never unlinked */
    struct pg_thread *free_next;             /* free list (lifecycle.c), FREE entries only */

    /* ---- sparse, last: a thread makes resident only what it uses of them (issue 34:
     * everything above and the first frames fit in two pages) ---- */
    /* the first PG_GROUPS_INLINE groups' tables (g, exec, goff point here until a group
     * beyond them runs: perfgroup__grow_groups maps larger ones) */
    uint32_t exec0[PG_GROUPS_INLINE];
    uint64_t goff0[PG_GROUPS_INLINE];
    struct pg_gstate sw0[PG_GROUPS_INLINE];
    /* an event's first PG_SHARES_INLINE groups for its record, written at commit while
     * recording only; an event of more, in a thread of inline tables, takes shares_big */
    struct perfgroup_rec_group_share shares0[PG_SHARES_INLINE];
    struct pg_frame stack[PG_STACK_MAX];     /* hot: the shadow stack */
    /* per block of PG_GROUP_BLOCK groups from the second on, the thread's totals (mapped at
     * its first commit of a group there; snapshots read them); [0] unused: totals_b0 */
    _Atomic(struct pg_totals *) totals[PG_GROUP_BLOCKS];
    /* the first block's totals, totals_b0 once the thread commits (no mapping of its own):
     * only the pages of the groups it commits become resident */
    struct pg_totals tot0[PG_GROUP_BLOCK];
    /* the open task: per captured group (by re-entry bit), its own CPU ticks in the event at
     * the task's begin (tasks.c); touched only by threads that run tasks */
    uint64_t task_base[64];
    /* lite frames (hooks.c, docs/accounting.md "Lite frames"): touched by hot threads only */
    struct pg_lite lite;
    /* lite frames left open by perfgroup_event_end (called inside them): their inline exits
     * restore the ended event's state (its frames' bits), so no lite part until the ended
     * event's outermost frame, index lite_hold - 1 with generation lite_hold_gen, is gone */
    uint32_t lite_hold;
    uint16_t lite_hold_gen;
} __attribute__((aligned(4096))); /* an entry starts a page: its first two pages are the
                                   * resident ones, in a slab of entries as alone */

/* The slot of a thread's totals block b (the first one near the entry's other fields, so a
 * thread of a few groups keeps its entry in two resident pages). */
static inline _Atomic(struct pg_totals *) *pg_tslot(struct pg_thread *t, uint32_t b)
{
    return b ? &t->totals[b] : &t->totals_b0;
}

#define PG_SAMPLE_NS 10000000ull /* 10 ms: the sampler's period (PERFGROUP_SAMPLE_MS) */

extern PG_HIDDEN __thread struct pg_thread *perfgroup__tls
    __attribute__((tls_model("initial-exec")));

/*
 * The per-thread re-entrancy latch (as compiler-rt XRay's RecursionGuard). perfgroup__tls is
 * the thread's entry only while the runtime is idle on the thread; it is NULL while the
 * thread is unregistered, being registered, gone (exited), or while the runtime is busy on
 * it (an event's open or commit, a resync, a chunk switch from a slow path, a first call's
 * set-up, a nested loop): every hook already branches on it being NULL, so a hook that runs
 * while the runtime is busy on its thread (a signal handler running instrumented code) goes
 * to the slow path at no cost to the fast one, and there is refused and counted
 * (perfgroup__refused) instead of nesting. pg_latch_take() returns what to give
 * pg_latch_drop(): NULL if the latch was held already, so nested sections nest. One store
 * each way: a signal sees the thread either idle or busy, never half.
 */
enum { PG_TLS_NONE = 0, PG_TLS_BUILDING = 1, PG_TLS_LIVE = 2, PG_TLS_GONE = 3 };
extern PG_HIDDEN __thread uint32_t perfgroup__tls_state __attribute__((tls_model("initial-exec")));
extern PG_HIDDEN _Atomic uint64_t perfgroup__refused; /* hook and API calls refused */
extern PG_HIDDEN _Atomic uint64_t perfgroup__clamped; /* events whose CPU exceeded their wall */
/* Adaptive accounting (docs/accounting.md, "Hot threads: estimated starts"): a thread whose
 * event starts PG_EST_WINDOW stopwatches within PG_EST_WINDOW * PG_EST_HOT_NS estimates the
 * start of its next ones (the newest counter reading) and measures the error on one start in
 * PG_EST_CYCLE on average. perfgroup__est_window: PG_EST_WINDOW, or 0 (exact mode). */
#define PG_EST_WINDOW 64u
#define PG_EST_HOT_NS 2000u
#define PG_EST_CYCLE  8u
#define PG_LITE_R     64u  /* the default mean countdown of lite transitions */
#define PG_LITE_R_MAX 65536u /* PERFGROUP_LITE_R above it: this (the countdown's arithmetic) */
#define PG_EST_LITE   2u   /* pg_thread.est_on: lite frames, the hot part sampled by segment */
/* Lite frames: the countdown's mean (PERFGROUP_LITE_R; 0: no lite frames) */
extern PG_HIDDEN uint64_t perfgroup__lite_r;
extern PG_HIDDEN _Atomic uint32_t perfgroup__lite_threads; /* threads in a lite event now */
extern PG_HIDDEN struct perfgroup_lite perfgroup__lite_none;
/* lite.c: lite frames' accounting (hooks.c makes the transitions; docs/accounting.md) */
PG_HIDDEN void perfgroup__lite_fold(struct pg_thread *t, uint64_t end_tsc);
PG_HIDDEN void perfgroup__lite_restart(struct pg_thread *t, uint64_t tsc);
PG_HIDDEN uint64_t perfgroup__lite_reload(struct pg_thread *t);
PG_HIDDEN uint64_t perfgroup__lite_selfm(const struct pg_thread *t);
PG_HIDDEN int perfgroup__lite_close(struct pg_thread *t, uint64_t *tscp);
PG_HIDDEN void perfgroup__lite_open(struct pg_thread *t, int closed);
/* Does perfgroup__lite_close read the counter at a transition now, `tick` the coarse clock's
 * value: a measured segment ends there, or the clock ticked since the thread's newest reading
 * (the enter hook reads it early exactly then: hooks.c, enter_on_lite). */
static inline int pg_lite_reads(const struct pg_thread *t, uint64_t tick)
{
    return t->lite.armed || tick != t->lite.tick;
}
/* Charge the open frames [0, depth) of iteration `iter` up to `tsc` without ending them
 * (event_api.c: a nested loop's begin, and an event's switch to lite frames) */
PG_HIDDEN void perfgroup__bank_frames(struct pg_thread *t, uint32_t depth, uint64_t iter,
                                      uint64_t tsc);
/* The bits of the lite frames open now: the mask's less those of the runtime's frames of
 * this iteration (cold paths: it walks the shadow stack). */
static inline uint64_t pg_lite_open_bits(const struct pg_thread *t)
{
    uint64_t rt = 1ull << 63;
    for (uint32_t i = 0; i < t->depth; i++)
        if (t->stack[i].iter == t->iter)
            rt |= t->stack[i].bits;
    return PERFGROUP_TLS_CUR.mask & ~rt;
}

/* The innermost acquiring frame for cur.top after the shadow stack changed (lite events) */
static inline uint8_t pg_top_of(const struct pg_thread *t)
{
    uint32_t d = t->depth;
    return d != 0 && t->stack[d - 1].iter == t->iter && t->stack[d - 1].mask ? PERFGROUP_TOP_RT
                                                                          : PERFGROUP_TOP_NONE;
}
extern PG_HIDDEN uint32_t perfgroup__est_window;
extern PG_HIDDEN _Atomic uint64_t perfgroup__estimated; /* stopwatches with an estimated start */
/* The coarse clock of estimated starts (ticker.c): a word advanced every 2 ms while
 * threads estimate (even), odd while no ticker runs fast; a start that sees it changed since
 * its thread's est_tick reads the counter. */
extern PG_HIDDEN _Atomic uint64_t perfgroup__tick;
extern PG_HIDDEN _Atomic uint32_t perfgroup__tick_used;
PG_HIDDEN int perfgroup__ticker_ensure(void);
/* spawn.c: a runtime thread (detached, 64 KiB stack, no signal of the program); pthread_create's
 * result. Never from a hook. */
/* A runtime thread: its main function and its name (static storage: spawn.c). */
struct pg_spawn {
    void *(*main_fn)(void *);
    const char *name;
};
PG_HIDDEN int perfgroup__spawn(const struct pg_spawn *what);
PG_HIDDEN void perfgroup__ticker_atfork_child(void);

static inline __attribute__((always_inline)) struct pg_thread *pg_latch_take(void)
{
    struct pg_thread *was = perfgroup__tls;
    perfgroup__tls = NULL;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    return was;
}

/* The latch taken by a hook's fast path, which has just read perfgroup__tls (not NULL) and
 * drops it with pg_latch_drop(that value): no load again. */
static inline __attribute__((always_inline)) void pg_latch_hold(void)
{
    perfgroup__tls = NULL;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline __attribute__((always_inline)) void pg_latch_drop(struct pg_thread *was)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    perfgroup__tls = was;
}

/* The inline re-entry state of the thread (reentry.c has its state table). Its own thread
 * writes it, a signal handler's inline checks may read it between two stores: sp = 0 first
 * to turn it off, the mask before sp to turn it on. */
static inline __attribute__((always_inline)) void pg_cur_off(void)
{
    __atomic_store_n(&PERFGROUP_TLS_CUR.sp, 0, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline __attribute__((always_inline)) void pg_cur_on(uint64_t mask, uintptr_t sp)
{
    __atomic_store_n(&PERFGROUP_TLS_CUR.mask, mask, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&PERFGROUP_TLS_CUR.sp, sp, __ATOMIC_RELAXED);
}

/* From the shadow stack (cold paths: it walks it): the bits of the groups running in this
 * event's iteration, below the innermost frame. The mask is always exact (a push ORs into
 * it); sp is 0 when there is nothing to skip. */
static inline void pg_cur_refresh(const struct pg_thread *t)
{
    uint32_t d = t->depth;
    int open = t->event_open != PG_EV_NONE;
    uint64_t mask = 0;
    for (uint32_t i = 0; open && i < d; i++)
        if (t->stack[i].iter == t->iter)
            mask |= t->stack[i].bits;
    pg_cur_off();
    pg_cur_on(mask, open && d != 0 ? t->stack[d - 1].sp : 0);
}

/* fn's re-entry key and bits (reentry.c), groups[i] being fn->gid[i]'s; registry lock held. */
PG_HIDDEN void perfgroup__key_locked(struct pg_func *fn, struct pg_group *const *groups);
/* The group holding re-entry bit i (1 << i), NULL if none yet: set once, before any key has
 * the bit (release), never changed. */
extern PG_HIDDEN _Atomic(struct pg_group *) perfgroup__bit_group[64];
PG_HIDDEN void perfgroup__rekey(void);

/* A call the latch turns away (busy, being registered, or gone): counted, lock-free. */
static inline void pg_refuse(void)
{
    atomic_fetch_add_explicit(&perfgroup__refused, 1, memory_order_relaxed);
}


/* Group `gid` joins the current event's list of executed groups (once per event: its
 * stamp), mirrored for the sampler's open-event slot (progress.c): two relaxed stores. */
static inline __attribute__((always_inline)) void pg_exec_add(struct pg_thread *t, uint32_t gid)
{
    uint32_t n = t->nexec;
    if (PG_LIKELY(n < t->exec_cap)) { /* always: exec_cap == cap (grow_groups) */
        t->exec[n] = gid;
        t->nexec = n + 1;
        if (n < PGF_OPEN_GROUPS)
            atomic_store_explicit(&t->pub_exec[n], gid, memory_order_relaxed);
        atomic_store_explicit(&t->pub_nexec, n + 1, memory_order_release);
    }
}

static inline void pg_exec_clear(struct pg_thread *t)
{
    t->nexec = 0;
    atomic_store_explicit(&t->pub_nexec, 0, memory_order_relaxed);
}

/*
 * Charge `delta` cycles of a stopwatch of group `gid` to the current event, `self` of them
 * its self time (ok == 0: the measure is dropped and counted), `finished`: the stopwatch
 * ends here (an activation; a nested loop's banking charges without ending it). The group
 * joins the event's list of executed groups the first time, with its parent: the innermost
 * running group below frame `at` (its frame, or the one a sampled start is pushing). Used
 * by the exit hook (its fast path charges with pg_charge_only and stamps a frame's new
 * groups in hooks.c's exit_stamp), thread exit, nested loops and the sampled starts'
 * corrections.
 */
/* The innermost running group below frame `at` (id + 1; its frame's first acquired group),
 * 0 if none: the innermost acquiring frame under it of the current iteration. Cold: once per
 * group and event, out of line (never reached from the exit hook's fast path: exit_stamp). */
static __attribute__((noinline, cold)) uint32_t pg_parent_below(const struct pg_thread *t,
                                                                const struct pg_frame *at)
{
    for (uint32_t i = (uint32_t)(at - t->stack); i-- > 0;) {
        const struct pg_frame *p = &t->stack[i];
        if (p->iter != t->iter)
            break;
        if (p->mask)
            return p->fn->gid[__builtin_ctz(p->mask)] + 1;
    }
    return 0;
}

/* The parent a group gets from the innermost frame `top` (cur.top) at a transition the
 * runtime sees in a lite event, frame `at` being the runtime's next (its innermost is the one
 * below): a lite frame's group, the runtime's innermost acquiring frame's, or 0 (none: the
 * event's root). docs/accounting.md "Lite frames", the call tree. */
static __attribute__((noinline, cold)) uint32_t pg_parent_top(const struct pg_thread *t,
                                                              const struct pg_frame *at,
                                                              unsigned top)
{
    if (top < 64) {
        const struct pg_group *g =
            atomic_load_explicit(&perfgroup__bit_group[top], memory_order_acquire);
        return g ? g->id + 1 : 0;
    }
    return top == PERFGROUP_TOP_RT ? pg_parent_below(t, at) : 0;
}

/* Group `gid` joins the event with `parent` (id + 1, 0: root) unless it has joined already
 * (lite events: pg_seg_end, perfgroup__lite_fold). A parent learnt from another activation
 * than the group's first may close a cycle with the parents already given (X under Y here, Y
 * under X there), which exact mode's cannot (a parent is on the stack, older): such a group
 * goes to the root. */
static __attribute__((noinline, cold)) void pg_stamp_as(struct pg_thread *t, struct pg_gstate *s,
                                                        uint32_t gid, uint32_t parent)
{
    if (s->stamp == t->event_stamp)
        return;
    uint32_t p = parent;
    for (int n = 0; p != 0 && n < 64; n++) {
        if (p == gid + 1) {
            parent = 0;
            break;
        }
        if (p - 1 >= t->cap || t->sw[p - 1].stamp != t->event_stamp)
            break;
        p = t->sw[p - 1].parent;
    }
    s->stamp = t->event_stamp;
    s->parent = parent;
    pg_exec_add(t, gid);
}

/* Group `gid` joins the event (its first stopwatch in it, frame `at`): listed, its parent. */
static inline __attribute__((always_inline)) void
pg_stamp(struct pg_thread *t, struct pg_gstate *s, uint32_t gid, const struct pg_frame *at)
{
    if (s->stamp != t->event_stamp) {
        s->stamp = t->event_stamp;
        s->parent = pg_parent_below(t, at);
        pg_exec_add(t, gid);
    }
}

/* The charge itself (pg_charge without the list: its caller stamps the group). */
static inline __attribute__((always_inline)) void
pg_charge_only(struct pg_gstate *s, uint64_t delta, uint64_t self, int ok, int finished)
{
    if (finished)
        s->running = 0;
    if (PG_LIKELY(ok)) {
        s->recent += delta;
        s->self += self;
        s->acts += (uint32_t)finished;
    } else {
        s->discarded++;
    }
}

static inline __attribute__((always_inline)) void
pg_charge(struct pg_thread *t, uint32_t gid, uint64_t delta, uint64_t self, int ok, int finished,
          const struct pg_frame *at)
{
    struct pg_gstate *s = &t->sw[gid];
    pg_charge_only(s, delta, self, ok, finished);
    pg_stamp(t, s, gid, at);
}

/* Charge every group frame f acquired, up to `tsc` (the off-CPU time inside it is settled
 * into the group by cputime.c), `inner` of it its nested acquiring frames' (its self time is
 * the rest), if it belongs to the current iteration; where counter intervals are not valid
 * across CPUs (perfgroup__cpu_mask), if it ends on the CPU it started on. Returns whether
 * the measure was kept. fresh == NULL: each group joins the event's list here if it is not
 * in it (pg_stamp); else none does, and *fresh is set if one is not: the caller stamps the
 * frame's groups (hooks.c, exit_stamp) before anything else reads the list (the exit hook's
 * fast path, which makes no call: a group's first stopwatch of an event is rare). */
static inline __attribute__((always_inline)) int
pg_charge_frame(struct pg_thread *t, const struct pg_frame *f, uint64_t tsc, uint32_t cpu,
                uint64_t inner, int finished, unsigned *fresh)
{
    const struct pg_func *fn = f->fn;
    uint64_t delta = tsc - f->tsc;
    int ok = ((cpu ^ f->cpu) & perfgroup__cpu_mask) == 0 && (int64_t)delta >= 0;
    for (unsigned m = f->mask; m; m &= m - 1) {
        uint32_t gid = fn->gid[__builtin_ctz(m)];
        if (fresh) {
            struct pg_gstate *s = &t->sw[gid];
            pg_charge_only(s, delta, delta - inner, ok, finished);
            *fresh |= s->stamp != t->event_stamp;
        } else {
            pg_charge(t, gid, delta, delta - inner, ok, finished, f);
        }
    }
    return ok;
}


/* Where the span of frame `idx` goes when it ends (self time): the `inner` of the frame
 * below if that one is of the current iteration, else the event's own (its root). */
static inline __attribute__((always_inline)) uint64_t *pg_inner_of(struct pg_thread *t, uint32_t idx)
{
    return idx != 0 && t->stack[idx - 1].iter == t->iter ? &t->stack[idx - 1].inner : &t->ev_inner;
}

/* A segment-accounted frame ends: its groups with a re-entry bit get the activation (their
 * time is the sampled segments', folded at commit), a group without one its span (no self
 * time: docs/accounting.md "Lite frames"). Nothing goes to the frame below. */
static __attribute__((noinline, cold)) void pg_seg_end(struct pg_thread *t, struct pg_frame *f,
                                                       uint64_t tsc, uint32_t cpu)
{
    const struct pg_func *fn = f->fn;
    uint64_t delta = tsc - f->tsc;
    int ok = ((cpu ^ f->cpu) & perfgroup__cpu_mask) == 0 && (int64_t)delta >= 0;
    /* its parent: the innermost frame it covered (a lite frame's group, or the runtime's
     * frame below), not the runtime's frame below alone (lite frames are not on the stack);
     * looked up for a group that has not joined the event yet only */
    uint32_t parent = UINT32_MAX;
    for (unsigned i = 0; i < fn->ngroups; i++)
        if (f->mask & (1u << i)) {
            if (t->sw[fn->gid[i]].stamp != t->event_stamp) {
                if (parent == UINT32_MAX)
                    parent = pg_parent_top(t, f, f->lite & ~PG_FRAME_SEG);
                pg_stamp_as(t, &t->sw[fn->gid[i]], fn->gid[i], parent);
            }
            if (__atomic_load_n(&fn->gbit[i], __ATOMIC_RELAXED) & f->bits)
                pg_charge(t, fn->gid[i], 0, 0, 1, 1, f);
            else
                pg_charge(t, fn->gid[i], delta, 0, ok, 1, f);
        }
}

/* Frame `idx` ends at `tsc`: charged if it is of the current iteration, and its span goes
 * to the frame holding it; a frame that acquired nothing (trace mode's re-entries) is not
 * the innermost of anything: its nested frames' spans go on down. fresh: as for
 * pg_charge_frame. */
static inline __attribute__((always_inline)) void
pg_frame_end(struct pg_thread *t, uint32_t idx, uint64_t tsc, uint32_t cpu, unsigned *fresh)
{
    struct pg_frame *f = &t->stack[idx];
    if (PG_UNLIKELY(f->lite) && f->iter == t->iter) {
        pg_seg_end(t, f, tsc, cpu);
        return;
    }
    if (PG_LIKELY(f->iter == t->iter)) {
        uint64_t up = f->inner;
        if (PG_LIKELY(f->mask != 0) &&
            PG_LIKELY(pg_charge_frame(t, f, tsc, cpu, f->inner, 1, fresh)))
            up = tsc - f->tsc;
        *pg_inner_of(t, idx) += up;
    }
}

/* ---- lifecycle.c: start-up, once (its constructor, or the first call that needs it) ------ */
PG_HIDDEN void perfgroup__init(void);

/* ---- gate.c: the gate, the latch's thread-locals, the process-wide counters ------------- */
PG_HIDDEN void perfgroup__gate_update(void);           /* the gate from the switches below */
PG_HIDDEN void perfgroup__gate_user(int on);           /* perfgroup_start / _stop */
PG_HIDDEN int perfgroup__disabled(void);               /* off for good (ABI mismatch) */
PG_HIDDEN void perfgroup__disable(const char *why);    /* off for good, said once on stderr */

/* ---- registry.c: groups, functions, modules, re-keying ---------------------------------- */
PG_HIDDEN void perfgroup__registry_init(void);         /* start-up: the top group */
PG_HIDDEN void perfgroup__reg_lock(void);              /* the registry of groups and sites */
PG_HIDDEN void perfgroup__reg_unlock(void);
PG_HIDDEN struct pg_func *perfgroup__site_resolve(struct perfgroup_site *site);
PG_HIDDEN void perfgroup__register_module(uint32_t abi_version, struct perfgroup_site *start,
                                          struct perfgroup_site *stop);
PG_HIDDEN int perfgroup__group_set_active(const char *name, int on); /* -ENOENT: no such */
PG_HIDDEN struct pg_group *perfgroup__group_at(uint32_t id);
PG_HIDDEN uint32_t perfgroup__group_count(void);
struct dl_phdr_info;
/* One of the object's PT_LOAD segments holds addr (inside dl_iterate_phdr). */
PG_HIDDEN int perfgroup__object_holds(const struct dl_phdr_info *info, const void *addr);

/* ---- events.c: events, commits, resync, nested loops ------------------------------------ */
PG_HIDDEN void perfgroup__thread_totals_zero(struct pg_thread *t);
/* Close the thread's open event, if any, outside the hooks (one CPU-clock read). */
PG_HIDDEN void perfgroup__event_close(struct pg_thread *t, uint64_t tsc);
/* Trace mode: interval records for the frames [from, to) up to `tsc`, innermost first. */
PG_HIDDEN void perfgroup__trace_frames(struct pg_thread *t, uint32_t from, uint32_t to,
                                       uint64_t tsc);
/* Drop frames above `keep` (skipped exits): their stopwatches are cancelled; traced up to
 * `tsc` (0: now). */
PG_HIDDEN void perfgroup__resync(struct pg_thread *t, uint32_t keep, uint64_t tsc);
PG_HIDDEN void perfgroup__implicit_begin(struct pg_thread *t, uint64_t tsc);
PG_HIDDEN void perfgroup__implicit_end(struct pg_thread *t, uint64_t tsc);
/* For the event API (event_api.c): an event of kind PG_EV_* opened at `tsc`; the implicit
 * event committed at `tsc` (own_read: its CPU clock read now for an exact end); the explicit
 * event ended now. */
PG_HIDDEN void perfgroup__event_open(struct pg_thread *t, uint64_t tsc, int kind, const char *name);
PG_HIDDEN void perfgroup__implicit_commit(struct pg_thread *t, uint64_t tsc, int own_read);
PG_HIDDEN void perfgroup__explicit_end(struct pg_thread *t);
/* The explicit event ended at a reading its caller took (perfgroup__cputime_read: the CPU
 * clock `cpu`, then the counter `tsc`), the one its stopwatches were charged up to. */
PG_HIDDEN void perfgroup__explicit_commit(struct pg_thread *t, uint64_t tsc, int64_t cpu);
/* Tasks (tasks.c): n groups charged ns[i] of CPU done on their behalf on this thread, one
 * task each, into the thread's totals (and the file's totals slots). */
PG_HIDDEN void perfgroup__task_charge(struct pg_thread *t, const uint32_t *gid, const uint64_t *ns,
                                      unsigned n);

/* ---- owner.c: one runtime per process -------------------------------------------------- */
/* A copy's entry points, as its mark offers them to the others (hidden aliases: never an
 * interposed symbol). */
struct pg_entries {
    uint64_t (*enter)(struct perfgroup_site *site);
    void (*exit)(struct perfgroup_site *site, uint64_t token);
    void (*reg)(uint32_t abi_version, struct perfgroup_site *start, struct perfgroup_site *stop);
};
/* A copy's mark (hooks.c defines this copy's, behind an ELF note): the layout every copy of
 * this ABI reads. */
#define PG_MARK_MAGIC 0x4b524d47u /* "GMRK" */
#define PG_NOTE_TYPE 0x31524750u  /* "PGR1" */
enum { PG_MARK_NONE = 0, PG_MARK_OWNER = 1, PG_MARK_DEFERRED = 2 };
struct pg_mark {
    uint32_t magic;
    uint32_t abi;                 /* PERFGROUP_ABI_VERSION of the copy */
    _Atomic uint32_t state;       /* PG_MARK_* */
    uint32_t pad;
    struct pg_entries e;
};
/* The copy that owns the process when this one defers to it (NULL: this copy owns it).
 * Set once at start-up, before this copy's first hook or registration goes on. */
extern PG_HIDDEN const struct pg_entries *perfgroup__owner;
/* Start-up: 1 if another copy owns the process (this one forwards to perfgroup__owner), 0
 * if this one owns it. */
PG_HIDDEN int perfgroup__owner_elect(void);
/* This copy's own entry points (hidden aliases of the hooks and the registration). */
PG_HIDDEN uint64_t perfgroup__enter_own(struct perfgroup_site *site) PERFGROUP_ABI_NOTHROW_;
PG_HIDDEN void perfgroup__exit_own(struct perfgroup_site *site,
                                   uint64_t token) PERFGROUP_ABI_NOTHROW_;
PG_HIDDEN void perfgroup__register_own(uint32_t abi_version, struct perfgroup_site *start,
                                       struct perfgroup_site *stop) PERFGROUP_ABI_NOTHROW_;

/* ---- lifecycle.c: thread entries, the dead pool, fork, process exit --------------------- */
PG_HIDDEN void perfgroup__lifecycle_init(void);
/* First hook or API call of a thread: take an entry (start-up first). Returns NULL to skip. */
PG_HIDDEN struct pg_thread *perfgroup__thread_slow(void);
/* The calling thread's entry outside the hooks (the API): taken now if it has none. */
static inline struct pg_thread *pg_self(void)
{
    struct pg_thread *t = perfgroup__tls;
    return t ? t : perfgroup__thread_slow();
}
/* The thread's group tables grown to hold group max_gid (0, or -ENOMEM). */
PG_HIDDEN int perfgroup__grow_groups(struct pg_thread *t, uint32_t max_gid);
/* Every thread entry, newest first, never unlinked (gate.c: below all that walks it). */
extern PG_HIDDEN _Atomic(struct pg_thread *) perfgroup__thread_list;
static inline struct pg_thread *perfgroup__threads(void)
{
    return atomic_load(&perfgroup__thread_list);
}
/* The dead pool's lock (snapshots hold it while they walk the thread list). */
PG_HIDDEN void perfgroup__dead_lock(void);
PG_HIDDEN void perfgroup__dead_unlock(void);
PG_HIDDEN const struct pg_totals *perfgroup__dead_totals(uint32_t gid);
PG_HIDDEN void perfgroup__dead_clear_locked(void);
extern PG_HIDDEN _Atomic uint32_t perfgroup__reset_epoch;

/* ---- cputime.c: measured CPU time (rseq's "descheduled" pointer) ------------------------ */
PG_HIDDEN void perfgroup__cputime_init(void);
/* ns one CPU-clock read costs (measured at start-up): commit()'s allowance for the reads */
extern PG_HIDDEN uint64_t perfgroup__cpu_read_ns;
/* A thread takes its entry: arm rseq, first reading. */
PG_HIDDEN void perfgroup__cputime_thread_start(struct pg_thread *t);
/* fork() child: re-arm, and a first reading of the child's CPU clock (from zero). */
PG_HIDDEN void perfgroup__cputime_anchor(struct pg_thread *t);
/* The thread ends: disarm. */
PG_HIDDEN void perfgroup__cputime_thread_end(struct pg_thread *t);
/* The hook found the thread descheduled since its last reading (pg_descheduled): read its
 * CPU clock, add the off-CPU ticks since that reading to t->off, re-arm. Returns the counter
 * after the reading (the caller's new "now"); `tsc` itself for a thread not measured. */
PG_HIDDEN uint64_t perfgroup__cputime_settle(struct pg_thread *t, uint64_t tsc);
/* Outside the hooks: read the CPU clock (settling as above if measured); *tsc gets the
 * counter after it. Returns the CPU clock in ns (0 if it could not be read). */
PG_HIDDEN int64_t perfgroup__cputime_read(struct pg_thread *t, uint64_t *tsc);
/* Ticks of [begin, end] the thread spent on its CPU, given t->off at begin (measured). */
static inline uint64_t perfgroup__cputime_on(uint64_t begin, uint64_t end, uint64_t off_begin,
                                             uint64_t off_end)
{
    int64_t wall = (int64_t)(end - begin);
    int64_t on = wall - (int64_t)(off_end - off_begin);
    return wall <= 0 || on <= 0 ? 0 : on > wall ? (uint64_t)wall : (uint64_t)on;
}

/* The counter now, with every deschedule before it settled (cold paths). */
static inline uint64_t pg_clock_settled(struct pg_thread *t)
{
    uint64_t tsc = pg_clock_now();
    return pg_descheduled() ? perfgroup__cputime_settle(t, tsc) : tsc;
}

/* ---- implicit.c: the CPU time of implicit events without rseq (the sampler) --------------- */
PG_HIDDEN void perfgroup__implicit_init(void);
/* A thread takes its pg_thread entry (registration). */
PG_HIDDEN void perfgroup__implicit_thread_start(struct pg_thread *t);
/* An implicit event begins at `tsc` (in an enter hook or at a nested loop's end). */
PG_HIDDEN void perfgroup__implicit_arm(struct pg_thread *t, uint64_t tsc);
/* CPU ns of the implicit event [begin, end]; own_cpu_ns >= 0: the thread's CPU clock read at
 * `end` by a caller outside the hooks. */
PG_HIDDEN uint64_t perfgroup__implicit_cpu(struct pg_thread *t, uint64_t begin, uint64_t end,
                                          int64_t own_cpu_ns);
/* Their measured case (rseq), what both do first on a measured thread: inline, so that a
 * measured thread's implicit event makes neither call (events.c). The event is open (for
 * the sampler), or closed with its CPU time: its wall less the off-CPU time settled in it. */
static inline void pg_implicit_armed(struct pg_thread *t)
{
    uint32_t count = atomic_load_explicit(&t->imp_count, memory_order_relaxed);
    atomic_store_explicit(&t->imp_count, count + 1, memory_order_relaxed);
    atomic_store_explicit(&t->imp_open, 1, memory_order_relaxed);
}
static inline uint64_t pg_implicit_cpu_measured(struct pg_thread *t, uint64_t begin, uint64_t end)
{
    atomic_store_explicit(&t->imp_open, 0, memory_order_relaxed);
    return perfgroup__ticks_to_ns(perfgroup__cputime_on(begin, end, t->imp_off, t->off));
}
/* The thread read its own CPU clock at `tsc` outside the hooks (events, nested loops,
 * thread exit): one more point for the estimates. */
PG_HIDDEN void perfgroup__implicit_own(struct pg_thread *t, uint64_t tsc, int64_t cpu_ns);
/* fork() child: no sampler yet, every ring stale; `me` is the surviving thread. Returns
 * whether the parent had a sampler running (the child then starts its own). */
PG_HIDDEN int perfgroup__implicit_atfork_child(struct pg_thread *me);

/* Start the sampler thread now if it is not running (outside any hook: start-up, a
 * recording opened, a fork child); it also keeps the file's open-event slots. */
PG_HIDDEN void perfgroup__sampler_ensure(void);

/* ---- progress.c: open events visible in the file before they end ----------------------- */
/* The thread opened (t->event_*) or closed its event: publish it for the sampler (commit()
 * calls close only when pub_open is set: no call per event when not recording). may_lock
 * 0 (a fork child's handler, the recorder's lock held): an explicit event's name is not
 * interned now. */
PG_HIDDEN void perfgroup__progress_open(struct pg_thread *t, int may_lock);
PG_HIDDEN void perfgroup__progress_close(struct pg_thread *t);
/* Sampler: rewrite the slot of every thread with an event open longer than period_ns, empty
 * the others'; 1 if any thread has an event open. */
PG_HIDDEN int perfgroup__progress_round(uint64_t period_ns);

/* ---- alerts.c ------------------------------------------------------------------------ */
PG_HIDDEN void perfgroup__alerts_check(struct pg_thread *t, const char *event, uint32_t gid,
                                       uint64_t cpu_ns, uint64_t wall_ns, uint64_t event_cpu_ns);
PG_HIDDEN void perfgroup__alerts_deliver(struct pg_thread *t);
/* Bit i set: an event of cpu_ns exceeds 2^i ms (bucket i of the jank histogram). */
PG_HIDDEN unsigned perfgroup__jank_mask(uint64_t cpu_ns);
/* The lowest alert threshold set (UINT64_MAX: none): a commit calls perfgroup__alerts_check
 * only for a group above it. */
extern PG_HIDDEN _Atomic uint64_t perfgroup__alerts_min;

/* ---- text.c: PERFGROUP_TEXT debug trace ------------------------------------------------ */
PG_HIDDEN int perfgroup__text_init(const char *path);
PG_HIDDEN void perfgroup__text_enter(struct pg_thread *t, const struct pg_func *fn);
PG_HIDDEN void perfgroup__text_exit(struct pg_thread *t, const struct pg_func *fn);

#endif /* PERFGROUP_RUNTIME_INTERNAL_H */
