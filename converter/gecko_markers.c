/* SPDX-License-Identifier: MIT */
/*
 * gecko_markers.c — a Gecko thread's markers, straight to the output: the payload writer, each
 * record as its marker (events, group intervals, user markers, drops, the runtime's overhead),
 * the event a cut recording left open, and the closing markers a table lists (what was lost,
 * the process's totals).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gecko.h"

/* A row of the markers table, straight to the output; `payload` is the data object. */
void pgc_marker_row(struct gthread *t, uint32_t name, int64_t start, int64_t end, int phase,
                    uint32_t cat, const struct pgc_out *payload)
{
    struct pgc_out *m = t->prof->out;
    if (name == UNKNOWN)
        return;
    PGC_SEP(m, t->nmarkers, "\n[");
    pgc_out_u64(m, name);
    PGC_LIT(m, ",");
    out_ms(m, start);
    PGC_LIT(m, ",");
    if (phase == 0)
        PGC_LIT(m, "null");
    else
        out_ms(m, end < start ? start : end);
    PGC_LIT(m, ",");
    pgc_out_u64(m, (uint64_t)phase);
    PGC_LIT(m, ",");
    pgc_out_u64(m, cat);
    PGC_LIT(m, ",");
    pgc_out_raw(m, payload->buf, payload->len);
    PGC_LIT(m, "]");
    t->nmarkers++;
}

/* A small payload builder on the stack (a pgc_out used only as a buffer: f is NULL and it
 * is never flushed): {"type":"...", ...}. Overlong payloads are cut at a field boundary,
 * never mid-token. */
static void pl_begin(struct pgc_out *p, const char *type)
{
    p->f = NULL;
    p->len = 0;
    p->err = 0;
    PGC_LIT(p, "{\"type\":\"");
    pgc_out_str(p, type);
    PGC_LIT(p, "\"");
}

static int pl_room(struct pgc_out *p, size_t n)
{
    return p->len + n + 8 < sizeof(p->buf);
}

static void pl_key(struct pgc_out *p, const char *k)
{
    PGC_LIT(p, ",\"");
    pgc_out_str(p, k);
    PGC_LIT(p, "\":");
}

static void pl_str(struct pgc_out *p, const char *k, const char *v, size_t n)
{
    if (n > 4096)
        n = 4096;
    if (!pl_room(p, n * 6 + strlen(k) + 8))
        return;
    pl_key(p, k);
    pgc_out_json_str(p, v, n);
}

static void pl_ms(struct pgc_out *p, const char *k, int64_t ns)
{
    if (!pl_room(p, 64))
        return;
    pl_key(p, k);
    out_ms(p, ns);
}

static void pl_u64(struct pgc_out *p, const char *k, uint64_t v)
{
    if (!pl_room(p, 64))
        return;
    pl_key(p, k);
    pgc_out_u64(p, v);
}

static void pl_end(struct pgc_out *p)
{
    PGC_LIT(p, "}");
}

/* An event's [begin, end] in ns, ordered and bounded, seen by the thread's time range. */
static void event_span(struct gthread *t, uint64_t btsc, uint64_t etsc, int64_t *bp, int64_t *ep)
{
    int64_t b = tns(t, btsc), e = tns(t, etsc);
    if (e < b)
        e = b;
    if (e - b > t->prof->max_span_ns)
        e = b + t->prof->max_span_ns;
    seen(t, b);
    seen(t, e);
    *bp = b, *ep = e;
}

/* One "name 1.25 ms" of an event's list of groups (at most 64 named; the time to the us). */
static void pl_group_ms(struct pgc_out *pl, uint32_t *listed, const char *gn, uint64_t ns)
{
    size_t gnl = strlen(gn);
    if (*listed >= 64 || !pl_room(pl, gnl * 6 + 64))
        return;
    if ((*listed)++)
        PGC_LIT(pl, ", ");
    pgc_out_json_chars(pl, gn, gnl);
    PGC_LIT(pl, " ");
    pgc_out_fixed(pl, (int64_t)(ns / 1000 * 1000), 1000000);
    PGC_LIT(pl, " ms");
}

