/* SPDX-License-Identifier: MIT */
/*
 * pgshared.h — what perfgroup-convert (converter/) and the live tool `perfgroup` (live/) share:
 * a recording decoded through pgreader (its definitions and a per-thread record stream, with
 * the plausibility clipping of clip.c), the tsc -> time clock, the per-group totals rows of the
 * summary and the live views, and the small utilities (buffered JSON writer, hash map, UTF-8
 * text, error reporting). Internal prefix: pgc_ (the converter's, whose reading code this is).
 *
 * Flow: a program opens a recording (input.c validates the whole file first and reads its
 * definitions), then streams each thread's records, oldest chunk first, to its callbacks.
 */
#ifndef PGSHARED_H
#define PGSHARED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "perfgroup/format.h"
#include "pgreader.h"

/* An event is marked jank (Gecko marker, Chrome trace) when its CPU time exceeds this: one
 * definition with the runtime's and the summary's jank, CPU time per event. */
#define PGC_JANK_MS 50
#define PGC_EXIT_USAGE 1
#define PGC_EXIT_BADINPUT 2
#define PGC_EXIT_OUTPUT 3 /* cannot create or write the output: ENOSPC, EIO, EACCES */

/* ---- Error reporting ---------------------------------------------------------------- */
/* One error per run: the first one wins (mpack's sticky error). */
struct pgc_error {
    int set;
    char msg[512];
};

/* ---- Hash map: u64 key -> u32 value (open addressing, grows) -------------------------- */
struct pgc_hash {
    uint64_t *keys;
    uint32_t *vals;
    size_t cap, len;
};
void pgc_hash_free(struct pgc_hash *m);
/* Returns 1 and *val if found. */
int pgc_hash_get(const struct pgc_hash *m, uint64_t key, uint32_t *val);
/* Returns 0 or -ENOMEM. */
int pgc_hash_put(struct pgc_hash *m, uint64_t key, uint32_t val);
uint64_t pgc_hash_bytes(const void *p, size_t n);

/* ---- Buffered writer with JSON helpers ------------------------------------------------ */
struct pgc_out {
    FILE *f;
    char buf[1 << 16];
    size_t len;
    int err; /* sticky errno */
};
void pgc_out_init(struct pgc_out *o, FILE *f);
void pgc_out_flush(struct pgc_out *o);
void pgc_out_raw_slow(struct pgc_out *o, const char *s, size_t n);
static inline void pgc_out_raw(struct pgc_out *o, const char *s, size_t n)
{
    if (o->len + n <= sizeof(o->buf)) { /* the common case: room in the buffer */
        __builtin_memcpy(o->buf + o->len, s, n);
        o->len += n;
    } else {
        pgc_out_raw_slow(o, s, n);
    }
}
void pgc_out_str(struct pgc_out *o, const char *s); /* raw C string */
void pgc_out_json_str(struct pgc_out *o, const char *s, size_t n); /* quoted, escaped */
void pgc_out_json_chars(struct pgc_out *o, const char *s, size_t n); /* escaped only */
/* Length of the valid UTF-8 sequence at s (1..4), 0 if s[0] does not start one. */
size_t pgc_utf8_len(const unsigned char *s, size_t n);
/* s for a terminal: valid UTF-8 kept, control characters (C0, DEL, C1), invalid bytes and
 * backslashes written \xNN / \\ into dst (cap >= 6; cut to fit). Returns dst. */
const char *pgc_text_safe(char *dst, size_t cap, const char *s);
/* s as valid UTF-8 (malloc'd): every byte that does not start a valid sequence becomes
 * U+FFFD; with `controls`, so does every control character (C0, DEL, C1: a terminal's
 * escape sequences, a newline in a table). NULL when out of memory. */
char *pgc_utf8_dup(const char *s, int controls);
void pgc_out_u64(struct pgc_out *o, uint64_t v);
void pgc_out_i64(struct pgc_out *o, int64_t v);
/* ns as a decimal number of milliseconds (or micro when div is 1000) with up to 6 decimals */
void pgc_out_fixed(struct pgc_out *o, int64_t v, int64_t div);
void pgc_out_double(struct pgc_out *o, double v);
#define PGC_LIT(o, s) pgc_out_raw((o), "" s, sizeof("" s) - 1) /* literals only */
/* a comma when `cond` (evaluated once), then the literal */
#define PGC_SEP(o, cond, s)                                                                   \
    do {                                                                                      \
        if (cond)                                                                             \
            pgc_out_raw((o), ",", 1);                                                  \
        PGC_LIT(o, s);                                                                        \
    } while (0)

