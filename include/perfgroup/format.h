/* SPDX-License-Identifier: MIT */
/*
 * perfgroup/format.h — the contract between the runtime (writer) and perfgroup-convert
 * (reader): the layout of a recording file (.pgm).
 *
 * History of PERFGROUP_FORMAT_VERSION (readers refuse a version they do not know):
 *   1  first version. Refined before any release (still version 1) by the recorder:
 *      chunk header field 56 is `records_before` (was `reserved`), `dropped_before` counts
 *      only records lost for want of a chunk, PGF_REC_INTERVAL has one exact 29-byte
 *      encoding (PGF_INTERVAL_SIZE), publishing order and recycling order are specified,
 *      string ids start at 1, file naming (%p, fork, exec) is specified below,
 *      PGF_REC_OVERHEAD gained `dropped` (6th element), a chunk's last_tsc skips
 *      interval records until the chunk is sealed, PGF_REC_CLOCK's thread_cpu_ns may be 0.
 *      Still version 1 (fields taken from the zeroed reserved area, 0 = not recorded, as
 *      in files of earlier writers; readers accept both): header offset 376 `cpu_time`
 *      (PGF_CPU_TIME_*: a group's CPU time measured or estimated) and 380 `tsc_scope`
 *      (PGF_TSC_SCOPE_*: whether counter intervals across CPUs were kept).
 *   2  a CRC-32C per sealed chunk (issue 15): chunk header offset 20, `first_record` in
 *      version 1 (always PGF_CHUNK_HEADER_SIZE: records never span chunks), is `crc32c`:
 *      written when the chunk is sealed (state FULL), before the state; 0 while WRITING.
 *      It covers the chunk header as sealed (state FULL, crc32c 0) and the `committed`
 *      bytes of records after it: pgf_chunk_crc() in perfgroup/crc32c.h. A reader checks
 *      it on every FULL chunk and skips (and counts) a chunk that does not match; a
 *      WRITING chunk (the one a crash cut) is read unchecked. Readers accept version 1
 *      (no checksum; first_record at offset 20) and 2.
 *      Still version 2: chunk kind PGF_CHUNK_OPEN (the open events' slots, below; older
 *      writers made none; a reader older than it refuses the kind). Its slots were 48
 *      bytes before any release; 96 with the event's groups so far.
 *      Still version 2 (from the zeroed reserved area, 0 in older files): header offsets
 *      424 `refused` and 432 `clamped`, the process's counts of refused calls and clamped
 *      events (issue 19).
 *   3  PGF_REC_SITE has a 7th field, `module`: the path of the object the function's code is
 *      in, as the loader names it ("" for the program), and a function is one per module
 *      (issue 31: add-ons built alike, every one with its `addon_run` in its `plugin.c`,
 *      were one function before); a SITE without the field (an older file) has module "".
 *      And whole-run totals (issue 32): a region after the chunks (header offsets 440-463:
 *      totals_offset, totals_slot_size, totals_count, totals_used, threads_folded,
 *      totals_lost) of struct pgf_totals_slot, per thread and group the cumulative totals
 *      the runtime's snapshots report, never recycled; written by each thread at its
 *      commits as a seqlock per slot (below). Readers accept 1..3; a file without the
 *      region (totals_offset 0: versions 1 and 2) is summed from its surviving events.
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
 *   | version 3: totals_count struct pgf_totals_slot   |   = header.totals_offset
 *   | (totals_slot_size bytes each), never recycled    |
 *   +--------------------------------------------------+ totals_offset + count * slot_size
 *
 * Chunks are fixed-size and mapped MAP_SHARED from the file: what is committed is on the
 * page cache at once and survives SIGKILL. A chunk is owned by one writer at a time.
 *
 * Chunk life (pgf_chunk_header.magic / .kind / .state):
 *
 *   magic  kind            state      meaning
 *   0      PGF_CHUNK_FREE  -          never used, or reserved by a writer as its next chunk
 *                                     (a writer that has filled a chunk asks for its next
 *                                     when it starts the current one, and pre-faults its
 *                                     pages; its first chunk comes alone); readers skip it
 *   MAGIC  DATA / DEFS     WRITING    owned by a writer; records up to `committed` are whole
 *   MAGIC  DATA / DEFS     FULL       released by its writer (chunk full, or thread end)
 *   0      (recycle)       -          the oldest FULL DATA chunk by seq is taken again when no
 *                                     chunk is free: magic is cleared first, then the header
 *                                     is rewritten (new seq, committed 0) and magic set last,
 *                                     so a crash in between leaves a chunk readers skip. Its
 *                                     records count as dropped (header.records_dropped,
 *                                     chunks_recycled, the owner's next PGF_REC_DROPPED).
 *   MAGIC  DEFS            any        never recycled (like Firefox's unique strings): every
 *                                     group/site/string definition survives. PGF_REC_THREAD
 *                                     definitions have DEFS chunks of their own, at most a
 *                                     quarter of the chunks; when they are all used, the
 *                                     oldest whose threads have all ended and kept no DATA
 *                                     chunk is taken again (magic cleared first, as above):
 *                                     every thread with a DATA chunk keeps its definition,
 *                                     and thread churn never takes the data's share
 *
 * Sealing (version 2): the writer computes the chunk's CRC-32C (pgf_chunk_crc) once its last
 * record is in and last_tsc settled, stores it in `crc32c`, then the state FULL with
 * release ordering. Nothing in a FULL chunk changes afterwards until it is recycled.
 *
 * Publishing: a writer writes a record's bytes after `committed`, then record_count (and
 * last_tsc, unless the record is an interval), then stores the new `committed` with release
 * ordering. last_tsc is exact when the chunk is FULL: sealing it settles last_tsc from its
 * last interval. A reader loads
 * `committed` with acquire ordering and never looks past it: it never sees a torn record.
 * So in a WRITING chunk of a killed writer record_count may exceed the whole records by one;
 * in a FULL chunk it is exact (unless instrumented code in a signal handler nested a record
 * inside another on the same thread: docs/file-format.md). Records never span chunks.
 *
 * Exact accounting per thread: chunk.records_before + chunk.record_count of a thread's newest
 * chunk is every record it committed; records_before + record_count - (records in its
 * surviving chunks) is what recycling took; dropped_before is what it could not write at all
 * (no chunk free or recyclable). header.records_dropped is the sum of both over all threads.
 *
 * File names (PERFGROUP_OUTPUT or perfgroup_record_open): "%p" becomes the pid, "%%" a '%'.
 * The file is created 0600 unnamed (O_TMPFILE) in the same directory and linked into place
 * whole (without O_TMPFILE: "<name>.tmp<pid>.XXXXXX", renamed into place); a symlink
 * planted at the path is replaced, never followed. A fork()ed child
 * records into the name expanded with its own pid (the name plus ".<pid>" when it has no
 * %p) with every definition replayed, made at its first record; after exec() of a recording process the new image
 * finds a file of its own pid, begun after its process started, at the name and records
 * into "<name>.exec<N>" instead (an earlier process's file of a reused pid is replaced).
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

#define PERFGROUP_FORMAT_VERSION 3u
#define PERFGROUP_FORMAT_VERSION_MIN 1u /* the oldest version readers still accept */

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
    uint32_t cpu_time;               /* 376 PGF_CPU_TIME_*; 0: not recorded (older writer) */
    uint32_t tsc_scope;              /* 380 PGF_TSC_SCOPE_*; 0: not recorded (older writer) */
    /* the runtime's own cost, summed by every thread as it writes a PGF_REC_OVERHEAD record
     * (atomic; added even when the record itself cannot be written, and kept when its chunk
     * is recycled): 0 in files of older writers */
    uint64_t ovh_commit_ns;          /* 384 ns spent committing events */
    uint64_t ovh_commits;            /* 392 events committed */
    uint64_t ovh_slow_paths;         /* 400 hooks that took the slow path */
    uint64_t ovh_resyncs;            /* 408 resynchronisations (skipped exits) */
    uint64_t ovh_dropped;            /* 416 enter/exit pairs not counted */
    /* the process's own counts since it started (a fork child: since the fork), stored
     * (atomic max) with each PGF_REC_OVERHEAD record and at close: 0 in older files */
    uint64_t refused;                /* 424 hook and API calls refused (perfgroup_snapshot_refused) */
    uint64_t clamped;                /* 432 events whose CPU exceeded their wall, clamped */
    /* version 3: the whole-run totals region (struct pgf_totals_slot), after the chunks;
     * totals_offset 0: none (older writers) */
    uint64_t totals_offset;          /* 440 == chunks_offset + chunk_count * chunk_size */
    uint32_t totals_slot_size;       /* 448 bytes per slot (sizeof struct pgf_totals_slot;
                                      *     a later writer may make it larger) */
    uint32_t totals_count;           /* 452 slots in the region */
    uint32_t totals_used;            /* 456 slots ever taken (high-water mark, atomic) */
    uint32_t threads_folded;         /* 460 ended threads folded into the "ended threads"
                                      *     rows (thread 0) when the slots ran out */
    uint64_t totals_lost;            /* 464 commits whose totals found no slot (then the
                                      *     totals of that thread and group are short) */
    uint8_t  reserved[PGF_HEADER_SIZE - 472]; /* 472 zero; program arguments are a record */
};

