/* SPDX-License-Identifier: MIT */
/*
 * gecko.h — the Gecko writer's internals, shared by its files (internal prefix pgc_):
 *   gecko.c           the entry point (pgc_gecko_write): processes, in order, and lazy threads
 *   gecko_threads.c   a thread's object: its head, markers, samples, closing fields
 *   gecko_markers.c   records -> markers (the payload writer; the thread's closing markers)
 *   gecko_samples.c   samples: trace mode on a grid, stats mode per CPU interval
 *   gecko_tables.c    a thread's string, frame and stack tables
 *   gecko_counters.c  per-group CPU counters: per-thread spill, merged per process
 *   gecko_meta.c      categories, marker schemas, the meta object
 *
 * The writer writes recordings as one Gecko profile (format version 36) for the Firefox
 * Profiler: one process per recording (the root one at the top, the others, e.g. forked
 * children, as sub-processes with their own startTime), one thread per recorded thread,
 * categories per group, synthesised samples, markers with schemas, per-group CPU counters.
 *
 * Samples. The Gecko format has no sample weights, so the converter puts samples on a
 * regular grid (meta.interval) in trace mode, each carrying the group + function nesting
 * active at that instant; in stats mode every `interval` of a group's CPU time becomes one
 * sample under "event name > group", spread over the event, so sample counts in the call tree
 * are CPU shares.
 *
 * Trace intervals arrive at their exit (children before parents), so a sample's stack is
 * known from the leaf up. Pending samples are kept as runs (first tick, tick count, one level
 * id per depth) until an outermost interval closes them; then they are written. Memory grows
 * with the sample ticks under one still-open outermost interval, never with records.
 *
 * Streaming. Per thread, markers go straight to the output; samples go to a temporary spill
 * file copied in after them; string, frame and stack tables (unique entries only) are written
 * last. Counter samples go to per-thread spill files merged by time at the process's end.
 */
#ifndef PGC_GECKO_H
#define PGC_GECKO_H

#include <stdlib.h>
#include <sys/types.h>

#include "perfgroup.h"
#include "pgconv.h"

#define UNKNOWN UINT32_MAX
#define MAX_DEPTH 255
#define MAX_COUNTERS 16
#define MAX_EVENT_GROUPS 256
#define MAX_PENDING_RUNS (1u << 18)

/* ---- Categories (global: the front-end uses the root meta's list) --------------------- */
/* Function groups (PERFGROUP_KIND_FUNCTION, one per function) share one category: a colour
 * each would exhaust the palette and say nothing. */
/* The front-end supports 256 categories: the heaviest groups (by their whole-run CPU in the
 * file's totals, else in the order of their definitions) get one each, the rest share the
 * last, "Other groups" (CAT_MORE, listed only when used; their names stay in frames and
 * markers). */
enum { CAT_IDLE = 0, CAT_OTHER = 1, CAT_EVENT = 2, CAT_FUNCTIONS = 3, CAT_FIRST_GROUP = 4,
       CAT_MORE = 255 };

struct cats {
    char **names; /* group names, category = CAT_FIRST_GROUP + i */
    uint32_t n;
    int more;     /* groups beyond them: CAT_MORE */
    struct pgc_hash by_name;
};

/* ---- Per-thread state ---------------------------------------------------------------- */
struct run {        /* pending trace samples: n ticks from t0 with the same levels */
    int64_t t0;
    uint32_t n;
    uint32_t nlev;  /* levels[0..nlev) in the pool at off */
    uint32_t off;
};

struct level {      /* one interval kind: the site and the groups it acquired */
    uint32_t site;
    uint32_t mask;
    /* its marker, computed once: name and category; function and file as string indexes
     * (unique-string fields) */
    uint32_t mname, mcat, fn, file, lib;
    int mready;
};

