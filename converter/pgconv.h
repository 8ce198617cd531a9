/* SPDX-License-Identifier: MIT */
/*
 * pgconv.h — perfgroup-convert's internal interfaces over the shared reading code
 * (shared/pgshared.h): the options, the output bound, the three sinks (Gecko, summary,
 * Chrome), the CPU grid and what every output says beside its data (report.c). Internal
 * prefix: pgc_.
 *
 * Flow: main.c opens every input (input.c validates the whole file first), then for each
 * file and each of its threads streams that thread's records, oldest chunk first, into the
 * selected sink. A sink keeps only per-thread state that grows with unique strings, frames
 * and stacks; everything that grows with records goes straight to the output or to a
 * temporary spill file.
 */
#ifndef PGCONV_H
#define PGCONV_H

#include "pgshared.h"

/* ---- Conversion ---------------------------------------------------------------------- */
/* The output bound (docs/converter.md, "Bounds"): whatever an input claims, the rows that
 * grow with time — Gecko samples, and counter rows (Gecko counters, Chrome "C" events) —
 * number at most PGC_ROWS_BASE + PGC_ROWS_PER_BYTE * N each over the whole output, for
 * inputs of N bytes in all; everything else grows with records or definitions. Given
 * explicitly, --max-samples replaces it (a per-thread limit only). */
#define PGC_ROWS_BASE (1u << 20)
#define PGC_ROWS_PER_BYTE 8u
struct pgc_options;
uint64_t pgc_row_budget(const struct pgc_file *files, size_t nfiles,
                        const struct pgc_options *opt);

struct pgc_options {
    int64_t interval_ns;    /* sample interval (default 1 ms) */
    uint64_t max_samples;   /* per thread (default 100 M: 27 h at 1 ms); 0 = default */
    int no_interval_markers; /* Gecko: no marker per trace interval (smaller profiles) */
    int progress;           /* print a progress line on stderr */
    int summary_json;
    int summary_by_self;    /* --sort self: rows by self time (those of unknown self last) */
};

/* Each writes the whole output for the files to out (already open). They return 0, -1 with
 * err set for bad input, or -errno for an output failure. */
int pgc_gecko_write(struct pgc_file *files, size_t nfiles, const struct pgc_options *opt,
                    struct pgc_out *out, struct pgc_error *err);
int pgc_summary_write(struct pgc_file *files, size_t nfiles, const struct pgc_options *opt,
                      struct pgc_out *out, struct pgc_error *err);
int pgc_chrome_write(struct pgc_file *files, size_t nfiles, const struct pgc_options *opt,
                     struct pgc_out *out, struct pgc_error *err);

/* "program", or "program (exec'd by previous)" for an image exec()ed in a process with a
 * recording that started before it (gecko.c; the Chrome output too). The viewers show the
 * pid beside it. */
void pgc_process_name(char *buf, size_t n, const struct pgc_file *files, size_t nfiles,
                      const struct pgc_file *f);

/* Trace mode: each acquiring interval's self time (traceself.c, docs/converter.md): its
 * length less the acquiring intervals nested directly in it. One per thread, zeroed (or
 * pgc_trace_self_reset) at the thread's start; fed every interval record in file order. */
#define PGC_TRACE_DEPTHS 256 /* a record's depth is a u8 */
struct pgc_trace_self {
    int64_t inner[PGC_TRACE_DEPTHS]; /* per depth d: what the intervals nested in the one
                                      * open at d took (acquiring ones: their length) */
    uint32_t top;                    /* inner[d] == 0 for every d >= top */
};
void pgc_trace_self_reset(struct pgc_trace_self *ts);
/* The interval at `depth` of `len_ns` ended; `acquired`: its group_mask is not 0. Its self
 * time in ns, or -1 for an interval that acquired nothing (it has none of its own). */
int64_t pgc_trace_self_end(struct pgc_trace_self *ts, uint32_t depth, int acquired, int64_t len_ns);

/* Per-group CPU on the sample grid (cpugrid.c): the Gecko counters and the Chrome "C"
 * events. emit(ctx, group, time_ns, ns) gets each row: the CPU used in the tick ending at
 * time_ns (0 for a row that closes an idle stretch), in time order per group. */
typedef void (*pgc_grid_emit)(void *ctx, uint32_t group, int64_t time_ns, uint64_t cpu_ns);
struct pgc_grid {
    int64_t iv;
    uint32_t n;
    pgc_grid_emit emit;
    void *ctx;
    int64_t *bucket;   /* per group: the open tick, INT64_MIN: none */
    uint64_t *cpu;     /* its CPU */
    int64_t *emitted;  /* the tick of the latest row, INT64_MIN: none */
    uint64_t *rows;    /* rows written per group */
    uint64_t max_rows; /* per group (the per-thread sample budget): the work and output of a
                        * grid are bounded by it whatever times and CPU an input claims */
    uint64_t *budget;  /* rows left for the whole output (shared by every grid), or NULL */
    uint64_t dropped;  /* ns of CPU not shown because a group reached max_rows */
};
/* Groups 0..ngroups (one more for callers' own use), at most max_rows rows per group (0: the
 * default, 100 M). Returns 0 or -1 (no memory). */
int pgc_grid_init(struct pgc_grid *grid, uint32_t ngroups, int64_t iv, uint64_t max_rows,
                  pgc_grid_emit emit, void *ctx);
/* A group used `cpu` ns over [b, e) (ns): spread over the ticks it covers. */
void pgc_grid_add(struct pgc_grid *grid, uint32_t group, int64_t b, int64_t e, uint64_t cpu);
/* The thread's end: writes what is open; returns the latest row's time (INT64_MIN: none). */
int64_t pgc_grid_finish(struct pgc_grid *grid);
void pgc_grid_free(struct pgc_grid *grid);

/* Progress reporting (stderr, only when enabled). */
void pgc_progress(const struct pgc_options *opt, uint64_t done, uint64_t total);

/* ---- What the outputs say beside their data (report.c) ---------------------------- */
/* "N commits in X ms, S slow paths, R resyncs, D pairs not counted, F calls refused,
 * C events clamped" into buf */
void pgc_overhead_text(char *buf, size_t n, const struct pgc_overhead *o);
struct pgc_out;
/* {"commit_ms":…,"commits":…,"slow_paths":…,"resyncs":…,"pairs_not_counted":…,
 *  "calls_refused":…,"events_clamped":…} */
void pgc_out_overhead_json(struct pgc_out *out, const struct pgc_overhead *o);

/* "CPU X ms in N events; a X ms, b Y ms, … and K more groups" of f's whole-run totals, the
 * `top` heaviest groups named, into b[n] (names as the file has them: the caller escapes). */
void pgc_totals_text(char *b, size_t n, const struct pgc_file *f, unsigned top);

#endif /* PGCONV_H */
