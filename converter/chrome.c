/* SPDX-License-Identifier: MIT */
/*
 * chrome.c — writes recordings as Chrome trace-event JSON (Perfetto UI, chrome://tracing):
 * complete ("X") events for events, trace-mode stopwatch intervals and interval markers;
 * instant ("i") events for instant markers, dropped records and a cut recording; counter
 * ("C") events with each group's share of a CPU per event; metadata ("M") events naming
 * each process and thread. Timestamps are microseconds since the earliest process start
 * among the inputs, so forked children line up with their parent.
 *
 * Slices on one thread track must nest (Perfetto drops or truncates the others). Function
 * intervals nest (the shadow stack); events do not nest with them (an implicit event begins
 * before its frame, a nested loop splits an event but not the frames around it) and user
 * markers nest with nothing. So each recorded thread has up to three tracks: its functions
 * (tid), its events (tid + EVENTS_TID) and its markers (tid + MARKERS_TID); Linux tids stay
 * below 2^22.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "perfgroup.h"
#include "pgconv.h"

#define EVENTS_TID (1u << 30)
#define MARKERS_TID (1u << 29)

struct chrome {
    const struct pgc_options *opt;
    struct pgc_out *out;
    struct pgc_file *f;
    struct pgc_clock clk;
    int64_t base_ns;   /* this process's start minus the earliest start */
    int64_t iv;        /* the counters' grid (--interval) */
    uint64_t max_rows; /* counter rows per group and thread (--max-samples) */
    int corrupt_said;  /* the file's CRC-failed chunk count written */
    int clipped_said;  /* the file's clipped record count written */
    int overhead_said; /* the file's runtime overhead totals written */
    uint64_t rows_left; /* counter rows for the whole output (pgc_row_budget) */
    uint32_t tid;
    const char *thread_name;
    int named_events, named_markers; /* the thread's extra tracks have their thread_name */
    /* per group of the file, written once: "CPU <name>" and "cpu_ms <name>" as JSON strings */
    char **cpu_name, **cpu_key;
    size_t *cpu_key_len;
    struct pgc_grid grid;  /* per-group CPU on the sample grid, as the Gecko counters */
    int64_t *pend;         /* per group: time of the latest row with CPU, INT64_MIN: none */
    /* per depth d: the extent of the intervals at depth d + 1 written since the last one at
     * d (its children: records come innermost first) */
    int64_t kid_lo[256], kid_hi[256];
    struct pgc_trace_self tself; /* the acquiring intervals' self times */
    uint64_t complete_tsc;      /* the thread's records complete from (pgc_thread_complete_from) */
    int64_t last_ns;
    char cat[256]; /* an interval slice's category */
    size_t cat_len;
    uint64_t nevents;
    uint64_t nflows;            /* flow ids given to tasks (task_flow) */
    uint64_t records_done, records_total;
};

static void us(struct pgc_out *o, int64_t ns)
{
    pgc_out_fixed(o, ns, 1000);
}

/* `cat`: a literal, or C->cat (an interval's group names, any bytes: escaped). */
static void head_tid(struct chrome *C, char ph, const char *name, size_t nlen, const char *cat,
                     uint32_t tid)
{
    struct pgc_out *o = C->out;
    PGC_SEP(o, C->nevents++, "\n{\"ph\":\"");
    pgc_out_raw(o, &ph, 1);
    PGC_LIT(o, "\",\"name\":");
    pgc_out_json_str(o, name, nlen);
    PGC_LIT(o, ",\"cat\":\"");
    if (cat == C->cat)
        pgc_out_json_chars(o, cat, C->cat_len);
    else
        pgc_out_str(o, cat);
    PGC_LIT(o, "\",\"pid\":");
    pgc_out_u64(o, C->f->pid);
    PGC_LIT(o, ",\"tid\":");
    pgc_out_u64(o, tid);
}

static void head(struct chrome *C, char ph, const char *name, size_t nlen, const char *cat)
{
    head_tid(C, ph, name, nlen, cat, C->tid);
}

static void span(struct chrome *C, int64_t s, int64_t e)
{
    struct pgc_out *o = C->out;
    PGC_LIT(o, ",\"ts\":");
    us(o, C->base_ns + s);
    PGC_LIT(o, ",\"dur\":");
    us(o, e > s ? e - s : 0);
    if (e > C->last_ns)
        C->last_ns = e;
}

