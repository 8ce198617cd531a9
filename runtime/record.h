/* SPDX-License-Identifier: MIT */
/*
 * runtime/record.h — internal interface between the accounting core (events.c, lifecycle.c, hooks.c) and
 * the recorder (rec_*.c, rec_state.h lists them: msgpack records into the file-backed chunk
 * buffer).
 *
 * The core calls these; every one is cheap and safe when recording is off
 * (perfgroup__rec_mode == 0). Nothing here is public API. The trace-mode interval record
 * is written by an inline function below (msgpack-c's inline packer) so that the exit
 * hook's only cost is a bounds compare and 29 bytes of stores; everything else (chunk
 * switch, definitions, events) is out of line in rec_*.c.
 */
#ifndef PERFGROUP_RUNTIME_RECORD_H
#define PERFGROUP_RUNTIME_RECORD_H

#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include <msgpack.h>

#include "perfgroup/format.h"

/* 0 = off, PGF_MODE_STATS or PGF_MODE_TRACE (perfgroup/format.h). Set by perfgroup__rec_init
 * or perfgroup_record_open, drops to 0 at perfgroup__rec_close, at any time and from any
 * thread (perfgroup_record_open/close). Read it with perfgroup__rec_mode_now(): a relaxed
 * atomic load, the same mov as a plain read, and no data race. */
extern int perfgroup__rec_mode;
static inline int perfgroup__rec_mode_now(void) {
    return __atomic_load_n(&perfgroup__rec_mode, __ATOMIC_RELAXED);
}

/*
 * A thread's writer. Only its thread touches it, except `end`, which the recorder lowers
 * to NULL from another thread (close, reopen) to send the next write to the slow path.
 */
struct perfgroup_rec_thread {
    uint8_t *pos;                    /* next byte to write in the current chunk */
    uint8_t *end;                    /* end of the current chunk (atomic, relaxed) */
    uint8_t *data;                   /* first record of the current chunk */
    struct pgf_chunk_header *chunk;  /* current chunk (in the file mapping) */
    /* cold fields follow in rec_state.h's struct writer */
};

/* The slow path: make room for `need` bytes (switch chunks, attach to a new recording).
 * 0 = room was made at w->pos, but re-check it (a signal handler may have used it);
 * -1 = the record is dropped (counted when recording is on). */
int perfgroup__rec_reserve(struct perfgroup_rec_thread *w, uint32_t need);

/* Process start (from the runtime's constructor, after perfgroup__clock_init: the recorder
 * stamps chunks and clock records with pg_clock_now() and perfgroup__clock_kind/_hz) and
 * end (atexit, exec). Reads
 * PERFGROUP_OUTPUT / PERFGROUP_MODE / PERFGROUP_BUFFER / PERFGROUP_CHUNK. Both idempotent. */
void perfgroup__rec_init(void);
void perfgroup__rec_close(void);

/* The runtime the recorder runs in, told once at its start-up (perfgroup__rec_host, before
 * perfgroup__rec_init): the recorder calls nothing of the runtime by name, it is the leaf.
 * With a host, the host's fork handlers call perfgroup__rec_atfork_* (registry lock first)
 * and the host's destructor closes the file (after the exiting thread's event reached it);
 * without one (the recorder's own tests) the recorder registers its own fork handlers and
 * closes the file from its own destructor. */
struct perfgroup_rec_host {
    /* the process's refused calls and clamped events, stored into the file's header */
    const _Atomic uint64_t *refused, *clamped;
    /* after perfgroup_record_open (opened = 1) or perfgroup_record_close (0) succeeded,
     * outside the recorder's lock: the host re-keys (trace mode has no keys) and starts its
     * sampler (the open events' slots) */
    void (*recording_changed)(int opened);
};
void perfgroup__rec_host(const struct perfgroup_rec_host *host);
/* fork(), from the host's pthread_atfork handlers (after the host's own locks are taken;
 * child: after the host has fixed the thread's tid) */
void perfgroup__rec_atfork_prepare(void);
void perfgroup__rec_atfork_parent(void);
void perfgroup__rec_atfork_child(void);

/* Around exec (rec_exec.c wraps the exec family): begin marks the file CLOSED with its
 * end_tsc; failed (the exec returned) marks it RECORDING again. */
void perfgroup__rec_exec_begin(void);
void perfgroup__rec_exec_failed(void);

/* Definitions: written once, into chunks that are never recycled. Kept in memory too, so a
 * recording opened later, or a fork()ed child's file, gets them all. */