struct gthread {
    struct gecko *prof;
    struct pgc_file *f;
    struct pgc_thread *th;
    struct pgc_clock clk;
    /* tables */
    char **strings;
    uint32_t nstrings, capstrings;
    struct pgc_hash string_map;
    uint32_t *frame_loc, *frame_cat, *frame_line;
    uint32_t nframes, capframes;
    struct pgc_hash frame_map;
    uint32_t *stack_prefix, *stack_frame;
    uint32_t nstacks, capstacks;
    struct pgc_hash stack_map;
    /* samples */
    uint64_t nsamples;
    int capped;              /* hit opt->max_samples: no more samples for this thread */
    uint64_t quota;          /* its share of the output's samples (gecko.threads_left) */
    int is_main;             /* the process's GeckoMain (or its "until exec" thread) */
    int64_t last_sample_ns;
    int64_t next_tick;       /* trace: first tick not yet written */
    int ticks_started;
    struct run *runs;
    uint32_t nruns, capruns;
    uint32_t *pool;
    uint32_t npool, cappool;
    struct level *levels;
    uint32_t nlevels, caplevels;
    struct pgc_hash level_map;
    struct pgc_trace_self tself; /* trace: the acquiring intervals' self times */
    /* trace: the clock from which the thread's records are complete (0: from its start;
     * pgc_thread_complete_from): no samples before it, no self time for an interval that
     * began before it (what was nested in it then is missing) */
    uint64_t complete_tsc;
    /* stats-mode accumulators, one per group of the file, + one for "outside groups" */
    uint64_t *acc;
    uint64_t cpu_done;       /* stats: CPU of the thread's events before the current one */
    uint64_t cpu_sampled;    /* stats: the thread's CPU up to its latest sample */
    struct pgc_grid grid;    /* per-group CPU counters */
    /* samples go to a spill file (markers, far more numerous in trace mode, go straight to
     * the output) and are copied in after the markers */
    FILE *spill;
    struct pgc_out *sw;      /* buffered writer on `spill` */
    uint64_t nmarkers;
    /* times */
    int64_t first_ns, last_ns;
    int have_time;
    uint32_t idle_stack;
    uint64_t last_ev_name;   /* name_string_id + 1 of the last event, 0 = none */
    uint32_t last_ev_loc;
};

struct gecko {
    const struct pgc_options *opt;
    struct pgc_out *out;
    struct pgc_error *err;
    struct cats cats;
    int64_t iv;                 /* sample interval, ns */
    uint64_t max_samples;       /* per thread */
    uint64_t samples_left;      /* for the whole output (pgc_row_budget) */
    uint64_t threads_left;      /* threads not begun yet, over every input: each thread may
                                 * take samples_left / threads_left (what a thread leaves
                                 * goes to the next), so no thread is left without samples */
    uint64_t rows_left;         /* counter rows, the same */
    int64_t max_span_ns;        /* max_samples * iv: longer spans are damaged input */
    /* current process */
    struct pgc_file *f;
    uint32_t main_thread;       /* index into f->threads of the GeckoMain thread */
    int main_written;
    int exec_follows;           /* a later recording of this pid (an exec'd image) */
    char until_exec[420];       /* then the main thread's name */
    int nthreads_written;
    FILE *cspill;               /* the process's counter rows, a segment per thread: one file
                                 * whatever the number of threads (file descriptors) */
    struct cseg *cseg;          /* per thread: its rows' [start, end) in cspill */
    uint32_t ncspill, cap_cseg;
    uint64_t *group_cpu;        /* per group of f: total CPU, to pick counter groups */
    /* meta.profilingStartTime/EndTime: what the process's threads covered (ns since its
     * start), and over every process, ns since the root's start (the root's meta is the one
     * the front-end reads, so it is written after the sub-processes) */
    int64_t plo, phi, glo, ghi;
    int64_t root_start_ns;      /* the root's start_realtime_ns */
    struct pgc_file *files;     /* every input */
    size_t nfiles;
    char pname[400];            /* the current process's name (process_name()) */
    struct gthread *t;
    uint64_t records_done, records_total;
    /* markers of "lazy" thread indexes (a thread that wrote a marker before the runtime's
     * core saw it) moved to the thread with the same tid; see collect_lazy() */
    uint32_t *merged_into;      /* per f->threads index: target index, or UNKNOWN */
    uint32_t nmerged_into;
    struct lazy_marker *lazy;
    uint32_t nlazy;
    int skip;                   /* the current thread is a merged lazy one: no output */
};

struct lazy_marker {
    uint32_t target;            /* f->threads index */
    uint32_t src;               /* f->threads index of the lazy thread */
    struct pgr_record rec;      /* a PGF_REC_MARKER; text points to `text` */
    char *text;
};