static void instant(struct chrome *C, int64_t s)
{
    PGC_LIT(C->out, ",\"s\":\"t\",\"ts\":");
    us(C->out, C->base_ns + s);
}

static void meta_name(struct chrome *C, const char *what, const char *name, uint32_t tid)
{
    struct pgc_out *o = C->out;
    head_tid(C, 'M', what, strlen(what), "__metadata", tid);
    PGC_LIT(o, ",\"args\":{\"name\":");
    pgc_out_json_str(o, name, strlen(name));
    PGC_LIT(o, "}}");
}

/* The thread's events or markers track: named before its first slice. */
static uint32_t side_track(struct chrome *C, uint32_t off, int *named, const char *what)
{
    if (!*named) {
        char n[300];
        snprintf(n, sizeof(n), "%s %s", C->thread_name, what);
        meta_name(C, "thread_name", n, C->tid + off);
        *named = 1;
    }
    return C->tid + off;
}

/* A task's marker ("task", text "job for addon_a; queued on thread N", runtime/tasks.c): a
 * flow event pair from thread N's track to the task on this thread's markers track, both at
 * the task's begin (the capture's own time is not recorded: the arrow says who asked). */
static void task_flow(struct chrome *C, const struct pgr_record *r, int64_t s, uint32_t tid)
{
    static const char key[] = "; queued on thread ";
    const char *t = r->u.marker.text.ptr;
    size_t n = r->u.marker.text.len, k = sizeof key - 1;
    const char *at = NULL;
    for (size_t i = 0; i + k < n && !at; i++)
        if (!memcmp(t + i, key, k))
            at = t + i + k;
    uint64_t from = 0;
    for (; at && at < t + n && *at >= '0' && *at <= '9' && from < UINT32_MAX; at++)
        from = from * 10 + (uint64_t)(*at - '0');
    uint32_t idx;
    if (!from || from >= UINT32_MAX || !pgc_hash_get(&C->f->thread_ids, (uint32_t)from, &idx))
        return;
    struct pgc_out *o = C->out;
    uint64_t id = ++C->nflows;
    head_tid(C, 's', "task", 4, "task", C->f->threads[idx].tid);
    PGC_LIT(o, ",\"ts\":");
    us(o, C->base_ns + s);
    PGC_LIT(o, ",\"id\":");
    pgc_out_u64(o, id);
    PGC_LIT(o, "}");
    head_tid(C, 'f', "task", 4, "task", tid);
    PGC_LIT(o, ",\"ts\":");
    us(o, C->base_ns + s);
    PGC_LIT(o, ",\"bp\":\"e\",\"id\":");
    pgc_out_u64(o, id);
    PGC_LIT(o, "}");
}

/* A "C" event: the group's share of one CPU from `ns` on. One series per thread (the key is
 * the tid), so threads of a process do not overwrite each other. */
static void counter_c(struct chrome *C, uint32_t gi, int64_t ns, double share)
{
    struct pgc_out *o = C->out;
    PGC_SEP(o, C->nevents++, "\n{\"ph\":\"C\",\"name\":");
    pgc_out_str(o, C->cpu_name[gi]);
    PGC_LIT(o, ",\"pid\":");
    pgc_out_u64(o, C->f->pid);
    PGC_LIT(o, ",\"tid\":");
    pgc_out_u64(o, C->tid);
    PGC_LIT(o, ",\"ts\":");
    us(o, C->base_ns + ns);
    PGC_LIT(o, ",\"args\":{\"");
    pgc_out_u64(o, C->tid);
    PGC_LIT(o, "\":");
    /* nine decimals (the ns of a 1 s tick), without printf's cost */
    if (!(share > 0))
        share = 0;
    else if (share > 1e9)
        share = 1e9; /* cpugrid.c keeps it <= 1: a bound for the conversion, never reached */
    pgc_out_fixed(o, (int64_t)(share * 1e9 + 0.5), 1000000000);
    PGC_LIT(o, "}}");
}

/* A row of cpugrid.c (the CPU of the tick ending at ns) as counter steps: its share from the
 * tick's start, and 0 where the group stops. The same numbers as the Gecko counters. */