/* "self": each group's self time in the event (docs/accounting.md "Self time"), in the order
 * of "groups"; only from records of writers with self time (in both modes), else absent. */
static void event_self(struct gthread *t, struct pgc_out *pl, const struct pgr_record *r)
{
    uint32_t listed = 0, known = 0;
    for (uint32_t i = 0; i < r->u.event.ngroups; i++)
        known += r->u.event.groups[i].has_self;
    if (!known)
        return;
    pl_key(pl, "self");
    PGC_LIT(pl, "\"");
    for (uint32_t i = 0; i < r->u.event.ngroups; i++) {
        const struct pgr_event_group *eg = &r->u.event.groups[i];
        uint32_t gi = pgc_group_index(t->f, eg->group_id);
        if (gi < t->f->ngroups && eg->has_self)
            pl_group_ms(pl, &listed, t->f->groups[gi].name, eg->self_ns);
    }
    PGC_LIT(pl, "\"");
}

static void event_record(struct gthread *t, const struct pgr_record *r)
{
    int64_t b, e;
    event_span(t, r->u.event.begin_tsc, r->u.event.end_tsc, &b, &e);
    uint32_t loc;
    if (t->last_ev_name == r->u.event.name_string_id + 1ull && r->u.event.name_string_id) {
        loc = t->last_ev_loc; /* event names repeat: skip the lookups */
    } else {
        const char *name = pgc_string_text(t->f, r->u.event.name_string_id);
        if (!name)
            name = r->u.event.flags & PGF_EVENT_F_IMPLICIT ? "(implicit event)" : "(event)";
        loc = pgc_intern_string(t, name, strlen(name));
        t->last_ev_name = r->u.event.name_string_id + 1ull;
        t->last_ev_loc = loc;
    }
    if (t->f->mode != PGF_MODE_TRACE)
        pgc_stats_event(t, r, b, e, loc);

    /* counters and the marker payload */
    struct pgc_out pl;
    pl_begin(&pl, "PerfgroupEvent");
    pl_ms(&pl, "cpu", (int64_t)r->u.event.cpu_ns);
    pl_ms(&pl, "wall", e - b);
    uint64_t best = 0;
    uint32_t best_cat = CAT_EVENT;
    /* "groups": "name 1.25 ms, other 0.5 ms", written straight into the payload */
    pl_key(&pl, "groups");
    PGC_LIT(&pl, "\"");
    uint32_t listed = 0;
    for (uint32_t i = 0; i < r->u.event.ngroups; i++) {
        const struct pgr_event_group *eg = &r->u.event.groups[i];
        uint32_t gi = pgc_group_index(t->f, eg->group_id);
        if (gi >= t->f->ngroups)
            continue;
        t->prof->group_cpu[gi] += eg->cpu_ns;
        pgc_grid_add(&t->grid, gi, b, e, eg->cpu_ns);
        if (t->f->groups[gi].kind != 0 && eg->cpu_ns >= best) {
            best = eg->cpu_ns;
            best_cat = pgc_group_category(t, gi);
        }
        pl_group_ms(&pl, &listed, t->f->groups[gi].name, eg->cpu_ns);
    }
    /* groups not named here: past 64, and those the record could not list (groups_more) */
    uint64_t unnamed = (uint64_t)r->u.event.ngroups - listed + r->u.event.groups_more;
    if (unnamed && pl_room(&pl, 64)) {
        if (listed)
            PGC_LIT(&pl, ", and ");
        pgc_out_u64(&pl, unnamed);
        PGC_LIT(&pl, " more groups");
    }
    PGC_LIT(&pl, "\"");
    event_self(t, &pl, r);
    int jank = r->u.event.cpu_ns > (uint64_t)PGC_JANK_MS * 1000000; /* CPU, as everywhere */
    pl_str(&pl, "jank", jank ? "yes" : "no", jank ? 3 : 2);
    static const char *const flag_text[8] = {
        "", "implicit", "discarded", "implicit discarded", "nested-loop", "implicit nested-loop",
        "discarded nested-loop", "implicit discarded nested-loop"};
    const char *flags = flag_text[r->u.event.flags & 7];
    pl_str(&pl, "flags", flags, strlen(flags));
    pl_end(&pl);
    pgc_marker_row(t, loc, b, e, 1, best_cat, &pl);
}

