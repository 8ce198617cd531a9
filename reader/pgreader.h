/* SPDX-License-Identifier: MIT */
/*
 * pgreader.h — read a perfgroup recording (.pgm, perfgroup/format.h) record by record.
 *
 * Shared by perfgroup-convert and the tests. It validates every byte it uses and never
 * trusts a length or count from the file: every offset is checked against the chunk and
 * the file size, every msgpack length against the bytes left, nesting is bounded.
 *
 * Order of records (streaming; memory is one chunk plus the chunk index):
 *   1. definitions: every DEFS chunk, in seq order (PROCESS, GROUP, SITE, THREAD, STRING)
 *   2. data: thread by thread (ascending thread index), each thread's DATA chunks in seq
 *      order (CLOCK first in each chunk, then EVENT, INTERVAL, MARKER, DROPPED, ...)
 *
 * Errors are sticky (mpack style): after the first error pgr_next returns -1 forever and
 * pgr_error() says what and where (byte offset in the file). Check once at the end.
 * Warnings do not stop reading: a recording that was not closed (crash, SIGKILL, the
 * program still running), a file cut short (whole records up to the cut are returned).
 *
 *   pgr_reader *r = pgr_open(path);          // NULL only when out of memory
 *   struct pgr_record rec;
 *   while (pgr_next(r, &rec) > 0) { switch (rec.kind) { ... } }
 *   if (pgr_error(r)) fprintf(stderr, "%s: byte %llu: %s\n", path,
 *                             (unsigned long long)pgr_error(r)->offset, pgr_error(r)->message);
 *   for (size_t i = 0; i < pgr_warning_count(r); i++) ... pgr_warning(r, i) ...
 *   pgr_close(r);
 *
 * Strings and arrays in a record point into the reader's buffers: valid until the next
 * pgr_next or pgr_close call. Strings are NOT NUL-terminated: use .ptr and .len.
 *
 * Error messages (the `message` of pgr_error), with the offset they carry:
 *   "cannot open: <strerror>"                                  0
 *   "cannot read: <strerror>"                                  where the read started
 *   "file too short for a header (N bytes)"                    0
 *   "bad magic (not a perfgroup recording)"                    0
 *   "unsupported format version N (this reader knows 1)"      8
 *   "bad header_size N"                                        12
 *   "bad chunk_size N (power of 2, 4096..16777216)"            16
 *   "bad chunk_count N"                                        20
 *   "bad chunks_offset N"                                      24
 *   "bad chunk magic"                                          chunk start
 *   "bad chunk kind N" / "bad chunk state N"                   chunk start + 4 / + 6
 *   "bad first_record N"                                       chunk start + 20
 *   "committed N exceeds chunk"                                chunk start + 24
 *   "duplicate chunk seq N"                                    chunk start + 8
 *   "record is not a msgpack array" / "empty record"           record start
 *   "truncated record" (runs past committed)                   record start
 *   "msgpack nesting too deep" / "bad msgpack type byte 0xNN"  that byte
 *   "<record>: expected <type> for <field>"                    that field
 *   "<record>: N fields, needs at least M"                     record start
 *   "<record>: value N out of range for <field>"               that field
 * Warnings: "recording not closed (crash, kill or still running)", "file cut short: N of M
 * bytes", "chunk beyond end of file ignored", "chunk cut by end of file: last record
 * incomplete", "unknown record kind N skipped", "record_count N but M records" (chunk start
 * + 28: a FULL chunk's count differs, or a WRITING one's by more than one), "N chunk(s)
 * recycled by the writer while being read: skipped" (a live recording: pgr_chunks_skipped),
 * "the file shrank while its totals were read (truncated by another process?): N of M slots
 * not read" (a live recording truncated under the reader: no SIGBUS, the slots counted torn).
 */
#ifndef PERFGROUP_PGREADER_H
#define PERFGROUP_PGREADER_H

#include <stddef.h>
#include <stdint.h>

#include "perfgroup/format.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pgr_reader pgr_reader;

struct pgr_error {
    char message[200];
    uint64_t offset;      /* byte offset in the file */
};

struct pgr_str {
    const char *ptr;      /* not NUL-terminated */
    uint32_t len;
};

struct pgr_event_group {  /* one element of PGF_REC_EVENT's group list */
    uint32_t group_id;
    uint64_t cycles;
    uint64_t cpu_ns;
    uint64_t activations;
    /* self time (format.h): has_self 0 in records of writers before it (unknown) */
    uint8_t has_self;
    uint64_t self_ns;
    uint32_t parent;      /* the innermost running group's id + 1 at its first stopwatch; 0: none */
};