static void counter_row(void *ctx, uint32_t gi, int64_t ns, uint64_t cpu)
{
    struct chrome *C = ctx;
    int64_t iv = C->grid.iv;
    if (C->pend[gi] != INT64_MIN && (!cpu || C->pend[gi] != ns - iv))
        counter_c(C, gi, C->pend[gi], 0);
    C->pend[gi] = INT64_MIN;
    if (cpu) {
        counter_c(C, gi, ns - iv, (double)cpu / (double)iv);
        C->pend[gi] = ns;
    }
}

static int begin_thread(void *ctx, uint32_t ti)
{
    struct chrome *C = ctx;
    C->tid = C->f->threads[ti].tid ? C->f->threads[ti].tid : C->f->threads[ti].index;
    C->tid &= MARKERS_TID - 1;
    C->thread_name = C->f->threads[ti].name;
    C->named_events = C->named_markers = 0;
    C->last_ns = 0;
    pgc_clock_init(&C->clk, C->f);
    for (uint32_t i = 0; i <= C->f->ngroups; i++)
        C->pend[i] = INT64_MIN;
    for (uint32_t d = 0; d < 256; d++) {
        C->kid_lo[d] = INT64_MAX;
        C->kid_hi[d] = INT64_MIN;
    }
    pgc_trace_self_reset(&C->tself);
    C->complete_tsc = pgc_thread_complete_from(C->f, ti);
    pgc_grid_free(&C->grid);
    if (pgc_grid_init(&C->grid, C->f->ngroups, C->iv, C->max_rows, counter_row, C))
        return -ENOMEM;
    C->grid.budget = &C->rows_left;
    meta_name(C, "thread_name", C->thread_name, C->tid);
    return 0;
}