#define PGC_DIRECT_IDS 1024u

/* ---- The recording (definitions, read through pgreader) ------------------------------ */
struct pgc_group {
    uint32_t id;
    uint32_t kind;   /* PERFGROUP_KIND_* */
    uint32_t active;
    char *name;
};

struct pgc_site {
    uint32_t id;
    uint32_t line;
    char *function;  /* as recorded (mangled) */
    char *display;   /* demangled, or == function */
    char *file;
    char *module;     /* the object its code is in, as recorded; "" the program (and in files
                       * before format version 3) */
    const char *lib;  /* that object as the outputs name it: its file name — with as many of
                       * its directories as tell it from another of the file's objects of
                       * that name — or the program's name; points into module or program */
    int name_shared;  /* another function of the same lib has this display name in another
                       * file (two static functions): the outputs name the file too */
    uint32_t ngroups;
    uint32_t *groups; /* indices into pgc_file.groups */
};

/* An event still open when the file was last written (its slot; the thread never ended it
 * before the crash, _exit or kill): what the outputs show as unfinished. */
struct pgc_unfinished {
    uint32_t thread, tid;
    char thread_name[64], event[64]; /* event: its name, "(implicit)" for an implicit one */
    uint64_t begin_ns;               /* from the file's start */
    uint64_t wall_ns, cpu_ns;        /* up to the last refresh; cpu_known: cpu_ns measured */
    int cpu_known;
    struct pgf_open_slot slot;       /* as read: its groups so far (pgc_open_groups) */
};

struct pgc_thread {
    uint32_t index;
    uint32_t tid;
    char *name;      /* the latest name the program gave it */
};

struct pgc_string {
    uint32_t id;
    char *text;
};

/* What reading a file cost or found, known once it is streamed (pgc_file_stream), for
 * every output's metadata. */
struct pgc_file_counts {
    uint64_t chunks_corrupt;   /* sealed chunks skipped for a CRC-32C mismatch */
    uint64_t clipped, clipped_offset; /* record times clipped (see clip_lo), the first's offset */
    /* the runtime's own cost, summed over the PGF_REC_OVERHEAD records read (those that
     * survived recycling) */
    uint64_t ovh_commit_ns, ovh_commits, ovh_slow_paths, ovh_resyncs, ovh_dropped, ovh_records;
};

/* The runtime's overhead totals of a file: the header's when its writer kept them (every
 * PGF_REC_OVERHEAD ever written, its chunk recycled or not), else the sum of the records read
 * (final once streamed). any: there is something to say. */
struct pgc_overhead {
    uint64_t commit_ns, commits, slow_paths, resyncs, dropped;
    uint64_t refused, clamped; /* the header's (0 in older files) */
    int from_header, any;
};
struct pgc_file;
void pgc_overhead_of(const struct pgc_file *f, struct pgc_overhead *o);

/* Input '-': the path the reader opens instead (main.c copies stdin there); messages say '-'. */
extern const char *pgc_stdin_path;

/* A group's whole-run totals over a file's threads (format.h, pgr_totals). */
struct pgc_gtotal {
    char *name;
    uint32_t kind;
    struct pgf_totals t;
};