#define MAX_LAZY_MARKERS 65536

struct crec { int64_t ns; uint32_t group, pad; uint64_t count; };
/* A thread's counter rows in the process's spill file, read back through a small buffer. */
struct cseg {
    off_t start, end, pos;
    uint32_t n, i;
    struct crec buf[32];
};

/* ---- Small helpers ------------------------------------------------------------------- */
static inline int grow(void **p, uint32_t *cap, uint32_t need, size_t elt)
{
    if (need <= *cap)
        return 0;
    uint32_t nc = *cap ? *cap : 64;
    while (nc < need)
        nc *= 2;
    void *np = realloc(*p, (size_t)nc * elt);
    if (!np)
        return -1;
    *p = np;
    *cap = nc;
    return 0;
}

static inline void out_ms(struct pgc_out *o, int64_t ns)
{
    pgc_out_fixed(o, ns, 1000000);
}

static inline int64_t tns(struct gthread *t, uint64_t tsc)
{
    return pgc_clock_ns(&t->clk, tsc);
}

static inline void seen(struct gthread *t, int64_t ns)
{
    if (!t->have_time) {
        t->first_ns = t->last_ns = ns;
        t->have_time = 1;
    }
    if (ns < t->first_ns)
        t->first_ns = ns;
    if (ns > t->last_ns)
        t->last_ns = ns;
}

/* ---- Across the files ---------------------------------------------------------------- */
/* gecko_tables.c: sets the run's error to "<file>: byte 0: out of memory"; returns -1 */
int pgc_gecko_oom(struct gecko *prof);
/* gecko_meta.c: categories */
uint32_t pgc_category_of(const struct cats *c, const char *name, uint32_t kind);
int pgc_categories_add(struct cats *c, const struct pgc_file *f);
void pgc_meta_write(struct gecko *prof, struct pgc_file *f, int root, int64_t lo, int64_t hi);
/* gecko_tables.c: each returns the row's index, UNKNOWN when out of memory */
uint32_t pgc_intern_string(struct gthread *t, const char *s, size_t n);
uint32_t pgc_intern_frame(struct gthread *t, uint32_t loc, uint32_t cat, uint32_t line);
uint32_t pgc_intern_stack(struct gthread *t, uint32_t prefix, uint32_t frame);
uint32_t pgc_label_frame(struct gthread *t, const char *label, uint32_t cat);
uint32_t pgc_group_category(struct gthread *t, uint32_t gidx);
uint32_t pgc_function_frame(struct gthread *t, uint32_t site, uint32_t cat);
void pgc_tables_write(struct gthread *t);
/* gecko_samples.c */
void pgc_write_sample(struct gthread *t, uint32_t stack, int64_t ns, int64_t cpu_delta_ns);
uint32_t pgc_trace_level(struct gthread *t, uint32_t site, uint32_t mask);
void pgc_trace_flush(struct gthread *t);
int pgc_trace_interval(struct gthread *t, uint32_t lid, uint32_t depth, int64_t s, int64_t e);
void pgc_stats_event(struct gthread *t, const struct pgr_record *r, int64_t b, int64_t e,
                     uint32_t name_frame_loc);
/* gecko_markers.c */
void pgc_marker_row(struct gthread *t, uint32_t name, int64_t start, int64_t end, int phase,
                    uint32_t cat, const struct pgc_out *payload);
int pgc_gecko_record(void *ctx, const struct pgr_record *r);
void pgc_user_marker(struct gthread *t, const struct pgr_record *r);
void pgc_unfinished_marker(struct gthread *t);
void pgc_end_markers(struct gthread *t);
/* gecko_counters.c */
void pgc_counter_row(void *ctx, uint32_t gi, int64_t ns, uint64_t count);
void pgc_counters_write(struct gecko *prof);
/* gecko_threads.c: the stream callbacks, and the thread of a process with none */
int pgc_gecko_begin_thread(void *ctx, uint32_t ti);
int pgc_gecko_end_thread(void *ctx, uint32_t ti);
void pgc_gecko_empty_thread(struct gecko *prof);
void pgc_gthread_free(struct gthread *t);

#endif /* PGC_GECKO_H */