static int on_record(void *ctx, const struct pgr_record *r)
{
    struct chrome *C = ctx;
    struct pgc_out *o = C->out;
    struct pgc_file *f = C->f;
    if ((++C->records_done & 0xffff) == 0)
        pgc_progress(C->opt, C->records_done, C->records_total);
    switch (r->kind) {
    case PGF_REC_CLOCK:
        pgc_clock_update(&C->clk, f, r);
        break;
    case PGF_REC_EVENT: {
        const char *name = pgc_string_text(f, r->u.event.name_string_id);
        if (!name)
            name = r->u.event.flags & PGF_EVENT_F_IMPLICIT ? "(implicit event)" : "(event)";
        int64_t s = pgc_clock_ns(&C->clk, r->u.event.begin_tsc);
        int64_t e = pgc_clock_ns(&C->clk, r->u.event.end_tsc);
        uint32_t tid = side_track(C, EVENTS_TID, &C->named_events, "events");
        head_tid(C, 'X', name, strlen(name), "event", tid);
        span(C, s, e);
        PGC_LIT(o, ",\"args\":{\"cpu_ms\":");
        pgc_out_fixed(o, (int64_t)r->u.event.cpu_ns, 1000000);
        if (r->u.event.cpu_ns > (uint64_t)PGC_JANK_MS * 1000000)
            PGC_LIT(o, ",\"jank\":\"yes\""); /* CPU time per event, as everywhere */
        for (uint32_t i = 0; i < r->u.event.ngroups; i++) {
            uint32_t gi = pgc_group_index(f, r->u.event.groups[i].group_id);
            if (gi == UINT32_MAX)
                continue;
            PGC_LIT(o, ",");
            pgc_out_raw(o, C->cpu_key[gi], C->cpu_key_len[gi]);
            PGC_LIT(o, ":");
            pgc_out_fixed(o, (int64_t)r->u.event.groups[i].cpu_ns, 1000000);
            if (r->u.event.groups[i].has_self) { /* "self_ms <group>": cpu_key's name part */
                PGC_LIT(o, ",\"self_ms ");
                pgc_out_raw(o, C->cpu_key[gi] + 8, C->cpu_key_len[gi] - 8);
                PGC_LIT(o, ":");
                pgc_out_fixed(o, (int64_t)r->u.event.groups[i].self_ns, 1000000);
            }
        }
        PGC_LIT(o, "}}");
        for (uint32_t i = 0; i < r->u.event.ngroups; i++) /* may write counter rows */
            pgc_grid_add(&C->grid, pgc_group_index(f, r->u.event.groups[i].group_id),
                                s, e, r->u.event.groups[i].cpu_ns);
        break;
    }
    case PGF_REC_INTERVAL: {
        uint32_t si = pgc_site_index(f, r->u.interval.function_id);
        const struct pgc_site *st = si == UINT32_MAX ? NULL : &f->sites[si];
        const char *name = st ? st->display : "(unknown function)";
        /* a shared object's function: its object in the name (slices are aggregated by name:
         * every add-on's `addon_run` apart) */
        char nbuf[512];
        if (st && st->module[0]) {
            snprintf(nbuf, sizeof nbuf, "%s (%s)", st->display, st->lib);
            name = nbuf;
        }
        char *cat = C->cat;
        strcpy(cat, "perfgroup");
        size_t cl = 0;
        for (uint32_t b = 0; st && b < st->ngroups && b < 8; b++) {
            if (f->groups[st->groups[b]].kind == PERFGROUP_KIND_FUNCTION)
                continue; /* its own name again: the slice's name says it */
            int n = snprintf(cat + cl, sizeof(C->cat) - cl, "%s%s", cl ? "," : "",
                             f->groups[st->groups[b]].name);
            if (n > 0)
                cl += (size_t)n < sizeof(C->cat) - cl ? (size_t)n : sizeof(C->cat) - cl - 1;
        }
        /* the category is a raw string in head(): keep it JSON-safe */
        for (size_t i = 0; i < cl; i++)
            if (cat[i] == '"' || cat[i] == '\\' || (unsigned char)cat[i] < 0x20)
                cat[i] = '_';
        int64_t s = pgc_clock_ns(&C->clk, r->u.interval.start_tsc);
        /* the end through the same mapping: intervals ending together stay nested */
        int64_t e = pgc_clock_ns(&C->clk, r->u.interval.start_tsc + r->u.interval.duration);
        /* A child read before a CLOCK record (a new chunk) is mapped by the clock pair before
         * it, its parent by the next: on a busy machine the two can differ by a little, and a
         * child would stick out of its parent, which Perfetto cuts. The parent covers them. */
        uint32_t d = r->u.interval.depth;
        int64_t self = pgc_trace_self_end(&C->tself, d, r->u.interval.group_mask != 0, e - s);
        if (C->kid_lo[d] < s)
            s = C->kid_lo[d];
        if (C->kid_hi[d] > e)
            e = C->kid_hi[d];
        C->kid_lo[d] = INT64_MAX;
        C->kid_hi[d] = INT64_MIN;
        if (d > 0) {
            if (s < C->kid_lo[d - 1])
                C->kid_lo[d - 1] = s;
            if (e > C->kid_hi[d - 1])
                C->kid_hi[d - 1] = e;
        }
        C->cat_len = cl ? cl : strlen(cat);
        head(C, 'X', name, strlen(name), cat);
        span(C, s, e);
        if (r->u.interval.group_mask) { /* the depth is the nesting; only acquisitions are news */
            PGC_LIT(o, ",\"args\":{\"acquired\":true");
            /* less the acquiring intervals nested directly; unknown for one begun before the
             * thread's records are complete (docs/converter.md, "Recycled records") */
            if (r->u.interval.start_tsc >= C->complete_tsc) {
                PGC_LIT(o, ",\"self_ms\":");
                pgc_out_fixed(o, self, 1000000);
            }
            PGC_LIT(o, "}");
        }
        PGC_LIT(o, "}");
        break;
    }
    case PGF_REC_MARKER: {
        const char *name = pgc_string_text(f, r->u.marker.name_string_id);
        if (!name)
            name = "(marker)";
        int64_t s = pgc_clock_ns(&C->clk, r->u.marker.start_tsc);
        uint32_t tid = side_track(C, MARKERS_TID, &C->named_markers, "markers");
        if (r->u.marker.end_tsc == r->u.marker.start_tsc) {
            head_tid(C, 'i', name, strlen(name), "marker", tid);
            instant(C, s);
        } else {
            head_tid(C, 'X', name, strlen(name), "marker", tid);
            span(C, s, pgc_clock_ns(&C->clk, r->u.marker.end_tsc));
        }
        PGC_LIT(o, ",\"args\":{\"text\":");
        pgc_out_json_str(o, r->u.marker.text.ptr, r->u.marker.text.len);
        PGC_LIT(o, "}}");
        if (!strcmp(name, "task"))
            task_flow(C, r, s, tid);
        break;
    }
    case PGF_REC_DROPPED:
        head(C, 'i', "Records dropped", 15, "perfgroup");
        instant(C, C->last_ns);
        PGC_LIT(o, ",\"args\":{\"records\":");
        pgc_out_u64(o, r->u.dropped.records);
        PGC_LIT(o, ",\"bytes\":");
        pgc_out_u64(o, r->u.dropped.bytes);
        PGC_LIT(o, "}}");
        break;
    default:
        break;
    }
    return o->err ? -1 : 0;
}