/* header.cpu_time: how a group's CPU time in an event was found (docs/accounting.md) */
#define PGF_CPU_TIME_MEASURED  1u  /* the thread's CPU time while the group's stopwatch ran
                                    * (rseq's "descheduled" pointer + CPU-clock reads) */
#define PGF_CPU_TIME_ESTIMATED 2u  /* no rseq: the event's CPU time shared by stopwatch
                                    * (wall) time; implicit events from the sampler */

/* header.tsc_scope: are counter intervals whose ends were read on two CPUs kept? */
#define PGF_TSC_SCOPE_KERNEL   1u  /* yes: the kernel's clocksource is `tsc` (it keeps that
                                    * only while the TSCs are in sync), or the counter is
                                    * system-wide (cntvct_el0, CLOCK_MONOTONIC) */
#define PGF_TSC_SCOPE_RELIABLE 2u  /* yes: invariant TSC the kernel calls `tsc_reliable` */
#define PGF_TSC_SCOPE_CPU      3u  /* no: a stopwatch that ends on another CPU is discarded */

struct pgf_chunk_header {
    uint32_t magic;          /*  0 PGF_CHUNK_MAGIC, 0 if never used */
    uint16_t kind;           /*  4 PGF_CHUNK_* */
    uint16_t state;          /*  6 PGF_CSTATE_* */
    uint64_t seq;            /*  8 sequence number, > 0, unique, increasing in time of take */
    uint32_t thread;         /* 16 thread index of the owner (PGF_REC_THREAD), ~0u for DEFS */
    uint32_t crc32c;         /* 20 version 2: CRC-32C of the sealed chunk (header as
                              *    sealed with this field 0, then `committed` bytes of
                              *    records), 0 while WRITING. Version 1: first_record, the
                              *    offset of the first record, always PGF_CHUNK_HEADER_SIZE */
    uint32_t committed;      /* 24 bytes of whole records after first_record (release/acquire) */
    uint32_t record_count;   /* 28 records in the chunk */
    uint64_t first_tsc;      /* 32 clock at take */
    uint64_t last_tsc;       /* 40 clock of the last committed record (the end of an
                              *    interval); in a WRITING chunk, of the last one that is
                              *    not an interval (the exit hook does not store it) */
    uint64_t dropped_before; /* 48 records this thread could not write at all before this
                              *    chunk (no chunk free or recyclable), cumulative */
    uint64_t records_before; /* 56 records this thread committed in its earlier chunks,
                              *    recycled or not, cumulative (0 for DEFS) */
};