static void interval_record(struct gthread *t, const struct pgr_record *r)
{
    int64_t s = tns(t, r->u.interval.start_tsc);
    /* the end through the same mapping as the start: nested intervals ending together stay
     * nested to the nanosecond (Chrome output, the same ends) */
    int64_t d = pgc_clock_ns(&t->clk, r->u.interval.start_tsc + r->u.interval.duration) - s;
    if (d < 0 || d > t->prof->max_span_ns) /* a duration no sample budget covers: damaged input */
        d = t->prof->max_span_ns;
    int64_t e = s + d;
    seen(t, s);
    seen(t, e);
    int64_t self = pgc_trace_self_end(&t->tself, r->u.interval.depth, r->u.interval.group_mask != 0, d);
    /* begun before the thread's records are complete: its samples start there, its self
     * time is unknown (docs/converter.md, "Recycled records") */
    int64_t from = s;
    if (r->u.interval.start_tsc < t->complete_tsc) {
        self = -1;
        from = tns(t, t->complete_tsc);
        if (from > e)
            from = e;
    }
    uint32_t site = pgc_site_index(t->f, r->u.interval.function_id);
    uint32_t lid = pgc_trace_level(t, site, r->u.interval.group_mask);
    if ((lid == UNKNOWN || pgc_trace_interval(t, lid, r->u.interval.depth, from, e)) && !t->prof->out->err)
        t->prof->out->err = ENOMEM;
    if (!r->u.interval.group_mask || site == UNKNOWN || lid == UNKNOWN || t->prof->opt->no_interval_markers)
        return;
    /* a group interval: one marker named after the group(s) the pair acquired */
    struct level *l = &t->levels[lid];
    const struct pgc_site *st = &t->f->sites[site];
    if (!l->mready) {
        char name[256];
        size_t nl = 0;
        for (uint32_t b = 0; b < st->ngroups && b < 8; b++) {
            if (!(r->u.interval.group_mask & (1u << b)))
                continue;
            const char *gn = t->f->groups[st->groups[b]].name;
            if (nl == 0)
                l->mcat = pgc_group_category(t, st->groups[b]);
            int n = snprintf(name + nl, sizeof(name) - nl, "%s%s", nl ? "+" : "", gn);
            if (n > 0)
                nl += (size_t)n < sizeof(name) - nl ? (size_t)n : sizeof(name) - nl - 1;
        }
        l->mname = nl ? pgc_intern_string(t, name, nl) : UNKNOWN;
        l->fn = pgc_intern_string(t, st->display, strlen(st->display));
        l->file = pgc_intern_string(t, st->file, strlen(st->file));
        l->lib = pgc_intern_string(t, st->lib, strlen(st->lib));
        l->mready = 1;
    }
    if (l->mname == UNKNOWN || l->fn == UNKNOWN || l->file == UNKNOWN || l->lib == UNKNOWN)
        return;
    struct pgc_out pl;
    pl_begin(&pl, "PerfgroupInterval");
    pl_u64(&pl, "function", l->fn);
    pl_u64(&pl, "lib", l->lib);
    pl_u64(&pl, "file", l->file);
    pl_u64(&pl, "line", st->line);
    pl_u64(&pl, "depth", r->u.interval.depth);
    if (self >= 0) /* its length less the acquiring intervals nested directly */
        pl_ms(&pl, "self", self);
    pl_end(&pl);
    pgc_marker_row(t, l->mname, s, e, 1, l->mcat, &pl);
}