static int end_thread(void *ctx, uint32_t ti)
{
    struct chrome *C = ctx;
    (void)ti;
    pgc_grid_finish(&C->grid);
    if (C->grid.dropped)
        fprintf(stderr, "perfgroup-convert: warning: %s: thread %s: CPU counters stopped at "
                "%" PRIu64 " rows per group (--max-samples) or at the output's bound; %" PRIu64
                " ns of CPU not shown in them\n", C->f->path, C->thread_name, C->grid.max_rows,
                C->grid.dropped);
    for (uint32_t i = 0; i <= C->f->ngroups; i++)
        if (C->pend[i] != INT64_MIN)
            counter_c(C, i, C->pend[i], 0);
    if (C->f->counts.chunks_corrupt && !C->corrupt_said) { /* once per file, on the thread it ends */
        C->corrupt_said = 1;
        head(C, 'i', "Chunks corrupt", 14, "perfgroup");
        instant(C, C->last_ns);
        PGC_LIT(C->out, ",\"args\":{\"chunks\":");
        pgc_out_u64(C->out, C->f->counts.chunks_corrupt);
        PGC_LIT(C->out, ",\"reason\":\"sealed chunks whose CRC-32C did not match: skipped\"}}");
    }
    struct pgc_overhead ov;
    pgc_overhead_of(C->f, &ov);
    if (ov.any && C->f->streamed && !C->overhead_said) { /* once, at the file's end */
        C->overhead_said = 1;
        head(C, 'i', "Runtime overhead (process total)", 32, "perfgroup");
        instant(C, C->last_ns);
        PGC_LIT(C->out, ",\"args\":");
        pgc_out_overhead_json(C->out, &ov);
        PGC_LIT(C->out, "}");
    }
    if (C->f->counts.clipped && C->f->streamed && !C->clipped_said) { /* once, at the file's end */
        C->clipped_said = 1;
        head(C, 'i', "Records clipped", 15, "perfgroup");
        instant(C, C->last_ns);
        PGC_LIT(C->out, ",\"args\":{\"records\":");
        pgc_out_u64(C->out, C->f->counts.clipped);
        PGC_LIT(C->out, ",\"first_offset\":");
        pgc_out_u64(C->out, C->f->counts.clipped_offset);
        PGC_LIT(C->out, ",\"reason\":\"record times beyond the file's own clocks (damaged): "
                        "clipped to them\"}}");
    }
    if (C->f->not_closed) {
        head(C, 'i', "Recording cut", 13, "perfgroup");
        instant(C, C->last_ns);
        PGC_LIT(C->out, ",\"args\":{\"reason\":\"the program did not close the recording\"}}");
    }
    return C->out->err ? -1 : 0;
}

/* The events the file still has open (their slots, not stale: docs/file-format.md "Open
 * events"), once the file is streamed: on their thread's events track, from their begin to
 * the slot's last refresh, args.unfinished, the CPU so far and the groups so far. A thread
 * that left no record gets its events track named here. */
