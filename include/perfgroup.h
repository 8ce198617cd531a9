/* SPDX-License-Identifier: MIT */
/*
 * perfgroup.h — the only header a perfgroup user includes.
 *
 *   PERF_GROUP("name")   put a function in a performance group (a no-op without a plugin)
 *   perfgroup_event_*    bracket one iteration of an event loop
 *   perfgroup_snapshot_* read every group's totals, subtract two snapshots
 *   perfgroup_alert_*    get called when a group's time in one event exceeds a threshold
 *   perfgroup_start/...  control: on/off, reset, activate groups, name threads
 *   perfgroup_record_*   record to a file (like PERFGROUP_OUTPUT/MODE/BUFFER/CHUNK)
 *   perfgroup_marker*    user markers in the recording
 *   perfgroup_task_*     work handed to another thread, charged to the groups that asked
 *
 * Conventions (libuv's): functions returning int return 0 or a negative errno; the object
 * comes first; nothing here may be called from inside an enter/exit hook.
 */
#ifndef PERFGROUP_H
#define PERFGROUP_H

#include <stddef.h>
#include <stdint.h>

/* ---- The annotation ------------------------------------------------------------------ */
/*
 * GCC with the plugin: __has_attribute(perf_group) is true and the plugin's attribute is
 * used. Clang with the plugin: the plugin defines __PERFGROUP__ and understands
 * annotate("perfgroup:name") — the only spelling clang 14 keeps the argument of in every
 * syntax; clang 19 answers __has_attribute for a plugin's attribute, so there the first
 * branch is taken and the plugin's perf_group attribute used (the same group either way).
 * Without a plugin the macro expands to nothing, clean under -Wall -Wextra -Werror.
 */
#if defined(__has_attribute)
#  if __has_attribute(perf_group)
#    define PERF_GROUP(name) __attribute__((perf_group(name)))
#  endif
#endif
#if !defined(PERF_GROUP) && defined(__clang__) && defined(__PERFGROUP__)
#  define PERF_GROUP(name) __attribute__((annotate("perfgroup:" name)))
#endif
#ifndef PERF_GROUP
#  define PERF_GROUP(name)
#endif

/* Keep a function out of instrumentation whatever its group or file map says. */
#define PERF_GROUP_NONE __attribute__((no_instrument_function))

#if defined(PERFGROUP_BUILDING_RUNTIME) && defined(__GNUC__)
#  define PERFGROUP_API __attribute__((visibility("default")))
#else
#  define PERFGROUP_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Events ---------------------------------------------------------------------------- */
/*
 * Bracket one iteration of an event loop on the calling thread. At event end each group that
 * executed is charged the CPU time its thread spent while its stopwatch ran (measured:
 * docs/accounting.md; two CPU-clock reads per event) and its jank histogram updated. `name` must stay valid for the life of the process (a literal).
 * Without these calls the runtime makes implicit events: one per outermost group activation.
 * Returns 0, -EALREADY (an event is open; begin) or -ENOENT (none open; end).
 */
PERFGROUP_API int perfgroup_event_begin(const char *name);
PERFGROUP_API int perfgroup_event_end(void);

/*
 * A nested event loop starts/ends on this thread (e.g. a modal dialog spinning the loop):
 * every stopwatch running now becomes stale and is dropped at its exit, so the groups that
 * were running are not charged for what the nested loop runs.
 */
PERFGROUP_API void perfgroup_nested_loop_begin(void);
PERFGROUP_API void perfgroup_nested_loop_end(void);

/* ---- Totals and snapshots -------------------------------------------------------------- */
#define PERFGROUP_JANK_BUCKETS 10 /* > 1, 2, 4, 8, 16, 32, 64, 128, 256, 512 ms */