void pgc_user_marker(struct gthread *t, const struct pgr_record *r)
{
    int64_t s = tns(t, r->u.marker.start_tsc), e = tns(t, r->u.marker.end_tsc);
    seen(t, s);
    if (e > s)
        seen(t, e);
    const char *name = pgc_string_text(t->f, r->u.marker.name_string_id);
    if (!name)
        name = "(marker)";
    struct pgc_out pl;
    pl_begin(&pl, "PerfgroupMarker");
    pl_str(&pl, "text", r->u.marker.text.ptr, r->u.marker.text.len);
    pl_end(&pl);
    int instant = r->u.marker.end_tsc == r->u.marker.start_tsc || e < s;
    pgc_marker_row(t, pgc_intern_string(t, name, strlen(name)), s, e, instant ? 0 : 1, CAT_OTHER, &pl);
}

static void dropped_marker(struct gthread *t, const struct pgr_record *r)
{
    struct pgc_out pl;
    pl_begin(&pl, "PerfgroupDropped");
    pl_u64(&pl, "records", r->u.dropped.records);
    pl_u64(&pl, "bytes", r->u.dropped.bytes);
    pl_u64(&pl, "chunks", r->u.dropped.chunks);
    pl_end(&pl);
    pgc_marker_row(t, pgc_intern_string(t, "Records dropped", 15), t->last_ns, 0, 0, CAT_OTHER, &pl);
}

static void overhead_marker(struct gthread *t, const struct pgr_record *r)
{
    struct pgc_out pl;
    pl_begin(&pl, "PerfgroupOverhead");
    pl_ms(&pl, "commit", (int64_t)r->u.overhead.commit_ns);
    pl_u64(&pl, "commits", r->u.overhead.commits);
    pl_u64(&pl, "slowPaths", r->u.overhead.slow_paths);
    pl_u64(&pl, "resyncs", r->u.overhead.resyncs);
    pl_u64(&pl, "dropped", r->u.overhead.dropped);
    pl_end(&pl);
    pgc_marker_row(t, pgc_intern_string(t, "Runtime overhead", 16), t->last_ns, 0, 0, CAT_OTHER, &pl);
}

static void clock_record(struct gthread *t, const struct pgr_record *r)
{
    pgc_clock_update(&t->clk, t->f, r);
}

int pgc_gecko_record(void *ctx, const struct pgr_record *r)
{
    struct gecko *prof = ctx;
    struct gthread *t = prof->t;
    if (prof->skip)
        return 0;
    switch (r->kind) {
    case PGF_REC_CLOCK: clock_record(t, r); break;
    case PGF_REC_EVENT: event_record(t, r); break;
    case PGF_REC_INTERVAL: interval_record(t, r); break;
    case PGF_REC_MARKER: pgc_user_marker(t, r); break;
    case PGF_REC_DROPPED: dropped_marker(t, r); break;
    case PGF_REC_OVERHEAD: overhead_marker(t, r); break;
    case PGF_REC_THREAD_END: seen(t, tns(t, r->u.thread_end.end_tsc)); break;
    default: break;
    }
    if ((++prof->records_done & 0xffff) == 0)
        pgc_progress(prof->opt, prof->records_done, prof->records_total);
    return prof->out->err ? -1 : 0;
}

/* The thread's event the file still has open (its slot, not stale: docs/file-format.md "Open
 * events"): a PerfgroupEvent marker from its begin to the slot's last refresh, flags
 * "unfinished", its groups so far without a CPU split (the slot has none). Threads stream whole (the reader orders chunks by
 * thread), so the slot's staleness is known when the thread ends. */