struct pgc_file {
    const char *path;          /* as given (messages); '-' for stdin */
    const char *open_path;     /* what is opened: path, or pgc_stdin_path for '-' */
    uint64_t size;             /* bytes, as opened (the output bound's N) */
    pgr_reader *r;
    struct pgf_file_header hdr;
    /* the process (PGF_REC_PROCESS, or the file header when it is missing) */
    uint32_t pid, ppid;
    char *program;
    char **args;
    uint32_t nargs;
    int64_t start_realtime_ns, start_monotonic_ns;
    uint64_t start_tsc, tsc_hz;
    uint32_t mode;
    /* definitions by index; the maps go from id to index */
    struct pgc_group *groups;   uint32_t ngroups;  struct pgc_hash group_ids;
    uint32_t *group_direct;     /* index by id for ids < PGC_DIRECT_IDS */
    struct pgc_site *sites;     uint32_t nsites;   struct pgc_hash site_ids;
    struct pgc_thread *threads; uint32_t nthreads; struct pgc_hash thread_ids;
    struct pgc_string *strings; uint32_t nstrings; struct pgc_hash string_ids;
    /* facts from the chunk index */
    uint64_t records_total;    /* records in data chunks */
    uint32_t threads_total;    /* thread definitions (kept when parked) */
    /* plausibility against the file's own clocks (pgc_file_stream): every record time
     * lies in [clip_lo, the ceiling of its chunk]; a time beyond its ceiling is clipped to it
     * (a duration no clock of the file covers), a PGF_REC_CLOCK that contradicts the header's
     * clock is ignored, an event's CPU is at most its wall time: each counted here, the first
     * one's byte offset kept (once streamed) */
    uint64_t clip_lo, clip_hi, clip_slack; /* clip_hi: for chunks still being written */
    int following;             /* not closed (maybe live): chunks being written have no ceiling */
    int streamed;              /* every record streamed: `counts` is final */
    struct pgc_file_counts counts; /* kept when parked */
    size_t clip_cursor;        /* stream: index of the current chunk (pgr_chunk) */
    uint64_t clip_seq, clip_ceiling;
    int not_closed;            /* header.state != CLOSED */
    /* the first data record, read while looking for the end of the definitions */
    struct pgr_record pending;
    int has_pending;
    /* the file's open-event slots (pgr_open_events), by thread index; open_stale[i] bit 0:
     * the thread has the EVENT record of the same begin, bit 1: the thread was streamed */
    struct pgf_open_slot *open;
    uint8_t *open_stale;
    size_t nopen;
    /* parked (pgc_file_park): only the fields above the definitions are kept */
    int parked, reopened;
    char *warn;                /* the warnings' text, kept while parked */
    struct pgc_unfinished *unfinished; /* once streamed: events the file has open (kept) */
    size_t nunfinished;
    /* whole-run totals (format.h, version 3; kept when parked): has_totals 0 for an older
     * file. By group over the threads, heaviest first (the top group left out: its CPU and
     * events are the process's, tot_cpu_ns / tot_events); tot_torn: slots a live writer kept
     * rewriting, or a dying one left torn */
    int has_totals;
    struct pgc_gtotal *gtot;
    uint32_t ngtot;
    uint64_t tot_cpu_ns, tot_events, tot_torn;
};

/* The index in f->open of thread `thread`'s open-event slot, or f->nopen (slots come in
 * thread order, one per thread). */
size_t pgc_open_find(const struct pgc_file *f, uint32_t thread);
/* An open event's groups so far as text, "a (running), b, c and more", into b[n] (always
 * terminated, cut at n; bytes as the file has them: the caller escapes). Returns its length. */
size_t pgc_open_groups(const struct pgc_file *f, const struct pgf_open_slot *s, char *b,
                       size_t n);

/* Opens and validates a recording and reads all its definitions. Returns 0, or -1 with err
 * set to "<path>: byte <off>: <what>" (bad input: exit 2). */
int pgc_file_open(struct pgc_file *f, const char *path, struct pgc_error *err);
/* The same for a live file read again and again (live.c): resume says how much of each data
 * chunk was read before (pgr_set_resume). */
int pgc_file_follow(struct pgc_file *f, const char *path, pgr_resume_fn resume,
                    void *resume_ctx, struct pgc_error *err);
/* The same over fd, opened by the caller (owned by the reader from then on; path names it
 * in messages): perfgroup metrics opens a directory's files with openat and O_NOFOLLOW. */
int pgc_file_follow_fd(struct pgc_file *f, const char *path, int fd,
                       pgr_resume_fn resume, void *resume_ctx, struct pgc_error *err);
void pgc_file_close(struct pgc_file *f);
/* Many inputs: between its validation and its turn a file keeps only its header facts
 * (path, pid, ppid, program, start times, mode, counts) and its warnings' text; the reader
 * and the definitions are freed (park) and read again when the file's turn comes (unpark,
 * which re-validates). So memory does not grow with the number of inputs beyond that. A
 * writer unparks each file for its turn and calls pgc_file_repark after it: that
 * parks it again only if unpark had to reopen it. Return 0, or -1 (err set). */
int pgc_file_park(struct pgc_file *f);
int pgc_file_unpark(struct pgc_file *f, struct pgc_error *err);
void pgc_file_repark(struct pgc_file *f);
/* Prints the reader's warnings and what a cut recording lost (call after success). */
void pgc_file_warnings(const struct pgc_file *f);