enum perfgroup_group_kind {
    PERFGROUP_KIND_TOP = 0,       /* the thread's top group: the whole of every event */
    PERFGROUP_KIND_ATTRIBUTE = 1, /* PERF_GROUP("x") */
    PERFGROUP_KIND_FILE = 2,      /* -fplugin-arg-perfgroup-default= / map= */
    PERFGROUP_KIND_FUNCTION = 3,  /* one per function; inactive by default */
};

struct perfgroup_stats {
    const char *name;              /* valid for the life of the process */
    enum perfgroup_group_kind kind;
    int active;
    uint64_t cpu_ns;               /* CPU time while its stopwatches ran (estimated without rseq) */
    uint64_t wall_ns;              /* stopwatch time (TSC) */
    uint64_t blocked_ns;           /* sum over events of max(0, wall - cpu) */
    uint64_t cycles;
    uint64_t activations;          /* stopwatches started and committed */
    uint64_t events;               /* events in which the group executed */
    uint64_t max_event_ns;         /* longest time in one event (CPU) */
    uint64_t min_event_ns;         /* shortest time in one event (CPU); 0 if no event */
    uint64_t jank[PERFGROUP_JANK_BUCKETS]; /* events whose group CPU time exceeded 2^i ms */
    uint64_t discarded;            /* measures discarded (TSC backwards, n > 1; a CPU change
                                    * only where the TSC is not valid across CPUs) */
    /* Tasks (perfgroup_task_*): CPU time other threads spent on this group's behalf, in tasks
     * captured while it ran; not in cpu_ns (its own), so own + on behalf = cpu_ns +
     * task_cpu_ns. A captured group that also ran inside the task has there only the part
     * of the task its own stopwatches did not hold (charged once). */
    uint64_t task_cpu_ns;
    uint64_t tasks;                /* tasks that charged it */
    /* Self time: of cpu_ns, the CPU time while the group was the innermost running one —
     * started by the innermost acquiring frame of its thread's event (a re-entry of a group
     * already running does not make it innermost; the top group: while no group was). Its
     * error bounds: docs/accounting.md, "Self time". Appended: older fields keep their
     * offsets. */
    uint64_t self_ns;
};

struct perfgroup_snapshot; /* opaque */

/* Totals of every group aggregated over all threads (living and exited), taken without
 * stopping the instrumented threads. Returns NULL on allocation failure. */
PERFGROUP_API struct perfgroup_snapshot *perfgroup_snapshot_take(void);
PERFGROUP_API void perfgroup_snapshot_free(struct perfgroup_snapshot *s);
/* later - earlier, group by group (groups are matched by name). NULL on allocation failure. */
PERFGROUP_API struct perfgroup_snapshot *perfgroup_snapshot_diff(const struct perfgroup_snapshot *later,
                                                                 const struct perfgroup_snapshot *earlier);
PERFGROUP_API size_t perfgroup_snapshot_count(const struct perfgroup_snapshot *s);
/* The i-th group, in name order; NULL past the end. */
PERFGROUP_API const struct perfgroup_stats *perfgroup_snapshot_at(const struct perfgroup_snapshot *s, size_t i);
/* The group called `name`, or NULL. */
PERFGROUP_API const struct perfgroup_stats *perfgroup_snapshot_find(const struct perfgroup_snapshot *s,
                                                                    const char *name);
/* Hook and API calls the runtime refused since the start (or the last reset; a fork child
 * starts from zero) because it was busy on the calling thread — a signal handler running
 * instrumented code while the thread was inside the runtime — or because the thread was
 * being registered or had exited (docs/accounting.md, "Signal handlers"), or the first call
 * of a site no module constructor registered that found the registry held by another thread
 * beyond a bounded wait. Their time went to whatever the thread was running. In a diff:
 * refused in between. */
PERFGROUP_API uint64_t perfgroup_snapshot_refused(const struct perfgroup_snapshot *s);
/* Events whose CPU time came out above their wall time (an explicit event's CPU is the
 * difference of two CPU-clock readings, its wall time the counter's: when the clocks
 * disagree) and were given their wall time as CPU time, since the start (or the last reset;
 * a fork child starts from zero). In a diff: clamped in between. */
