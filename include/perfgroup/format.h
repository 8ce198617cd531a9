/* SPDX-License-Identifier: MIT */
/*
 * perfgroup/format.h — the contract between the runtime (writer) and perfgroup-convert
 * (reader): the layout of a recording file (.pgm).
 *
 * History of PERFGROUP_FORMAT_VERSION (readers refuse a version they do not know):
 *   1  first version.
 *
 * Layout (all integers little-endian; every offset is from the start of the file):
 *
 *   +--------------------------------------------------+ 0
 *   | struct pgf_file_header (PGF_HEADER_SIZE bytes)   |
 *   +--------------------------------------------------+ header.chunks_offset
 *   | chunk 0: struct pgf_chunk_header | records ...   |
 *   | chunk 1                                          |   chunk i starts at
 *   | ...                                              |   chunks_offset + i * chunk_size
 *   | chunk chunk_count-1                              |
 *   +--------------------------------------------------+ chunks_offset + chunk_count*chunk_size
 *
 * Chunks are fixed-size and mapped MAP_SHARED from the file: what is committed is on the
 * page cache at once and survives SIGKILL. A chunk is owned by one writer at a time.
 *
 * Chunk life (pgf_chunk_header.kind / .state):
 *
 *   kind            state      meaning
 *   PGF_CHUNK_FREE  -          never used (seq == 0); a reader skips it
 *   DATA / DEFS     WRITING    owned by a writer; records up to `committed` are whole
 *   DATA / DEFS     FULL       released by its writer; may be recycled (DATA only)
 *   DATA            (recycle)  a FULL data chunk, the oldest by seq, is taken again: its
 *                              header is rewritten with a new seq before records go in, and
 *                              what it held is counted as dropped (PGF_REC_DROPPED)
 *   DEFS            -          definition chunks are never recycled (like Firefox's unique
 *                              strings): every group/site/thread/string definition survives
 *
 * Publishing: a writer writes a record's bytes after `committed`, then stores the new
 * `committed` with release ordering (and record_count, last_tsc). A reader loads
 * `committed` with acquire ordering and never looks past it: it never sees a torn record.
 * Records never span chunks.
 *
 * Records are msgpack arrays whose first element is the record kind (positive fixint);
 * fields follow in the order listed below. Writers may append fields at the end of a record
 * in a later version; readers ignore elements they do not know. Integers may come in any
 * msgpack integer width (hot records use fixed widths so the writer's space check is one
 * compare). Strings are msgpack str. TSC values are raw time-stamp-counter ticks (or
 * nanoseconds of CLOCK_MONOTONIC when header.clock == PGF_CLOCK_MONOTONIC); PGF_REC_CLOCK
 * pairs map them to real time.
 */
#ifndef PERFGROUP_FORMAT_H
#define PERFGROUP_FORMAT_H

#include <stdint.h>

#define PERFGROUP_FORMAT_VERSION 1u

#define PGF_MAGIC        "PERFGRP\n"   /* 8 bytes, at offset 0 */
#define PGF_MAGIC_LEN    8
#define PGF_HEADER_SIZE  4096u         /* the file header occupies one page */
#define PGF_CHUNK_MAGIC  0x4b434750u   /* "PGCK" little-endian */
#define PGF_CHUNK_HEADER_SIZE 64u

/* header.clock */
#define PGF_CLOCK_TSC        1u  /* ticks of rdtsc (x86_64) */
#define PGF_CLOCK_CNTVCT     2u  /* ticks of cntvct_el0 (aarch64) */
#define PGF_CLOCK_MONOTONIC  3u  /* nanoseconds of CLOCK_MONOTONIC */

/* header.mode */
#define PGF_MODE_STATS  1u  /* one record per event */
#define PGF_MODE_TRACE  2u  /* plus one record per stopwatch interval */

/* header.state */
#define PGF_STATE_RECORDING 1u  /* being written, or the writer died (crash, SIGKILL) */
#define PGF_STATE_CLOSED    2u  /* closed cleanly at exit */

struct pgf_file_header {
    char     magic[PGF_MAGIC_LEN];   /*   0 PGF_MAGIC */
    uint32_t version;                /*   8 PERFGROUP_FORMAT_VERSION */
    uint32_t header_size;            /*  12 PGF_HEADER_SIZE */
    uint32_t chunk_size;             /*  16 bytes per chunk, header included; power of 2 */
    uint32_t chunk_count;            /*  20 */
    uint64_t chunks_offset;          /*  24 == header_size */
    uint32_t pid;                    /*  32 */
    uint32_t ppid;                   /*  36 */
    uint32_t clock;                  /*  40 PGF_CLOCK_* */
    uint32_t mode;                   /*  44 PGF_MODE_* */
    uint32_t state;                  /*  48 PGF_STATE_* */
    uint32_t flags;                  /*  52 reserved, 0 */
    int64_t  start_realtime_ns;      /*  56 CLOCK_REALTIME at start (ns since the epoch) */
    int64_t  start_monotonic_ns;     /*  64 CLOCK_MONOTONIC at start */
    uint64_t start_tsc;              /*  72 clock ticks at start */
    uint64_t tsc_hz;                 /*  80 ticks per second, best estimate (updated) */
    uint64_t next_seq;               /*  88 next chunk sequence number (atomic) */
    uint64_t chunks_recycled;        /*  96 total recycled data chunks (atomic) */
    uint64_t records_dropped;        /* 104 total records lost to recycling or full (atomic) */
    uint64_t end_tsc;                /* 112 clock ticks at clean close, 0 otherwise */
    char     program[256];           /* 120 program name (argv[0]'s basename), NUL-padded */
    uint8_t  reserved[PGF_HEADER_SIZE - 376]; /* 376 zero; program arguments are a record */
};

