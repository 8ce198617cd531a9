/* SPDX-License-Identifier: MIT */
/*
 * runtime/record.h — internal interface between the accounting core (core.c, hooks.c) and
 * the recorder (record.c: msgpack records into the file-backed chunk buffer).
 *
 * The core calls these; every one is cheap and safe when recording is off
 * (perfgroup__rec_mode == 0). Nothing here is public API. The trace-mode interval record
 * is written by an inline function below so that the exit hook's only cost is a bounds
 * compare and 29 bytes of stores; everything else (chunk switch, definitions, events) is
 * out of line in record.c.
 */
#ifndef PERFGROUP_RUNTIME_RECORD_H
#define PERFGROUP_RUNTIME_RECORD_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include "perfgroup/format.h"

/* 0 = off, PGF_MODE_STATS or PGF_MODE_TRACE (perfgroup/format.h). Set by perfgroup__rec_init
 * or perfgroup_record_open, drops to 0 at perfgroup__rec_close. Read on the hot path: the
 * recorder stores it with __atomic (relaxed); read it with
 * __atomic_load_n(&perfgroup__rec_mode, __ATOMIC_RELAXED) (a plain mov) so TSan is quiet. */
extern int perfgroup__rec_mode;

/*
 * A thread's writer. Only its thread touches it, except `end`, which the recorder lowers
 * to NULL from another thread (close, reopen) to send the next write to the slow path.
 */
struct perfgroup_rec_thread {
    uint8_t *pos;                    /* next byte to write in the current chunk */
    uint8_t *end;                    /* end of the current chunk (atomic, relaxed) */
    uint8_t *data;                   /* first record of the current chunk */
    struct pgf_chunk_header *chunk;  /* current chunk (in the file mapping) */
    /* cold fields follow in record.c's private part */
};

/* The slow path: make room for `need` bytes (switch chunks, attach to a new recording).
 * 0 = room at w->pos; -1 = the record is dropped (counted when recording is on). */
int perfgroup__rec_reserve(struct perfgroup_rec_thread *w, uint32_t need);

/* Process start (from the runtime's constructor, after perfgroup__clock_init: the recorder
 * stamps chunks and clock records with pg_clock_now() and perfgroup__clock_kind/_hz) and
 * end (atexit, exec). Reads
 * PERFGROUP_OUTPUT / PERFGROUP_MODE / PERFGROUP_BUFFER / PERFGROUP_CHUNK. Both idempotent. */
void perfgroup__rec_init(void);
void perfgroup__rec_close(void);

/* Definitions: written once, into chunks that are never recycled. Kept in memory too, so a
 * recording opened later, or a fork()ed child's file, gets them all. */
void perfgroup__rec_group(uint32_t group_id, const char *name, int kind, int active);
void perfgroup__rec_function(uint32_t function_id, const char *function, const char *file,
                             uint32_t line, const uint32_t *group_ids, unsigned ngroups);
uint32_t perfgroup__rec_string(const char *text); /* interned, ids from 1; 0 on no memory */

/* Threads. start returns a writer even when recording is off (it attaches when a recording
 * opens), never NULL (out of memory: a writer that drops everything). thread_end writes PGF_REC_THREAD_END, releases the
 * thread's chunks and frees w. */
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

/* A user marker (public perfgroup_marker*): end_tsc == start_tsc for an instant. */
void perfgroup__rec_marker(struct perfgroup_rec_thread *w, uint32_t name_string_id,
                           const char *text, uint64_t start_tsc, uint64_t end_tsc);

/* The runtime's own cost since the last call (cold). */
void perfgroup__rec_overhead(struct perfgroup_rec_thread *w, uint64_t commit_ns,
                             uint64_t commits, uint64_t slow_paths, uint64_t resyncs);

/* ---- The hot record ------------------------------------------------------------------- */

static inline void perfgroup__rec_store32be_(uint8_t *p, uint32_t v) {
    v = __builtin_bswap32(v);
    memcpy(p, &v, 4);
}
static inline void perfgroup__rec_store64be_(uint8_t *p, uint64_t v) {
    v = __builtin_bswap64(v);
    memcpy(p, &v, 8);
}

/*
 * One enter/exit pair in trace mode (HOT: called from the exit hook). Writes the fixed
 * PGF_INTERVAL_SIZE-byte msgpack array of format.h by hand: msgpack-c's packer produces the
 * same bytes but costs more here (numbers in docs/benchmarks.md, "Recording").
 */
static inline __attribute__((always_inline)) void
perfgroup__rec_interval(struct perfgroup_rec_thread *w, uint32_t function_id,
                        uint8_t group_mask, uint8_t depth, uint64_t start_tsc,
                        uint64_t duration) {
    uint8_t *p = w->pos;
    uintptr_t end = (uintptr_t)__atomic_load_n(&w->end, __ATOMIC_RELAXED);
    if (__builtin_expect((uintptr_t)p + PGF_INTERVAL_SIZE > end, 0)) {
        if (perfgroup__rec_reserve(w, PGF_INTERVAL_SIZE))
            return;
        p = w->pos;
    }
    p[0] = 0x96;
    p[1] = PGF_REC_INTERVAL;
    p[2] = 0xce;
    perfgroup__rec_store32be_(p + 3, function_id);
    p[7] = 0xcc;
    p[8] = group_mask;
    p[9] = 0xcc;
    p[10] = depth;
    p[11] = 0xcf;
    perfgroup__rec_store64be_(p + 12, start_tsc);
    p[20] = 0xcf;
    perfgroup__rec_store64be_(p + 21, duration);
    w->pos = p + PGF_INTERVAL_SIZE;
    struct pgf_chunk_header *c = w->chunk;
    c->record_count++;
    c->last_tsc = start_tsc + duration;
    /* publish: the record's bytes before the new committed length */
    __atomic_store_n(&c->committed, (uint32_t)(w->pos - w->data), __ATOMIC_RELEASE);
}

#endif /* PERFGROUP_RUNTIME_RECORD_H */