static void unfinished_events(struct chrome *C)
{
    const struct pgc_file *f = C->f;
    struct pgc_out *o = C->out;
    struct pgc_clock clk;
    pgc_clock_init(&clk, f);
    for (size_t i = 0; i < f->nunfinished; i++) {
        const struct pgc_unfinished *u = &f->unfinished[i];
        uint32_t tid = (u->tid ? u->tid : u->thread) & (MARKERS_TID - 1);
        char n[300], gl[1024];
        snprintf(n, sizeof n, "%s events", u->thread_name);
        meta_name(C, "thread_name", n, tid + EVENTS_TID);
        head_tid(C, 'X', u->event, strlen(u->event), "event", tid + EVENTS_TID);
        int64_t b = pgc_clock_ns(&clk, u->slot.begin_tsc);
        span(C, b, b + (int64_t)u->wall_ns);
        PGC_LIT(o, ",\"args\":{\"unfinished\":true,\"cpu_ms\":");
        if (u->cpu_known)
            pgc_out_fixed(o, (int64_t)u->cpu_ns, 1000000);
        else
            PGC_LIT(o, "null");
        if (u->cpu_ns > (uint64_t)PGC_JANK_MS * 1000000)
            PGC_LIT(o, ",\"jank\":\"yes\"");
        size_t gn = pgc_open_groups(f, &u->slot, gl, sizeof gl);
        PGC_LIT(o, ",\"groups\":");
        pgc_out_json_str(o, gl, gn);
        PGC_LIT(o, ",\"reason\":\"still open when the file was last written (crash, _exit, "
                   "kill or hang)\"}}");
    }
}

/* "<prefix><group name>" as a JSON string, once per group of the file. */
static char **group_strings(const struct pgc_file *f, const char *prefix)
{
    char **v = calloc(f->ngroups + 1, sizeof(*v));
    struct pgc_out *b = malloc(sizeof(*b));
    for (uint32_t i = 0; v && b && i < f->ngroups; i++) {
        char text[300];
        snprintf(text, sizeof(text), "%s%s", prefix, f->groups[i].name);
        b->f = NULL;
        b->err = 0;
        b->len = 0;
        pgc_out_json_str(b, text, strlen(text));
        if (!(v[i] = malloc(b->len + 1)))
            break;
        memcpy(v[i], b->buf, b->len);
        v[i][b->len] = '\0';
    }
    free(b);
    return v;
}

