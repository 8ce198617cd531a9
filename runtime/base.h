/* SPDX-License-Identifier: MIT */
/*
 * runtime/base.h — what every runtime file stands on: the compiler words (PG_LIKELY,
 * PG_HIDDEN, PG_COLD), the environment (env.c), the test seam's numbered points, memory
 * that never comes from malloc (memory.c: anonymous mappings, a bump arena), the one string
 * hash, and the one rule by which totals combine (PG_TOTALS_FOLD). Calls nothing above it.
 */
#ifndef PERFGROUP_RUNTIME_BASE_H
#define PERFGROUP_RUNTIME_BASE_H

#include <stddef.h>
#include <stdint.h>

#include "perfgroup.h"
#include "perfgroup/format.h"

#define PG_LIKELY(x)   __builtin_expect(!!(x), 1)
#define PG_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define PG_HIDDEN      __attribute__((visibility("hidden")))
#define PG_COLD        __attribute__((noinline, cold))

/* The runtime's only way to read its environment: secure_getenv (runtime/env.c). */
PG_HIDDEN const char *perfgroup__getenv(const char *name);

#ifdef PERFGROUP_TESTING
/* Called, if set, at numbered points inside event open, commit, resync and the hooks' and
 * event API's busy sections: a test raises a signal there. Production builds: nothing. */
extern void (*perfgroup__test_point)(int point);
#define PG_TEST_POINT(p)                                                                      \
    do {                                                                                      \
        if (perfgroup__test_point)                                                            \
            perfgroup__test_point(p);                                                         \
    } while (0)
#else
#define PG_TEST_POINT(p) ((void)0)
#endif

/* ---- memory.c: never malloc (it may be the host's, instrumented, or interrupted by the
 * signal whose handler runs a hook) ------------------------------------------------------ */
/* Anonymous zeroed pages; NULL on failure. */
PG_HIDDEN void *perfgroup__map(size_t size);
/* A bump arena of anonymous pages (zeroed, never given back), refilled `chunk` bytes at a
 * time. Not locked: its owner's lock guards it (the registry's, the recorder's). */
struct pg_arena {
    char *cur, *end;
    size_t chunk;
};
PG_HIDDEN void *perfgroup__arena_alloc(struct pg_arena *a, size_t size); /* NULL: no memory */
PG_HIDDEN char *perfgroup__arena_strdup(struct pg_arena *a, const char *s);

/* The one string hash (FNV-1a, 32 bits): registry and recorder alike. */
#define PG_HASH_SEED 2166136261u
static inline uint32_t pg_hash_str(const char *s, uint32_t h)
{
    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

/* The layout of struct pgf_totals (format.h): a recording's whole-run totals slot takes a
 * copy (perfgroup__rec_totals). max_wall_ns is the file's only: snapshots and the dead pool
 * do not fold it. */
struct pg_totals {
    uint64_t cpu_ns, wall_ns, blocked_ns, cycles, activations, events;
    uint64_t max_event_ns, min_event_ns;
    uint64_t jank[PERFGROUP_JANK_BUCKETS];
    uint64_t discarded;
    uint64_t max_wall_ns;
    uint64_t task_cpu_ns, tasks; /* on the group's behalf (tasks.c) */
    uint64_t self_ns;            /* of cpu_ns, its self time (docs/accounting.md) */
};
_Static_assert(sizeof(struct pg_totals) == sizeof(struct pgf_totals), "pg_totals is pgf_totals");
_Static_assert(offsetof(struct pg_totals, jank) == offsetof(struct pgf_totals, jank),
               "pg_totals is pgf_totals");
_Static_assert(offsetof(struct pg_totals, max_wall_ns) == offsetof(struct pgf_totals, max_wall_ns),
               "pg_totals is pgf_totals");

/* Fold totals `s` (a struct pg_totals) into `d`: a struct pg_totals (the dead-thread pool,
 * lifecycle.c) or a struct perfgroup_stats (snapshots, snapshot.c), which share these field
 * names. One definition of how totals combine. A group whose every measure was discarded
 * (no event) still brings its `discarded`. */
#define PG_TOTALS_FOLD(d, s)                                                                  \
    do {                                                                                      \
        (d)->task_cpu_ns += (s)->task_cpu_ns;                                                 \
        (d)->tasks += (s)->tasks;                                                             \
        if ((s)->events == 0) {                                                               \
            (d)->discarded += (s)->discarded;                                                 \
            break;                                                                            \
        }                                                                                     \
        if ((s)->max_event_ns > (d)->max_event_ns)                                            \
            (d)->max_event_ns = (s)->max_event_ns;                                            \
        if ((d)->events == 0 || (s)->min_event_ns < (d)->min_event_ns)                        \
            (d)->min_event_ns = (s)->min_event_ns;                                            \
        (d)->cpu_ns += (s)->cpu_ns;                                                           \
        (d)->self_ns += (s)->self_ns;                                                         \
        (d)->wall_ns += (s)->wall_ns;                                                         \
        (d)->blocked_ns += (s)->blocked_ns;                                                   \
        (d)->cycles += (s)->cycles;                                                           \
        (d)->activations += (s)->activations;                                                 \
        (d)->events += (s)->events;                                                           \
        (d)->discarded += (s)->discarded;                                                     \
        for (int j_ = 0; j_ < PERFGROUP_JANK_BUCKETS; j_++)                                   \
            (d)->jank[j_] += (s)->jank[j_];                                                   \
    } while (0)

#endif /* PERFGROUP_RUNTIME_BASE_H */