struct pgf_chunk_header {
    uint32_t magic;          /*  0 PGF_CHUNK_MAGIC, 0 if never used */
    uint16_t kind;           /*  4 PGF_CHUNK_* */
    uint16_t state;          /*  6 PGF_CSTATE_* */
    uint64_t seq;            /*  8 sequence number, > 0, unique, increasing in time of take */
    uint32_t thread;         /* 16 thread index of the owner (PGF_REC_THREAD), ~0u for DEFS */
    uint32_t first_record;   /* 20 offset of the first whole record from the chunk start
                              *    (== PGF_CHUNK_HEADER_SIZE: records never span chunks) */
    uint32_t committed;      /* 24 bytes of whole records after first_record (release/acquire) */
    uint32_t record_count;   /* 28 records in the chunk */
    uint64_t first_tsc;      /* 32 clock at take */
    uint64_t last_tsc;       /* 40 clock of the last committed record */
    uint64_t dropped_before; /* 48 records this thread lost before this chunk (cumulative) */
    uint64_t reserved;       /* 56 zero */
};

#define PGF_CHUNK_FREE  0u
#define PGF_CHUNK_DATA  1u
#define PGF_CHUNK_DEFS  2u

#define PGF_CSTATE_WRITING 1u
#define PGF_CSTATE_FULL    2u

/*
 * Record kinds. "id" fields refer to definitions (in DEFS chunks) of the same file.
 *
 * Definitions (DEFS chunks, never recycled):
 *   PGF_REC_PROCESS  [kind, pid, ppid, program, [arg, ...], start_realtime_ns,
 *                     start_monotonic_ns, start_tsc, tsc_hz, mode, runtime_version]
 *   PGF_REC_GROUP    [kind, group_id, name, group_kind (PERFGROUP_KIND_*), active]
 *   PGF_REC_SITE     [kind, function_id, function (mangled), file, line, [group_id, ...]]
 *                    one per *function* (sites of one inline function in N TUs merge)
 *   PGF_REC_THREAD   [kind, thread_index, tid, name]   (again with a new name on rename)
 *   PGF_REC_STRING   [kind, string_id, text]           (event names, marker names)
 *
 * Data (a thread's DATA chunks):
 *   PGF_REC_CLOCK    [kind, tsc, realtime_ns, monotonic_ns, thread_cpu_ns]
 *                    first record of every data chunk, and periodically
 *   PGF_REC_EVENT    [kind, name_string_id, begin_tsc, end_tsc, cpu_ns, flags,
 *                     [[group_id, cycles, cpu_ns, activations], ...]]
 *                    flags: PGF_EVENT_F_*; cpu_ns of an implicit event is estimated
 *   PGF_REC_INTERVAL [kind, function_id (u32), group_mask (u8), depth (u8),
 *                     start_tsc (u64), duration (u64)]        trace mode, one per enter/exit
 *                    pair, written at exit; group_mask: bit i = the i-th group of the
 *                    function's PGF_REC_SITE list was acquired by this pair (0 = re-entry)
 *   PGF_REC_MARKER   [kind, name_string_id, text, start_tsc, end_tsc]  end == start: instant
 *   PGF_REC_DROPPED  [kind, records, bytes, chunks]        this thread lost these since the
 *                    previous PGF_REC_DROPPED (to recycling of its chunks, or a full buffer)
 *   PGF_REC_OVERHEAD [kind, commit_ns, commits, slow_paths, resyncs]  runtime's own cost
 *                    since the previous PGF_REC_OVERHEAD
 *   PGF_REC_THREAD_END [kind, end_tsc]
 */
enum pgf_record_kind {
    PGF_REC_PROCESS = 1,
    PGF_REC_GROUP = 2,
    PGF_REC_SITE = 3,
    PGF_REC_THREAD = 4,
    PGF_REC_STRING = 5,
    PGF_REC_CLOCK = 16,
    PGF_REC_EVENT = 17,
    PGF_REC_INTERVAL = 18,
    PGF_REC_MARKER = 19,
    PGF_REC_DROPPED = 20,
    PGF_REC_OVERHEAD = 21,
    PGF_REC_THREAD_END = 22,
};

/* PGF_REC_EVENT flags */
#define PGF_EVENT_F_IMPLICIT  0x1u  /* made by the runtime, not perfgroup_event_begin/end */
#define PGF_EVENT_F_DISCARDED 0x2u  /* a measure was discarded (CPU change, TSC backwards) */
#define PGF_EVENT_F_NESTED    0x4u  /* a nested loop ran inside this event */

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(struct pgf_file_header) == PGF_HEADER_SIZE, "file header size");
_Static_assert(sizeof(struct pgf_chunk_header) == PGF_CHUNK_HEADER_SIZE, "chunk header size");
#endif

#endif /* PERFGROUP_FORMAT_H */