#define PGF_INTERVAL_SIZE 29u      /* the one encoding of PGF_REC_INTERVAL */
#define PGF_THREAD_INDEX_LAZY 0x40000000u
#define PGF_THREAD_DEFS 0xffffffffu /* pgf_chunk_header.thread of DEFS chunks */

#define PGF_CHUNK_FREE  0u
#define PGF_CHUNK_DATA  1u
#define PGF_CHUNK_DEFS  2u
#define PGF_CHUNK_OPEN  3u  /* format version 2, issue 19: the open events' slots */

/*
 * Open events (PGF_CHUNK_OPEN): one chunk per file, taken when the file is made, state
 * WRITING for ever (never sealed, never recycled), thread PGF_THREAD_DEFS. After its header,
 * an array of struct pgf_open_slot, slot i for the thread of index i + 1 (PGF_REC_THREAD).
 * A runtime thread rewrites a thread's slot every period (10 ms) while that thread has an
 * event open for longer than a period, and empties it when the event has ended: a crash,
 * _exit or SIGKILL loses at most a period of an event that never reached its EVENT record.
 * Each slot is a seqlock: `seq` odd while it is rewritten (a reader skips such a slot: the
 * writer died in the middle of it). A slot whose thread also has an EVENT record with the
 * same begin_tsc is stale (the event ended after the last refresh): readers ignore it.
 * The event's groups so far: those whose stopwatch was running at now_tsc (innermost
 * first), then those that ran and stopped, in the order they first did; at most
 * PGF_OPEN_GROUPS (PGF_OPEN_F_MORE: there were more). Their CPU is not split per group
 * until the EVENT record: the slot has the event's.
 * Files of older writers have no such chunk.
 */