void perfgroup__rec_group(uint32_t group_id, const char *name, int kind, int active);
/* module: the object the function's code is in, "" for the program (format version 3) */
void perfgroup__rec_function(uint32_t function_id, const char *function, const char *file,
                             uint32_t line, const char *module, const uint32_t *group_ids,
                             unsigned ngroups);
uint32_t perfgroup__rec_string(const char *text); /* interned, ids from 1; 0 on no memory */

/* Threads. start returns a writer even when recording is off (it attaches when a recording
 * opens), never NULL (out of memory: a writer that drops everything). thread_end writes PGF_REC_THREAD_END, releases the
 * thread's chunks and frees w. */
struct perfgroup_rec_thread *perfgroup__rec_thread_start(uint32_t thread_index, uint32_t tid,
                                                         const char *name);
void perfgroup__rec_thread_name(struct perfgroup_rec_thread *w, const char *name);
void perfgroup__rec_thread_end(struct perfgroup_rec_thread *w, uint64_t tsc);

/* One committed event (cold: end of event). Its groups are written heaviest first (most
 * CPU, then most counter ticks, then the lower id): groups is sorted in place. */
struct perfgroup_rec_group_share {
    uint32_t group_id;
    uint64_t cycles;
    uint64_t cpu_ns;
    uint64_t activations;
    uint64_t self_ns;   /* of cpu_ns, its self time (docs/accounting.md "Self time") */
    uint32_t parent;    /* the innermost running group (id + 1) at its first stopwatch (lite
                         * frames': learnt, docs/accounting.md "Lite frames"); 0: none */
};
void perfgroup__rec_event(struct perfgroup_rec_thread *w, uint32_t name_string_id,
                          uint64_t begin_tsc, uint64_t end_tsc, uint64_t cpu_ns, unsigned flags,
                          struct perfgroup_rec_group_share *groups, unsigned ngroups);

/*
 * msgpack written by stores: msgpack-c's smallest encodings, byte for byte (tests/recording
 * `encoding` compares them), for the records a commit writes in stats mode. Through
 * msgpack-c's callback GCC kept a call to the packer's target and one to memcpy per field
 * (an EVENT record of one group ~110 ns over its floor: docs/benchmarks.md).
 */
#define PG_REC_PUT_INLINE static inline __attribute__((always_inline))
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define PG_REC_BE(bits, v) __builtin_bswap##bits(v)
#else
#define PG_REC_BE(bits, v) (v)
#endif
/* tag, then v big-endian in bits/8 bytes: one store each (a byte loop over a width GCC
 * merged into a variable one was a loop of shifts) */
#define PG_REC_PUT_BE(bits)                                                                   \
    PG_REC_PUT_INLINE uint8_t *perfgroup__rec_put_be##bits(uint8_t *p, uint8_t tag,          \
                                                           uint##bits##_t v) {               \
        uint##bits##_t be = PG_REC_BE(bits, v);                                               \
        p[0] = tag;                                                                           \
        memcpy(p + 1, &be, sizeof be);                                                        \
        return p + 1 + sizeof be;                                                             \
    }
PG_REC_PUT_BE(16)
PG_REC_PUT_BE(32)
PG_REC_PUT_BE(64)
PG_REC_PUT_INLINE uint8_t *perfgroup__rec_put_uint(uint8_t *p, uint64_t v) {
    if (v < 0x80) {
        *p = (uint8_t)v; /* positive fixint */
        return p + 1;
    }
    if (v <= 0xff) {
        p[0] = 0xcc;
        p[1] = (uint8_t)v;
        return p + 2;
    }
    if (v <= 0xffff)
        return perfgroup__rec_put_be16(p, 0xcd, (uint16_t)v);
    if (v <= 0xffffffffu)
        return perfgroup__rec_put_be32(p, 0xce, (uint32_t)v);
    return perfgroup__rec_put_be64(p, 0xcf, v);
}
PG_REC_PUT_INLINE uint8_t *perfgroup__rec_put_array(uint8_t *p, uint32_t n) {
    if (n < 16) {
        *p = (uint8_t)(0x90 | n); /* fixarray */
        return p + 1;
    }
    return n <= 0xffff ? perfgroup__rec_put_be16(p, 0xdc, (uint16_t)n)
                       : perfgroup__rec_put_be32(p, 0xdd, n);
}

/* An EVENT record (format.h) at p, its groups as given (perfgroup__rec_event sorts them
 * and counts in `more` those it leaves out); returns its end. At most
 * PG_REC_EVENT_FIXED + ngroups * PG_REC_EVENT_PER bytes. */