static void free_strings(char **v, uint32_t n)
{
    for (uint32_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

int pgc_chrome_write(struct pgc_file *files, size_t nfiles, const struct pgc_options *opt,
                     struct pgc_out *out, struct pgc_error *err)
{
    static const struct pgc_stream_cb cb = {begin_thread, on_record, end_thread};
    struct chrome C;
    memset(&C, 0, sizeof(C));
    C.opt = opt;
    C.out = out;
    C.iv = opt->interval_ns > 0 ? opt->interval_ns : 1000000;
    C.max_rows = opt->max_samples;
    C.rows_left = pgc_row_budget(files, nfiles, opt);
    int64_t base = INT64_MAX;
    for (size_t i = 0; i < nfiles; i++) {
        C.records_total += files[i].records_total;
        if (files[i].start_realtime_ns < base)
            base = files[i].start_realtime_ns;
    }
    /* what the recordings lost (their headers' totals), so the trace never hides it */
    uint64_t dropped = 0, recycled = 0;
    for (size_t i = 0; i < nfiles; i++) {
        dropped += files[i].hdr.records_dropped;
        recycled += files[i].hdr.chunks_recycled;
    }
    PGC_LIT(out, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"perfgroup-convert\"");
    if (dropped || recycled) {
        PGC_LIT(out, ",\"recordsDropped\":");
        pgc_out_u64(out, dropped);
        PGC_LIT(out, ",\"chunksRecycled\":");
        pgc_out_u64(out, recycled);
    }
    /* the headers' overhead totals (the records' sums, when a writer kept none, come as an
     * instant at each file's end) */
    struct pgc_overhead all = {0};
    for (size_t i = 0; i < nfiles; i++) {
        struct pgc_overhead ov;
        pgc_overhead_of(&files[i], &ov);
        all.refused += ov.refused, all.clamped += ov.clamped; /* the header's, always */
        if (!ov.from_header)
            continue;
        all.commit_ns += ov.commit_ns, all.commits += ov.commits;
        all.slow_paths += ov.slow_paths, all.resyncs += ov.resyncs, all.dropped += ov.dropped;
        all.from_header = 1;
    }
    if (all.from_header || all.refused || all.clamped) {
        PGC_LIT(out, ",\"runtimeOverhead\":");
        pgc_out_overhead_json(out, &all);
    }
    /* the whole-run totals of each file that has them (format.h): never recycled */
    int any_tot = 0;
    for (size_t i = 0; i < nfiles; i++) {
        const struct pgc_file *f = &files[i];
        if (!f->has_totals)
            continue;
        if (any_tot)
            PGC_LIT(out, ",{\"pid\":");
        else
            PGC_LIT(out, ",\"wholeRunTotals\":[{\"pid\":");
        any_tot = 1;
        pgc_out_u64(out, f->pid);
        PGC_LIT(out, ",\"cpu_ms\":");
        pgc_out_fixed(out, (int64_t)(f->tot_cpu_ns > INT64_MAX ? INT64_MAX : f->tot_cpu_ns), 1000000);
        PGC_LIT(out, ",\"events\":");
        pgc_out_u64(out, f->tot_events);
        PGC_LIT(out, ",\"groups\":[");
        for (uint32_t k = 0; k < f->ngtot; k++) {
            const struct pgc_gtotal *gt = &f->gtot[k];
            PGC_SEP(out, k, "{\"group\":");
            pgc_out_json_str(out, gt->name, strlen(gt->name));
            PGC_LIT(out, ",\"cpu_ms\":");
            pgc_out_fixed(out, (int64_t)gt->t.cpu_ns, 1000000);
            PGC_LIT(out, ",\"wall_ms\":");
            pgc_out_fixed(out, (int64_t)gt->t.wall_ns, 1000000);
            PGC_LIT(out, ",\"activations\":");
            pgc_out_u64(out, gt->t.activations);
            PGC_LIT(out, ",\"events\":");
            pgc_out_u64(out, gt->t.events);
            PGC_LIT(out, "}");
        }
        PGC_LIT(out, "]}");
    }
    if (any_tot)
        PGC_LIT(out, "]");
    PGC_LIT(out, "},\"traceEvents\":[");
    int rc = 0;
    for (size_t i = 0; i < nfiles && !rc; i++) {
        C.f = &files[i];
        /* within 2^61 ns like every other time (damaged start times stay defined) */
        int64_t off;
        if (__builtin_sub_overflow(files[i].start_realtime_ns, base, &off) || off > (1ll << 61))
            off = 1ll << 61;
        C.base_ns = off;
        C.tid = files[i].pid;
        char pname[400];
        pgc_process_name(pname, sizeof(pname), files, nfiles, &files[i]);
        meta_name(&C, "process_name", pname, files[i].pid);
        if (pgc_file_unpark(&files[i], err)) {
            rc = -1;
            break;
        }
        C.corrupt_said = C.clipped_said = C.overhead_said = 0;
        C.cpu_name = group_strings(&files[i], "CPU ");
        C.cpu_key = group_strings(&files[i], "cpu_ms "); /* 8 bytes before the name: '"cpu_ms ' */
        C.pend = malloc((files[i].ngroups + 1) * sizeof(*C.pend));
        C.cpu_key_len = malloc((files[i].ngroups + 1) * sizeof(*C.cpu_key_len));
        int ok = C.cpu_name && C.cpu_key && C.pend && C.cpu_key_len;
        for (uint32_t g = 0; ok && g < files[i].ngroups; g++)
            if ((ok = C.cpu_name[g] && C.cpu_key[g]))
                C.cpu_key_len[g] = strlen(C.cpu_key[g]);
        if (!ok && !err->set) {
            err->set = 1;
            snprintf(err->msg, sizeof(err->msg), "%s: byte 0: out of memory", files[i].path);
        }
        rc = ok ? pgc_file_stream(&files[i], &cb, &C, err) : -1;
        if (!rc)
            unfinished_events(&C);
        free_strings(C.cpu_name, files[i].ngroups);
        free_strings(C.cpu_key, files[i].ngroups);
        free(C.pend);
        free(C.cpu_key_len);
        pgc_grid_free(&C.grid);
        pgc_file_repark(&files[i]);
    }
    PGC_LIT(out, "]}\n");
    pgc_progress(opt, C.records_total, C.records_total);
    if (rc)
        return -1;
    pgc_out_flush(out);
    return out->err ? -out->err : 0;
}