PERFGROUP_API uint64_t perfgroup_snapshot_clamped(const struct perfgroup_snapshot *s);
/* Events that went on estimating their stopwatches' starts (the adaptive accounting's hot
 * mode, docs/accounting.md), since the start; 0 with PERFGROUP_ACCOUNTING=exact. In a diff:
 * those in between. */
PERFGROUP_API uint64_t perfgroup_snapshot_estimated(const struct perfgroup_snapshot *s);
/* The adaptive accounting's coarse clock (docs/accounting.md, "Hot threads: estimated
 * starts"): the longest interval, in ns, between two of its ticks since the start — the 2 ms
 * period plus how late its thread ran. An estimating event charges the code run between two
 * hooks to the group the second one starts only for a stretch shorter than this (a longer one
 * is read exactly). 0 if it never ticked twice (exact accounting: no ticker). */
PERFGROUP_API uint64_t perfgroup_tick_max_ns(void);

/* ---- Alerts ---------------------------------------------------------------------------- */
struct perfgroup_alert_info {
    const char *group;       /* the offending group */
    const char *event;       /* the event's name ("(implicit)" for implicit events) */
    uint64_t group_cpu_ns;   /* its CPU time in this event */
    uint64_t group_wall_ns;  /* its stopwatch time in this event */
    uint64_t event_cpu_ns;   /* the whole event's CPU time */
    uint64_t threshold_ns;
    uint32_t tid;
};
typedef void (*perfgroup_alert_cb)(const struct perfgroup_alert_info *info, void *arg);

/* Call cb, on the committing thread at event end (never inside a hook), each time a group's
 * CPU time in one event exceeds threshold_ns. Returns an id > 0, or -EINVAL / -ENOSPC. */
PERFGROUP_API int perfgroup_alert_add(uint64_t threshold_ns, perfgroup_alert_cb cb, void *arg);
PERFGROUP_API int perfgroup_alert_remove(int id);

/* ---- Control ----------------------------------------------------------------------------- */
PERFGROUP_API int perfgroup_start(void);   /* turn accounting on (the default) */
PERFGROUP_API int perfgroup_stop(void);    /* off: hooks cost one predictable branch */
PERFGROUP_API int perfgroup_is_active(void);
PERFGROUP_API int perfgroup_reset(void);   /* zero every total */
/* Per-function groups are named after their function and inactive by default. Returns 0,
 * or -ENOENT if no group of that name exists yet. */
PERFGROUP_API int perfgroup_group_activate(const char *name);
PERFGROUP_API int perfgroup_group_deactivate(const char *name);
/* Name the calling thread in snapshots and recordings (copied; truncated to 63 bytes). */
PERFGROUP_API int perfgroup_thread_name(const char *name);

/* ---- Recording ------------------------------------------------------------------------ */
/*
 * The environment does the same without code (ignored in setuid/setgid and other AT_SECURE
 * processes: runtime/env.c):
 *   PERFGROUP_OUTPUT=path (%p = pid)  PERFGROUP_MODE=stats|trace
 *   PERFGROUP_BUFFER=256M (file size limit)  PERFGROUP_CHUNK=64K (power of 2, 4K..16M)
 * The file (format: perfgroup/format.h) is created 0600, sparse, and grows a chunk at a time
 * up to the buffer size; when full, the oldest data chunks are recycled and what they held
 * is counted. A fork()ed child records into its own file (its pid in the name), made at its
 * first record; exec() and exit close the file cleanly.
 */
enum perfgroup_record_mode {
    PERFGROUP_RECORD_STATS = 1, /* one record per event */
    PERFGROUP_RECORD_TRACE = 2, /* plus one record per group enter/exit pair */
};

/* Start recording to `path` ("%p" becomes the pid). buffer_bytes / chunk_bytes: 0 for the
 * defaults (256 MiB / 64 KiB); the buffer must hold the header and 2 chunks. Returns 0,
 * -EINVAL (bad mode or sizes), -EALREADY (a recording is open), or the -errno of creating
 * the file (-EACCES, -ENOENT, -ENOSPC ...). */