#define PG_REC_EVENT_FIXED (1 + 1 + 5 + 9 + 9 + 9 + 5 + 5 + 5)
#define PG_REC_EVENT_PER (1 + 5 + 9 + 9 + 9 + 9 + 5)
PG_REC_PUT_INLINE uint8_t *perfgroup__rec_event_put(uint8_t *p, uint32_t name_string_id,
                                                     uint64_t begin_tsc, uint64_t end_tsc,
                                                     uint64_t cpu_ns, unsigned flags,
                                                     const struct perfgroup_rec_group_share *groups,
                                                     unsigned ngroups, unsigned more) {
    p = perfgroup__rec_put_array(p, more ? 8 : 7);
    p = perfgroup__rec_put_uint(p, PGF_REC_EVENT);
    p = perfgroup__rec_put_uint(p, name_string_id);
    p = perfgroup__rec_put_uint(p, begin_tsc);
    p = perfgroup__rec_put_uint(p, end_tsc);
    p = perfgroup__rec_put_uint(p, cpu_ns);
    p = perfgroup__rec_put_uint(p, flags);
    p = perfgroup__rec_put_array(p, ngroups);
    for (unsigned i = 0; i < ngroups; i++) {
        p = perfgroup__rec_put_array(p, 6); /* self_ns, parent: readers before them skip them */
        p = perfgroup__rec_put_uint(p, groups[i].group_id);
        p = perfgroup__rec_put_uint(p, groups[i].cycles);
        p = perfgroup__rec_put_uint(p, groups[i].cpu_ns);
        p = perfgroup__rec_put_uint(p, groups[i].activations);
        p = perfgroup__rec_put_uint(p, groups[i].self_ns);
        p = perfgroup__rec_put_uint(p, groups[i].parent);
    }
    if (more)
        p = perfgroup__rec_put_uint(p, more);
    return p;
}

/* A user marker (public perfgroup_marker*): end_tsc == start_tsc for an instant. */
void perfgroup__rec_marker(struct perfgroup_rec_thread *w, uint32_t name_string_id,
                           const char *text, uint64_t start_tsc, uint64_t end_tsc);

/* The open events' slots (format.h, PGF_CHUNK_OPEN), written by the sampler thread only
 * (implicit.c): begin takes the recorder's lock (0) or says there are none (-1, not
 * locked); with `make`, a fork child's pending file is made first. put rewrites the slot of
 * thread `thread_index` (v->thread 0 empties it) as a seqlock; end unlocks. */
int perfgroup__rec_slots_begin(int make);
void perfgroup__rec_slot_put(uint32_t thread_index, const struct pgf_open_slot *v);
void perfgroup__rec_slots_end(void);
/* The thread index a writer records under (PGF_REC_THREAD), 0 for none. */
uint32_t perfgroup__rec_thread_index(const struct perfgroup_rec_thread *w);

/* Whole-run totals (format.h, struct pgf_totals_slot): the thread's cumulative totals of
 * group group_id, as its snapshot has them, into its slot of the file (taken at the first
 * call for the group in a file; cold: after each commit, for the groups of the event). */
void perfgroup__rec_totals(struct perfgroup_rec_thread *w, uint32_t group_id,
                           const struct pgf_totals *t);

/* The runtime's own cost since the last call (cold). */
void perfgroup__rec_overhead(struct perfgroup_rec_thread *w, uint64_t commit_ns,
                             uint64_t commits, uint64_t slow_paths, uint64_t resyncs,
                             uint64_t dropped);

/* ---- The hot record ------------------------------------------------------------------- */

/* msgpack-c packer target: the record's next byte. The packer's callback is this static
 * inline function, so at -O1 and above the compiler inlines it into every msgpack_pack_*
 * call and the packer struct vanishes: the record is a few stores. */
static inline int perfgroup__rec_put_(void *data, const char *buf, size_t len) {
    uint8_t **p = (uint8_t **)data;
    memcpy(*p, buf, len);
    *p += len;
    return 0;
}

/* One enter/exit pair in trace mode (HOT: the exit hook). Room for the record is one
 * compare: the record is always the PGF_INTERVAL_SIZE bytes of format.h. */
static inline __attribute__((always_inline)) int
perfgroup__rec_interval_room(struct perfgroup_rec_thread *w) {
    return (uintptr_t)w->pos + PGF_INTERVAL_SIZE <=
           (uintptr_t)__atomic_load_n(&w->end, __ATOMIC_RELAXED);
}