#define PGF_OPEN_GROUPS 12
struct pgf_open_slot {
    uint32_t seq;            /*  0 even when whole, odd while being rewritten */
    uint32_t thread;         /*  4 the thread's index (PGF_REC_THREAD); 0: empty slot */
    uint32_t name;           /*  8 string id of the event's name; 0: none (implicit, or not
                              *    interned yet: a fork child's) */
    uint32_t flags;          /* 12 PGF_EVENT_F_IMPLICIT, PGF_OPEN_F_* */
    uint64_t begin_tsc;      /* 16 the event's begin */
    uint64_t now_tsc;        /* 24 the time of this refresh */
    uint64_t cpu_ns;         /* 32 the thread's CPU time in the event up to now_tsc */
    uint32_t tid;            /* 40 the thread's id (the file may hold no PGF_REC_THREAD
                              *    of it: a fork child that never committed a record) */
    uint16_t ngroups;        /* 44 entries of group[] used */
    uint16_t nrunning;       /* 46 of those, the first nrunning were running at now_tsc */
    uint32_t group[PGF_OPEN_GROUPS]; /* 48 group ids (PGF_REC_GROUP) */
};
#define PGF_OPEN_F_CPU  0x100u /* cpu_ns is known (else only the wall time is) */
#define PGF_OPEN_F_MORE 0x200u /* the event had more groups than group[] lists */

/*
 * Whole-run totals (version 3, issue 32): header.totals_count slots of
 * header.totals_slot_size bytes at header.totals_offset, after the chunks, outside
 * PERFGROUP_BUFFER (PERFGROUP_TOTALS slots, default 16384: 3 MiB, its blocks allocated as
 * slots are taken). A slot holds one thread's cumulative totals of one group, the numbers
 * the runtime's snapshots report (perfgroup_snapshot_take): taken at the thread's first
 * commit of the group in the file (thread, group set once), rewritten by that thread at each
 * commit of an event the group ran in. Never recycled: exact at close, and after a SIGKILL
 * as of each thread's last commit. When no slot is free, the slots of ended threads
 * (PGF_TOTALS_F_ENDED) are folded into one row per group with thread 0 (the "ended
 * threads" row, PG_TOTALS_FOLD's rule: sums, max of max, min of min) and reused;
 * header.threads_folded counts the threads folded, header.totals_lost the commits that found
 * no slot even then.
 * Each slot is a seqlock: `seq` odd while it is rewritten; a reader takes a slot whose seq is
 * even and the same before and after its copy (a live reader retries the others). A slot
 * with thread 0 and group 0 and flags 0 is free. Fields after `max_wall_ns` up to
 * totals_slot_size are zero (room for later fields: a reader reads what it knows).
 * perfgroup_reset() zeroes the snapshot's totals: the slots follow (each group's at its
 * thread's next commit of it).
 */
struct pgf_totals {
    uint64_t cpu_ns;         /*   0 CPU time while the group's stopwatch ran */
    uint64_t wall_ns;        /*   8 its stopwatch time */
    uint64_t blocked_ns;     /*  16 sum over events of wall - cpu */
    uint64_t cycles;         /*  24 counter ticks */
    uint64_t activations;    /*  32 stopwatches committed */
    uint64_t events;         /*  40 events the group ran in */
    uint64_t max_event_ns;   /*  48 the most CPU in one event */
    uint64_t min_event_ns;   /*  56 the least CPU in one event */
    uint64_t jank[10];       /*  64 events whose CPU exceeded 2^i ms (PERFGROUP_JANK_BUCKETS) */
    uint64_t discarded;      /* 144 measures discarded */
    uint64_t max_wall_ns;    /* 152 the most stopwatch time in one event */
    /* tasks (perfgroup_task_*, docs/accounting.md "Tasks"): 0 in files of writers before them
     * (the slot's reserved words, always zero there) */
    uint64_t task_cpu_ns;    /* 160 CPU time of tasks run on this thread on the group's behalf */
    uint64_t tasks;          /* 168 tasks run on this thread on the group's behalf */
    /* self time (docs/accounting.md "Self time"): valid only in a slot flagged
     * PGF_TOTALS_F_SELF (older writers: unknown, never 0 as measured) */
    uint64_t self_ns;        /* 176 of cpu_ns, CPU while the group was the innermost one */
};
struct pgf_totals_slot {
    uint32_t seq;            /*   0 even when whole, odd while being rewritten */
    uint32_t thread;         /*   4 thread index (PGF_REC_THREAD); 0: the ended threads' row */
    uint32_t group;          /*   8 group id (PGF_REC_GROUP) */
    uint32_t flags;          /*  12 PGF_TOTALS_F_* */
    struct pgf_totals t;     /*  16 (task_cpu_ns, tasks at 176, 184; self_ns at 192) */
};
#define PGF_TOTALS_F_USED  0x1u /* the slot is taken */
#define PGF_TOTALS_F_ENDED 0x2u /* its thread ended (its totals are final) */
#define PGF_TOTALS_F_FOLDED 0x4u /* the ended threads' row (thread 0) */
#define PGF_TOTALS_F_SELF  0x8u /* t.self_ns is measured (writers with self time; slot >= 200) */
#define PGF_TOTALS_SLOT_MIN 176u /* the smallest totals_slot_size a reader accepts */