void pgc_unfinished_marker(struct gthread *t)
{
    const struct pgc_file *f = t->f;
    size_t lo = pgc_open_find(f, t->th->index);
    if (lo == f->nopen || (f->open_stale[lo] & 1))
        return;
    const struct pgf_open_slot *s = &f->open[lo];
    int64_t b, e;
    event_span(t, s->begin_tsc, s->now_tsc, &b, &e);
    const char *name = s->name ? pgc_string_text(f, s->name) : NULL;
    if (!name)
        name = (s->flags & PGF_EVENT_F_IMPLICIT) ? "(implicit event)" : "(event)";
    struct pgc_out pl;
    pl_begin(&pl, "PerfgroupEvent");
    uint64_t cpu = (s->flags & PGF_OPEN_F_CPU) ? s->cpu_ns : 0;
    pl_ms(&pl, "cpu", (int64_t)(cpu < (uint64_t)(e - b) ? cpu : (uint64_t)(e - b)));
    pl_ms(&pl, "wall", e - b);
    /* its groups so far, no CPU each yet: "a (running), b" */
    char gl[1024];
    size_t gn = pgc_open_groups(f, s, gl, sizeof gl);
    if (!gn)
        gn = (size_t)snprintf(gl, sizeof gl, "none yet");
    pl_str(&pl, "groups", gl, gn);
    pl_str(&pl, "jank", cpu > (uint64_t)PGC_JANK_MS * 1000000 ? "yes" : "no", cpu > (uint64_t)PGC_JANK_MS * 1000000 ? 3 : 2);
    pl_str(&pl, "flags", "unfinished", 10);
    pl_end(&pl);
    pgc_marker_row(t, pgc_intern_string(t, name, strlen(name)), b, e, 1, CAT_EVENT, &pl);
}

/* ---- The thread's closing markers ------------------------------------------------------
 * What the output or the recording lost, and the process's own totals, as instant markers
 * at the thread's end (its latest time; the sample cap at its latest sample): one row each,
 * in this order, where `applies` says so; a cut the converter made is told on stderr too. */
struct end_marker {
    const char *name;   /* the marker's name */
    const char *type;   /* its payload's type (gecko_meta.c's schemas) */
    const char *reason; /* PerfgroupCut: what was lost, the payload's first field; or NULL */
    int (*applies)(const struct gthread *t, const struct pgc_overhead *ov);
    /* the payload's fields (after the reason), or NULL */
    void (*fields)(const struct gthread *t, struct pgc_out *pl, const struct pgc_overhead *ov);
    void (*warn)(const struct gthread *t); /* the line on stderr, or NULL */
    int at_last_sample;
};

static int64_t ms_field(uint64_t ns)
{
    return (int64_t)(ns > INT64_MAX ? INT64_MAX : ns);
}

static int counters_capped(const struct gthread *t, const struct pgc_overhead *ov)
{
    (void)ov;
    return t->grid.dropped != 0;
}

static void counters_capped_fields(const struct gthread *t, struct pgc_out *pl,
                                   const struct pgc_overhead *ov)
{
    (void)ov;
    pl_ms(pl, "cpu", ms_field(t->grid.dropped));
}

static void counters_capped_warn(const struct gthread *t)
{
    fprintf(stderr, "perfgroup-convert: warning: %s: thread %s: CPU counters stopped at "
            "%" PRIu64 " rows per group (--max-samples) or at the output's bound; %" PRIu64
            " ns of CPU not shown in them\n", t->prof->f->path, t->th->name, t->grid.max_rows,
            t->grid.dropped);
}

static int samples_capped(const struct gthread *t, const struct pgc_overhead *ov)
{
    (void)ov;
    return t->capped;
}

static void samples_capped_warn(const struct gthread *t)
{
    fprintf(stderr, "perfgroup-convert: warning: %s: thread %s: samples stopped at %" PRIu64
            " (--max-samples %" PRIu64 " per thread, or the output's bound: 2^20 + 8 per "
            "input byte in all; --max-samples N lifts the bound, --interval a coarser grid "
            "needs fewer); markers are complete\n", t->prof->f->path, t->th->name, t->nsamples,
            t->prof->max_samples);
}

/* the header's totals as a process-level marker: the Records dropped markers that carried
 * the losses may have been recycled themselves */
static int process_dropped(const struct gthread *t, const struct pgc_overhead *ov)
{
    (void)ov;
    return t->is_main && t->f->hdr.records_dropped;
}