/*
 * The record, where perfgroup__rec_interval_room(w) said there is room: msgpack-c's packer
 * with fixed-width forms, always the PGF_INTERVAL_SIZE bytes of format.h (GCC inlines
 * through the packer into a few immediate and bswapped stores). The exit hook writes the
 * same bytes with perfgroup__rec_interval_put_head below, one word of which comes ready-made
 * from the function's entry; tests/recording `encoding` checks that the two agree.
 * (Four 8-byte stores assembled in registers were slower in the hook: docs/benchmarks.md.)
 */
static inline __attribute__((always_inline)) void
perfgroup__rec_interval_put(struct perfgroup_rec_thread *w, uint32_t function_id,
                            uint8_t group_mask, uint8_t depth, uint64_t start_tsc,
                            uint64_t duration) {
    uint8_t *p = w->pos;
    msgpack_packer pk = { &p, perfgroup__rec_put_ };
    msgpack_pack_array(&pk, 6);
    msgpack_pack_uint8(&pk, PGF_REC_INTERVAL);       /* positive fixint */
    msgpack_pack_fix_uint32(&pk, function_id);
    msgpack_pack_fix_uint8(&pk, group_mask);
    msgpack_pack_fix_uint8(&pk, depth);
    msgpack_pack_fix_uint64(&pk, start_tsc);
    msgpack_pack_fix_uint64(&pk, duration);
    w->pos = p;
    struct pgf_chunk_header *c = w->chunk;
    c->record_count++;
    /* no last_tsc: an interval's end is in its bytes, and the store cost the exit hook
     * 0.8 ns (docs/benchmarks.md); the writer settles last_tsc when it seals the chunk */
    /* publish: the record's bytes before the new committed length */
    __atomic_store_n(&c->committed, (uint32_t)(p - w->data), __ATOMIC_RELEASE);
}

/* The record's first 8 bytes depend on the function only: [0x96 fixarray 6][kind]
 * [0xce u32 function id, big-endian][0xcc, the type byte of the mask]. The core keeps them
 * in its function entry, so the exit hook stores them with one load and one store. */
static inline uint64_t perfgroup__rec_interval_head(uint32_t function_id) {
    uint8_t b[8] = {0x96, PGF_REC_INTERVAL, 0xce, (uint8_t)(function_id >> 24),
                    (uint8_t)(function_id >> 16), (uint8_t)(function_id >> 8),
                    (uint8_t)function_id, 0xcc};
    uint64_t v;
    memcpy(&v, b, 8);
    return v;
}

/* The hot record (the exit hook, no call): the same PGF_INTERVAL_SIZE bytes as the packer
 * above, its head from perfgroup__rec_interval_head. Between two rdtsc every instruction
 * counts: this is ~5 fewer than the packer's (docs/benchmarks.md, peers). */
static inline __attribute__((always_inline)) void
perfgroup__rec_interval_put_head(struct perfgroup_rec_thread *w, uint64_t head,
                                 uint8_t group_mask, uint8_t depth, uint64_t start_tsc,
                                 uint64_t duration) {
    uint8_t *p = w->pos;
    uint64_t s = __builtin_bswap64(start_tsc), d = __builtin_bswap64(duration);
    memcpy(p, &head, 8);
    p[8] = group_mask;
    p[9] = 0xcc;
    p[10] = depth;
    p[11] = 0xcf;
    memcpy(p + 12, &s, 8);
    p[20] = 0xcf;
    memcpy(p + 21, &d, 8);
    p += PGF_INTERVAL_SIZE;
    w->pos = p;
    struct pgf_chunk_header *c = w->chunk;
    c->record_count++; /* no last_tsc, as above */
    /* publish: the record's bytes before the new committed length */
    __atomic_store_n(&c->committed, (uint32_t)(p - w->data), __ATOMIC_RELEASE);
}

/* The same anywhere else: makes room first (chunk switch) or drops the record. */
static inline __attribute__((always_inline)) void
perfgroup__rec_interval(struct perfgroup_rec_thread *w, uint32_t function_id,
                        uint8_t group_mask, uint8_t depth, uint64_t start_tsc,
                        uint64_t duration) {
    while (__builtin_expect(!perfgroup__rec_interval_room(w), 0)) {
        /* again after the slow path: a signal handler may have used the room it made */
        if (perfgroup__rec_reserve(w, PGF_INTERVAL_SIZE))
            return;
    }
    perfgroup__rec_interval_put(w, function_id, group_mask, depth, start_tsc, duration);
}

#endif /* PERFGROUP_RUNTIME_RECORD_H */