#define PGF_CSTATE_WRITING 1u
#define PGF_CSTATE_FULL    2u

/*
 * Record kinds. "id" fields refer to definitions (in DEFS chunks) of the same file.
 *
 * Definitions (DEFS chunks; only those of threads that left nothing in the file recycled):
 *   PGF_REC_PROCESS  [kind, pid, ppid, program, [arg, ...], start_realtime_ns,
 *                     start_monotonic_ns, start_tsc, tsc_hz, mode, runtime_version]
 *   PGF_REC_GROUP    [kind, group_id, name, group_kind (PERFGROUP_KIND_*), active]
 *   PGF_REC_SITE     [kind, function_id, function (mangled), file, line, [group_id, ...],
 *                     module]
 *                    one per *function*: per (module, function, file, line, groups) — the
 *                    sites of one inline function in N TUs of a module merge, two modules'
 *                    never do (docs/architecture.md, "Function identity"). module: the
 *                    object's path as the loader names it, "" the program (version 3)
 *   PGF_REC_THREAD   [kind, thread_index, tid, name]   (again with a new name on rename)
 *   PGF_REC_STRING   [kind, string_id, text]           (event names, marker names)
 *                    string ids start at 1; 0 means "no name"
 *   Thread indexes come from the runtime core; a thread the core never saw that records a
 *   marker gets an index >= PGF_THREAD_INDEX_LAZY. A PGF_REC_THREAD is written each time a
 *   thread starts writing into a file (so a forked child's file has its own). A thread whose
 *   definition found no room (every thread-definition chunk in use) writes nothing: its
 *   records count as dropped, and the writer warns on stderr at close.
 *
 * Data (a thread's DATA chunks):
 *   PGF_REC_CLOCK    [kind, tsc, realtime_ns, monotonic_ns, thread_cpu_ns]
 *                    thread_cpu_ns 0: not read (a system call: the writer reads it at most
 *                    once a millisecond of the thread, and in its first CLOCK of a file)
 *                    first record of every data chunk, and periodically (before an EVENT
 *                    ending more than a second after the thread's last PGF_REC_CLOCK)
 *   PGF_REC_EVENT    [kind, name_string_id, begin_tsc, end_tsc, cpu_ns, flags,
 *                     [[group_id, cycles, cpu_ns, activations, self_ns, parent], ...],
 *                     groups_more]
 *                    self_ns, parent (writers with self time; older records have 4 fields:
 *                    self unknown): the group's self time in the event, and the innermost
 *                    running group (id + 1; 0: none, the event's root) when its first
 *                    stopwatch of the event ran (docs/accounting.md "Self time"; in a lite
 *                    event's hot part the first of its transitions the runtime saw, or an
 *                    earlier event's: "Lite frames", the call tree)
 *                    every group that ran, heaviest first (most cpu_ns, then most cycles,
 *                    then the lower id), as many as fit a chunk (the heaviest); groups_more (version 3, present only when not 0): how many more
 *                    ran and are not listed (the whole-run totals hold them)
 *                    flags: PGF_EVENT_F_*; the groups' cpu_ns as header.cpu_time
 *                    says (measured, or estimated: then implicit events' cpu_ns too)
 *   PGF_REC_INTERVAL [kind, function_id (u32), group_mask (u8), depth (u8),
 *                     start_tsc (u64), duration (u64)]        trace mode, one per enter/exit
 *                    pair, written at exit; group_mask: bit i = the i-th group of the
 *                    function's PGF_REC_SITE list was acquired by this pair (0 = re-entry).
 *                    A frame whose exit is skipped (longjmp: dropped at a resync; open at
 *                    thread exit) is written then, up to then; a frame live around a nested
 *                    loop is two records split at the loop's end. Records of a thread come
 *                    innermost first: intervals at depth d+1 before the one at d holding them
 *                    Always exactly these PGF_INTERVAL_SIZE (29) bytes:
 *                    96 12 ce <u32 BE> cc <u8> cc <u8> cf <u64 BE> cf <u64 BE>
 *   PGF_REC_MARKER   [kind, name_string_id, text, start_tsc, end_tsc]  end == start: instant
 *   PGF_REC_DROPPED  [kind, records, bytes, chunks]        this thread lost these since the
 *                    previous PGF_REC_DROPPED (to recycling of its chunks, or a full buffer)
 *   PGF_REC_OVERHEAD [kind, commit_ns, commits, slow_paths, resyncs, dropped]  runtime's own
 *                    cost since the previous PGF_REC_OVERHEAD; dropped = enter/exit pairs
 *                    the hooks could not count (site not resolvable without blocking,
 *                    shadow stack full)
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
_Static_assert(__builtin_offsetof(struct pgf_file_header, cpu_time) == 376, "cpu_time offset");
_Static_assert(__builtin_offsetof(struct pgf_file_header, tsc_scope) == 380, "tsc_scope offset");
_Static_assert(__builtin_offsetof(struct pgf_file_header, ovh_commit_ns) == 384, "ovh_commit_ns offset");
_Static_assert(__builtin_offsetof(struct pgf_file_header, ovh_dropped) == 416, "ovh_dropped offset");
_Static_assert(__builtin_offsetof(struct pgf_file_header, refused) == 424, "refused offset");
_Static_assert(__builtin_offsetof(struct pgf_file_header, clamped) == 432, "clamped offset");
_Static_assert(__builtin_offsetof(struct pgf_file_header, totals_offset) == 440, "totals_offset offset");
_Static_assert(__builtin_offsetof(struct pgf_file_header, totals_used) == 456, "totals_used offset");
_Static_assert(__builtin_offsetof(struct pgf_file_header, totals_lost) == 464, "totals_lost offset");
_Static_assert(sizeof(struct pgf_totals) == 184, "totals size");
_Static_assert(__builtin_offsetof(struct pgf_totals, self_ns) == 176, "totals self_ns");
_Static_assert(__builtin_offsetof(struct pgf_totals, task_cpu_ns) == 160, "totals task_cpu_ns");
_Static_assert(__builtin_offsetof(struct pgf_totals, jank) == 64, "totals jank");
_Static_assert(__builtin_offsetof(struct pgf_totals, max_wall_ns) == 152, "totals max_wall_ns");
_Static_assert(sizeof(struct pgf_totals_slot) == 200, "totals slot size");
_Static_assert(__builtin_offsetof(struct pgf_totals_slot, t) == 16, "totals slot body");
_Static_assert(__builtin_offsetof(struct pgf_totals_slot, t.max_wall_ns) + 8 == PGF_TOTALS_SLOT_MIN,
               "the fields a reader needs");
_Static_assert(sizeof(struct pgf_chunk_header) == PGF_CHUNK_HEADER_SIZE, "chunk header size");
_Static_assert(sizeof(struct pgf_open_slot) == 96, "open slot size");
_Static_assert(__builtin_offsetof(struct pgf_open_slot, ngroups) == 44, "open slot ngroups");
_Static_assert(__builtin_offsetof(struct pgf_open_slot, group) == 48, "open slot group");
_Static_assert(__builtin_offsetof(struct pgf_open_slot, begin_tsc) == 16, "open slot begin_tsc");
_Static_assert(__builtin_offsetof(struct pgf_open_slot, cpu_ns) == 32, "open slot cpu_ns");
_Static_assert(__builtin_offsetof(struct pgf_open_slot, tid) == 40, "open slot tid");
_Static_assert(__builtin_offsetof(struct pgf_chunk_header, crc32c) == 20, "crc32c offset");
_Static_assert(__builtin_offsetof(struct pgf_chunk_header, committed) == 24, "committed offset");
_Static_assert(__builtin_offsetof(struct pgf_chunk_header, records_before) == 56, "records_before offset");
#endif

#endif /* PERFGROUP_FORMAT_H */