static void process_dropped_fields(const struct gthread *t, struct pgc_out *pl,
                                   const struct pgc_overhead *ov)
{
    (void)ov;
    pl_u64(pl, "records", t->f->hdr.records_dropped);
    pl_u64(pl, "bytes", 0);
    pl_u64(pl, "chunks", t->f->hdr.chunks_recycled);
}

/* the whole-run totals (format.h): what the process did, whatever the buffer kept of its
 * events; the per-group counter tracks stay those of the events kept */
static int process_totals(const struct gthread *t, const struct pgc_overhead *ov)
{
    (void)ov;
    return t->is_main && t->f->has_totals;
}

static void process_totals_fields(const struct gthread *t, struct pgc_out *pl,
                                  const struct pgc_overhead *ov)
{
    (void)ov;
    char gl[1200];
    pl_ms(pl, "cpu", ms_field(t->f->tot_cpu_ns));
    pl_u64(pl, "events", t->f->tot_events);
    pgc_totals_text(gl, sizeof gl, t->f, 20);
    const char *groups = strchr(gl, ';');
    groups = groups ? groups + 2 : "";
    pl_str(pl, "groups", groups, strlen(groups));
    pl_u64(pl, "ngroups", t->f->ngtot);
}

/* the header's overhead totals, the same way: known before any thread is read */
static int process_overhead(const struct gthread *t, const struct pgc_overhead *ov)
{
    return t->is_main && ov->from_header;
}

static void process_overhead_fields(const struct gthread *t, struct pgc_out *pl,
                                    const struct pgc_overhead *ov)
{
    (void)t;
    pl_ms(pl, "commit", ms_field(ov->commit_ns));
    pl_u64(pl, "commits", ov->commits);
    pl_u64(pl, "slowPaths", ov->slow_paths);
    pl_u64(pl, "resyncs", ov->resyncs);
    pl_u64(pl, "dropped", ov->dropped);
    pl_u64(pl, "refused", ov->refused);
    pl_u64(pl, "clamped", ov->clamped);
}

static int recording_cut(const struct gthread *t, const struct pgc_overhead *ov)
{
    (void)ov;
    return t->f->not_closed;
}

static const struct end_marker end_markers[] = {
    {"Counters capped", "PerfgroupCut",
     "counter row limit reached (--max-samples, or the output's bound of 2^20 + 8 per input "
     "byte): CPU counters incomplete",
     counters_capped, counters_capped_fields, counters_capped_warn, 0},
    {"Samples capped", "PerfgroupCut",
     "sample limit reached (--max-samples, or the output's bound of 2^20 + 8 per input byte): "
     "no samples after this point",
     samples_capped, NULL, samples_capped_warn, 1},
    {"Records dropped (process total)", "PerfgroupDropped", NULL, process_dropped,
     process_dropped_fields, NULL, 0},
    {"Whole-run totals (process)", "PerfgroupTotals", NULL, process_totals,
     process_totals_fields, NULL, 0},
    {"Runtime overhead (process total)", "PerfgroupOverhead", NULL, process_overhead,
     process_overhead_fields, NULL, 0},
    {"Recording cut", "PerfgroupCut",
     "the program did not close the recording (crash, kill or still running): records after "
     "this point are lost, at most the one being written per thread",
     recording_cut, NULL, NULL, 0},
};

void pgc_end_markers(struct gthread *t)
{
    struct pgc_overhead ov;
    pgc_overhead_of(t->f, &ov);
    for (size_t i = 0; i < sizeof(end_markers) / sizeof(*end_markers); i++) {
        const struct end_marker *m = &end_markers[i];
        if (!m->applies(t, &ov))
            continue;
        if (m->warn)
            m->warn(t);
        struct pgc_out pl;
        pl_begin(&pl, m->type);
        if (m->reason)
            pl_str(&pl, "reason", m->reason, strlen(m->reason));
        if (m->fields)
            m->fields(t, &pl, &ov);
        pl_end(&pl);
        pgc_marker_row(t, pgc_intern_string(t, m->name, strlen(m->name)),
                       m->at_last_sample ? t->last_sample_ns : t->last_ns, 0, 0, CAT_OTHER, &pl);
    }
}