PERFGROUP_API int perfgroup_record_open(const char *path, int mode, uint64_t buffer_bytes,
                                        uint32_t chunk_bytes);
/* Close the recording (state CLOSED, end time). Returns 0 or -ENOENT (none open). */
PERFGROUP_API int perfgroup_record_close(void);

/* An instant marker on the calling thread's track. `name` is interned (keep it short and
 * from a small set), `text` is copied (clipped to 1024 bytes; may be NULL).
 * Returns 0, -EINVAL (name NULL), -ENOENT (not recording), -ENOMEM. */
PERFGROUP_API int perfgroup_marker(const char *name, const char *text);
/* An interval marker: t = perfgroup_marker_begin(); ...; perfgroup_marker_end(name, text, t).
 * Returns as perfgroup_marker, or -EINVAL if `begin` is not a value from marker_begin. */
PERFGROUP_API uint64_t perfgroup_marker_begin(void);
PERFGROUP_API int perfgroup_marker_end(const char *name, const char *text, uint64_t begin);

/* ---- Tasks: work handed to another thread ------------------------------------------------ */
/*
 * An add-on that queues work to a pool (a thread pool, a job system, an I/O thread) is
 * charged the CPU the worker spends on it (docs/accounting.md, "Tasks"):
 *
 *   perfgroup_task k = perfgroup_task_capture();    on the thread that queues the work
 *   ... hand k over with the work item (a plain value: copy it) ...
 *   perfgroup_task_begin(k, "resize");              on the worker, around running it
 *   run(item);
 *   perfgroup_task_end();
 *
 * capture: the groups running on the calling thread now (those with a re-entry bit: the
 * first 63 groups made active), a few ns, no lock, no allocation, no system call; safe on
 * any thread and in a signal handler. A value captured outside any group charges nobody.
 * begin/end: between them the worker's CPU time (two CPU-clock reads) is charged to the
 * captured groups as well as to the groups the worker enters itself; a captured group that
 * also runs there is charged once. With no event open on the worker the task is an explicit
 * event of its own named `name` (a literal: kept), else a part of the open event. One task at
 * a time per thread: a begin while a task is open, or while the runtime is busy on the thread
 * (a signal handler that interrupted it), is refused (perfgroup_snapshot_refused) and its end
 * does nothing. Without the runtime linked, all three compile and do nothing.
 */
typedef struct perfgroup_task { uint64_t opaque[2]; } perfgroup_task;

#if defined(PERFGROUP_BUILDING_RUNTIME) || !defined(__GNUC__)
#  define PERFGROUP_TASK_WEAK_
#else
#  define PERFGROUP_TASK_WEAK_ __attribute__((weak))
#endif
/* The runtime's entry points (weak here: absent without the runtime); call the three below. */
PERFGROUP_API void perfgroup__task_capture(perfgroup_task *out) PERFGROUP_TASK_WEAK_;
PERFGROUP_API void perfgroup__task_begin(const perfgroup_task *task, const char *name) PERFGROUP_TASK_WEAK_;
PERFGROUP_API void perfgroup__task_end(void) PERFGROUP_TASK_WEAK_;

#ifndef PERFGROUP_BUILDING_RUNTIME
static inline perfgroup_task perfgroup_task_capture(void)
{
    perfgroup_task k = {{0, 0}};
    if (perfgroup__task_capture)
        perfgroup__task_capture(&k);
    return k;
}
static inline void perfgroup_task_begin(perfgroup_task task, const char *name)
{
    if (perfgroup__task_begin)
        perfgroup__task_begin(&task, name);
}
static inline void perfgroup_task_end(void)
{
    if (perfgroup__task_end)
        perfgroup__task_end();
}
#endif

#ifdef __cplusplus
}
#endif

#endif /* PERFGROUP_H */
