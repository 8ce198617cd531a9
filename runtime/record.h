/* SPDX-License-Identifier: MIT */
/*
 * runtime/record.h — internal interface between the accounting core (core.c, hooks.c) and
 * the recorder (record.c: msgpack records into the file-backed chunk buffer).
 *
 * The core calls these; every one is cheap and safe when recording is off
 * (perfgroup__rec_mode == 0). Nothing here is public API.
 */
#ifndef PERFGROUP_RUNTIME_RECORD_H
#define PERFGROUP_RUNTIME_RECORD_H

#include <stdint.h>
#include <stddef.h>

/* 0 = off, PGF_MODE_STATS or PGF_MODE_TRACE (perfgroup/format.h). Set once by
 * perfgroup__rec_init, may drop to 0 at perfgroup__rec_close. Read on the hot path. */
extern int perfgroup__rec_mode;

struct perfgroup_rec_thread; /* a thread's writer; defined by record.c */

/* Process start (from the runtime's constructor) and end (atexit, exec). Reads
 * PERFGROUP_OUTPUT / PERFGROUP_MODE / PERFGROUP_BUFFER / PERFGROUP_CHUNK. */
void perfgroup__rec_init(void);
void perfgroup__rec_close(void);

/* Definitions: written once, into chunks that are never recycled. */
void perfgroup__rec_group(uint32_t group_id, const char *name, int kind, int active);
void perfgroup__rec_function(uint32_t function_id, const char *function, const char *file,
                             uint32_t line, const uint32_t *group_ids, unsigned ngroups);
uint32_t perfgroup__rec_string(const char *text); /* interned; 0 when off */

/* Threads: start returns NULL when off. */
struct perfgroup_rec_thread *perfgroup__rec_thread_start(uint32_t thread_index, uint32_t tid,
                                                         const char *name);
void perfgroup__rec_thread_name(struct perfgroup_rec_thread *w, const char *name);
void perfgroup__rec_thread_end(struct perfgroup_rec_thread *w, uint64_t tsc);

/* One committed event (cold: end of event). */
struct perfgroup_rec_group_share {
    uint32_t group_id;
    uint64_t cycles;
    uint64_t cpu_ns;
    uint64_t activations;
};
void perfgroup__rec_event(struct perfgroup_rec_thread *w, uint32_t name_string_id,
                          uint64_t begin_tsc, uint64_t end_tsc, uint64_t cpu_ns, unsigned flags,
                          const struct perfgroup_rec_group_share *groups, unsigned ngroups);

/* One enter/exit pair in trace mode (HOT: called from the exit hook). */
void perfgroup__rec_interval(struct perfgroup_rec_thread *w, uint32_t function_id,
                             uint8_t group_mask, uint8_t depth, uint64_t start_tsc,
                             uint64_t duration);

/* The runtime's own cost since the last call (cold). */
void perfgroup__rec_overhead(struct perfgroup_rec_thread *w, uint64_t commit_ns,
                             uint64_t commits, uint64_t slow_paths, uint64_t resyncs);

#endif /* PERFGROUP_RUNTIME_RECORD_H */