/* One record; `kind` selects the union member (field names as in perfgroup/format.h). */
struct pgr_record {
    enum pgf_record_kind kind;
    uint64_t offset;      /* byte offset of the record in the file */
    uint64_t chunk_seq;   /* seq of the chunk holding it */
    uint32_t thread;      /* that chunk's thread index (PGF_THREAD_DEFS for definitions) */
    union {
        struct {
            uint32_t pid, ppid;
            struct pgr_str program;
            const struct pgr_str *args; uint32_t nargs;
            int64_t start_realtime_ns, start_monotonic_ns;
            uint64_t start_tsc, tsc_hz;
            uint32_t mode;
            struct pgr_str runtime_version;
        } process;
        struct {
            uint32_t group_id;
            struct pgr_str name;
            uint32_t group_kind;      /* PERFGROUP_KIND_* */
            int active;
        } group;
        struct {
            uint32_t function_id;
            struct pgr_str function, file;
            uint32_t line;
            const uint32_t *group_ids; uint32_t ngroups;
            struct pgr_str module;    /* "" (length 0) in files before version 3 */
        } site;
        struct {
            uint32_t thread_index, tid;
            struct pgr_str name;
        } thread;
        struct {
            uint32_t string_id;
            struct pgr_str text;
        } string;
        struct {
            uint64_t tsc;
            int64_t realtime_ns, monotonic_ns;
            uint64_t thread_cpu_ns;
        } clock;
        struct {
            uint32_t name_string_id;
            uint64_t begin_tsc, end_tsc, cpu_ns;
            uint32_t flags;           /* PGF_EVENT_F_* */
            const struct pgr_event_group *groups; uint32_t ngroups;
            uint32_t groups_more;     /* groups the record could not list (version 3);
                                       * the whole-run totals hold them */
        } event;
        struct {
            uint32_t function_id;
            uint8_t group_mask, depth;
            uint64_t start_tsc, duration;
        } interval;
        struct {
            uint32_t name_string_id;
            struct pgr_str text;
            uint64_t start_tsc, end_tsc;   /* equal: an instant marker */
        } marker;
        struct {
            uint64_t records, bytes, chunks;
        } dropped;
        struct {
            uint64_t commit_ns, commits, slow_paths, resyncs;
            uint64_t dropped;         /* 0 when absent (files before this field) */
        } overhead;
        struct {
            uint64_t end_tsc;
        } thread_end;
    } u;
};

/* Per-chunk facts, for tests and tools (pgr_chunk_info). */
struct pgr_chunk_info {
    uint32_t index;       /* position in the file */
    uint16_t kind, state; /* PGF_CHUNK_*, PGF_CSTATE_* */
    uint64_t seq;
    uint32_t thread;
    uint32_t first_record, committed, record_count;
    uint64_t dropped_before, records_before;
    uint64_t first_tsc, last_tsc;
};

/* Open `path` and validate its header and every chunk header. Never NULL unless out of
 * memory; a failure to open or a bad header is the reader's sticky error. */
pgr_reader *pgr_open(const char *path);
/* The same over an open file descriptor, which the reader owns from then on (pgr_close
 * closes it, also when out of memory returns NULL): a caller that opened the file with its
 * own rules (openat, O_NOFOLLOW: perfgroup metrics over a directory). */
pgr_reader *pgr_open_fd(int fd);
void pgr_close(pgr_reader *r);

/* The file header (zeroed if it could not be read). */
const struct pgf_file_header *pgr_header(const pgr_reader *r);

/* Used (non-FREE) chunks in reading order: DEFS by seq, then by (thread, seq). */
size_t pgr_chunk_count(const pgr_reader *r);
const struct pgr_chunk_info *pgr_chunk(const pgr_reader *r, size_t i);

/* A recording still being written (header state RECORDING, the file MAP_SHARED by a live
 * process) changes under the reader: data chunks are recycled. The reader takes a consistent
 * view of each chunk: it reads the chunk header as a seqlock (seq, header, magic and seq
 * again), copies the records committed at that moment, and checks magic and seq again
 * after the copy. A chunk recycled in between is skipped and counted, never an error: its
 * records are gone (the writer counts them in header.records_dropped as well). After the
 * last record, one warning says how many were skipped. */
uint64_t pgr_chunks_skipped(const pgr_reader *r);

/* Sealed (FULL) chunks of a version-2 file whose CRC-32C did not match their contents: each
 * is skipped, counted here and warned about with its byte offset (the first 8; then one
 * warning with the total). Its records are not believed: they are lost like recycled ones. */
uint64_t pgr_chunks_corrupt(const pgr_reader *r);

/* The open events' slots of the file (format.h, PGF_CHUNK_OPEN) that were whole when it was
 * opened: events still open when the writer last refreshed them. A slot whose thread has an
 * EVENT record with the same begin_tsc is stale (that event ended); the caller drops it. */
size_t pgr_open_events(const pgr_reader *r, const struct pgf_open_slot **slots);

/* The whole-run totals (format.h, struct pgf_totals_slot; version 3): the slots in use that
 * were whole when the file was opened (a live one: read twice, a slot rewritten in between
 * read again, up to 8 times), each thread's cumulative totals of a group, thread 0 the ended
 * threads' rows. 0 for a file without them (older writers: sum its events instead).
 * *torn (may be NULL): slots left out, rewritten under every try or cut by a dying writer. */
size_t pgr_totals(const pgr_reader *r, const struct pgf_totals_slot **slots, uint64_t *torn);

/* Follow a live file (perfgroup top, metrics): before the records of each DATA chunk are
 * read, fn returns how many of its committed bytes were read already (by an earlier reader
 * of the same file: the chunk's seq identifies it); the reader starts after them (records
 * never span, so a committed byte count is a record boundary), and skips the chunk when it
 * holds nothing more. Set it right after pgr_open. */
typedef uint32_t (*pgr_resume_fn)(void *ctx, const struct pgr_chunk_info *c);
void pgr_set_resume(pgr_reader *r, pgr_resume_fn fn, void *ctx);

/* Next record: 1 = *rec filled, 0 = end of file, -1 = error (see pgr_error). */
int pgr_next(pgr_reader *r, struct pgr_record *rec);

/* NULL while there is no error. */
const struct pgr_error *pgr_error(const pgr_reader *r);
size_t pgr_warning_count(const pgr_reader *r);
const struct pgr_error *pgr_warning(const pgr_reader *r, size_t i);

/* Record kind name ("interval", ...) or NULL. */
const char *pgr_kind_name(unsigned kind);

#ifdef __cplusplus
}
#endif

#endif /* PERFGROUP_PGREADER_H */