/* Streams the data records, thread by thread (ascending index), oldest first. begin/end
 * bracket each thread (index into f->threads); rec gets every record. Callbacks return 0 to
 * go on. Returns 0, a callback's non-zero value, or -1 with err set (corrupted input). */
struct pgc_stream_cb {
    int (*begin_thread)(void *ctx, uint32_t thread);
    int (*record)(void *ctx, const struct pgr_record *r);
    int (*end_thread)(void *ctx, uint32_t thread);
};
int pgc_file_stream(struct pgc_file *f, const struct pgc_stream_cb *cb, void *ctx,
                    struct pgc_error *err);

/* Index of a definition by id, UINT32_MAX if undefined. */
uint32_t pgc_group_index(const struct pgc_file *f, uint32_t id);
uint32_t pgc_site_index(const struct pgc_file *f, uint32_t id);
/* Index into f->threads of a recorded thread index, UINT32_MAX if undefined. */
uint32_t pgc_thread_slot(const struct pgc_file *f, uint32_t thread_index);
/* The clock value from which the records of f->threads[ti] are complete, 0 if they are from
 * its start: the start (first_tsc) of its oldest chunk still in the file when that chunk
 * counts records before it (records_before: its earlier chunks were recycled, or skipped as
 * corrupt). Before it, what the thread ran left no record: an interval that began earlier
 * has its nested intervals of then missing (docs/converter.md, "Recycled records"). */
uint64_t pgc_thread_complete_from(const struct pgc_file *f, uint32_t ti);
/* Text of a string id, NULL if undefined (id 0 = no name). */
const char *pgc_string_text(const struct pgc_file *f, uint32_t id);

/* Demangles a C++ name; returns a malloc'd string or NULL if not mangled. */
char *pgc_demangle(const char *name);

/* One group's totals in the about:performance table (summary.c): CPU, wall, blocked (wall -
 * CPU), activations, events, the longest event (by CPU, by wall), and the jank histogram:
 * events in which the group's CPU time exceeded 2^k ms (k = 0 … PGC_JANK_BUCKETS-1: > 1, 2 … 512). */
#define PGC_JANK_BUCKETS 10
struct pgc_row {
    const char *name;
    uint64_t cpu_ns, wall_ns, blocked_ns, activations, events, longest_ns, longest_wall_ns;
    uint64_t jank[PGC_JANK_BUCKETS];
    /* tasks run on this thread on the group's behalf (perfgroup_task_*): whole-run totals
     * only (an event record does not carry them) */
    uint64_t task_cpu_ns, tasks;
    /* self time (docs/accounting.md "Self time"): the sum of the parts that carried it;
     * self_unknown counts the parts that did not (an older writer's slot, an event record):
     * self is known only when that is 0 (pgc_row_self_known) */
    uint64_t self_ns, self_unknown;
};
struct pgc_clock;
void pgc_row_add(struct pgc_row *d, const struct pgc_row *s); /* d += s */
/* d = a whole-run totals slot's body (format.h; longest: max_event_ns, max_wall_ns); its
 * self time known if the slot says so (PGF_TOTALS_F_SELF) */
void pgc_row_from_totals(struct pgc_row *d, const struct pgf_totals_slot *slot);
/* The row's self time is measured (every part of it carried one), and it has any part. */
static inline int pgc_row_self_known(const struct pgc_row *r)
{
    return r->self_unknown == 0 && (r->events || r->activations || r->cpu_ns);
}
/* Adds the groups of one PGF_REC_EVENT r of file f to rows (one per group of f, by index). */
void pgc_rows_add_event(struct pgc_row *rows, const struct pgc_file *f,
                        const struct pgc_clock *clk, const struct pgr_record *r);

/* Time helpers shared by the sinks: a per-thread tsc -> ns-since-process-start mapping that
 * follows the thread's PGF_REC_CLOCK records. */
struct pgc_clock {
    uint64_t ref_tsc;
    int64_t ref_ns;   /* ns since the process's start_monotonic at ref_tsc */
    double ns_per_tick;
};
void pgc_clock_init(struct pgc_clock *c, const struct pgc_file *f);
void pgc_clock_update(struct pgc_clock *c, const struct pgc_file *f,
                      const struct pgr_record *r);
int64_t pgc_clock_ns(const struct pgc_clock *c, uint64_t tsc);
int64_t pgc_ticks_ns(const struct pgc_clock *c, uint64_t ticks);

#endif /* PGSHARED_H */
