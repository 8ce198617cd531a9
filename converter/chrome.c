/* SPDX-License-Identifier: MIT */
/*
 * chrome.c — writes recordings as Chrome trace-event JSON (Perfetto UI, chrome://tracing):
 * complete ("X") events for events, trace-mode stopwatch intervals and interval markers;
 * instant ("i") events for instant markers, dropped records and a cut recording; metadata
 * ("M") events naming each process and thread. Timestamps are microseconds since the
 * earliest process start among the inputs, so forked children line up with their parent.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "pgconv.h"

struct chrome {
    const struct pgc_options *opt;
    struct pgc_out *out;
    struct pgc_file *f;
    struct pgc_clock clk;
    int64_t base_ns;   /* this process's start minus the earliest start */
    uint32_t tid;
    int64_t last_ns;
    uint64_t nevents;
    uint64_t records_done, records_total;
};

static void us(struct pgc_out *o, int64_t ns)
{
    perfgroup__out_fixed(o, ns, 1000);
}

static void head(struct chrome *C, const char *ph, const char *name, size_t nlen, const char *cat)
{
    struct pgc_out *o = C->out;
    PGC_SEP(o, C->nevents++, "\n{\"ph\":\"");
    perfgroup__out_str(o, ph);
    PGC_LIT(o, "\",\"name\":");
    perfgroup__out_json_str(o, name, nlen);
    PGC_LIT(o, ",\"cat\":\"");
    perfgroup__out_str(o, cat);
    PGC_LIT(o, "\",\"pid\":");
    perfgroup__out_u64(o, C->f->pid);
    PGC_LIT(o, ",\"tid\":");
    perfgroup__out_u64(o, C->tid);
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

static void meta_name(struct chrome *C, const char *what, const char *name)
{
    struct pgc_out *o = C->out;
    head(C, "M", what, strlen(what), "__metadata");
    PGC_LIT(o, ",\"args\":{\"name\":");
    perfgroup__out_json_str(o, name, strlen(name));
    PGC_LIT(o, "}}");
}

static int begin_thread(void *ctx, uint32_t ti)
{
    struct chrome *C = ctx;
    C->tid = C->f->threads[ti].tid ? C->f->threads[ti].tid : C->f->threads[ti].index;
    C->last_ns = 0;
    perfgroup__clock_init(&C->clk, C->f);
    meta_name(C, "thread_name", C->f->threads[ti].name);
    return 0;
}

static int on_record(void *ctx, const struct pgr_record *r)
{
    struct chrome *C = ctx;
    struct pgc_out *o = C->out;
    struct pgc_file *f = C->f;
    if ((++C->records_done & 0xffff) == 0)
        perfgroup__progress(C->opt, C->records_done, C->records_total);
    switch (r->kind) {
    case PGF_REC_CLOCK:
        perfgroup__clock_update(&C->clk, f, r);
        break;
    case PGF_REC_EVENT: {
        const char *name = perfgroup__string(f, r->u.event.name_string_id);
        if (!name)
            name = r->u.event.flags & PGF_EVENT_F_IMPLICIT ? "(implicit event)" : "(event)";
        int64_t s = perfgroup__clock_ns(&C->clk, r->u.event.begin_tsc);
        int64_t e = perfgroup__clock_ns(&C->clk, r->u.event.end_tsc);
        head(C, "X", name, strlen(name), "event");
        span(C, s, e);
        PGC_LIT(o, ",\"args\":{\"cpu_ms\":");
        perfgroup__out_fixed(o, (int64_t)r->u.event.cpu_ns, 1000000);
        if (r->u.event.cpu_ns > (uint64_t)PGC_JANK_MS * 1000000)
            PGC_LIT(o, ",\"jank\":\"yes\""); /* CPU time per event, as everywhere */
        for (uint32_t i = 0; i < r->u.event.ngroups; i++) {
            uint32_t gi = perfgroup__group_index(f, r->u.event.groups[i].group_id);
            if (gi == UINT32_MAX)
                continue;
            PGC_LIT(o, ",");
            char key[300];
            snprintf(key, sizeof(key), "cpu_ms %s", f->groups[gi].name);
            perfgroup__out_json_str(o, key, strlen(key));
            PGC_LIT(o, ":");
            perfgroup__out_fixed(o, (int64_t)r->u.event.groups[i].cpu_ns, 1000000);
        }
        PGC_LIT(o, "}}");
        break;
    }
    case PGF_REC_INTERVAL: {
        uint32_t si = perfgroup__site_index(f, r->u.interval.function_id);
        const struct pgc_site *st = si == UINT32_MAX ? NULL : &f->sites[si];
        const char *name = st ? st->display : "(unknown function)";
        char cat[256] = "perfgroup";
        size_t cl = 0;
        for (uint32_t b = 0; st && b < st->ngroups && b < 8; b++) {
            int n = snprintf(cat + cl, sizeof(cat) - cl, "%s%s", cl ? "," : "",
                             f->groups[st->groups[b]].name);
            if (n > 0)
                cl += (size_t)n < sizeof(cat) - cl ? (size_t)n : sizeof(cat) - cl - 1;
        }
        /* the category is a raw string in head(): keep it JSON-safe */
        for (size_t i = 0; i < cl; i++)
            if (cat[i] == '"' || cat[i] == '\\' || (unsigned char)cat[i] < 0x20)
                cat[i] = '_';
        int64_t s = perfgroup__clock_ns(&C->clk, r->u.interval.start_tsc);
        head(C, "X", name, strlen(name), cat);
        span(C, s, s + perfgroup__ticks_ns(&C->clk, r->u.interval.duration));
        PGC_LIT(o, ",\"args\":{\"depth\":");
        perfgroup__out_u64(o, r->u.interval.depth);
        PGC_LIT(o, ",\"acquired\":");
        perfgroup__out_u64(o, r->u.interval.group_mask);
        PGC_LIT(o, "}}");
        break;
    }
    case PGF_REC_MARKER: {
        const char *name = perfgroup__string(f, r->u.marker.name_string_id);
        if (!name)
            name = "(marker)";
        int64_t s = perfgroup__clock_ns(&C->clk, r->u.marker.start_tsc);
        if (r->u.marker.end_tsc == r->u.marker.start_tsc) {
            head(C, "i", name, strlen(name), "marker");
            instant(C, s);
        } else {
            head(C, "X", name, strlen(name), "marker");
            span(C, s, perfgroup__clock_ns(&C->clk, r->u.marker.end_tsc));
        }
        PGC_LIT(o, ",\"args\":{\"text\":");
        perfgroup__out_json_str(o, r->u.marker.text.ptr, r->u.marker.text.len);
        PGC_LIT(o, "}}");
        break;
    }
    case PGF_REC_DROPPED:
        head(C, "i", "Records dropped", 15, "perfgroup");
        instant(C, C->last_ns);
        PGC_LIT(o, ",\"args\":{\"records\":");
        perfgroup__out_u64(o, r->u.dropped.records);
        PGC_LIT(o, ",\"bytes\":");
        perfgroup__out_u64(o, r->u.dropped.bytes);
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
    if (C->f->not_closed) {
        head(C, "i", "Recording cut", 13, "perfgroup");
        instant(C, C->last_ns);
        PGC_LIT(C->out, ",\"args\":{\"reason\":\"the program did not close the recording\"}}");
    }
    return C->out->err ? -1 : 0;
}

int perfgroup__chrome_write(struct pgc_file *files, size_t nfiles, const struct pgc_options *opt,
                            struct pgc_out *out, struct pgc_error *err)
{
    static const struct pgc_stream_cb cb = {begin_thread, on_record, end_thread};
    struct chrome C;
    memset(&C, 0, sizeof(C));
    C.opt = opt;
    C.out = out;
    int64_t base = INT64_MAX;
    for (size_t i = 0; i < nfiles; i++) {
        C.records_total += files[i].records_total;
        if (files[i].start_realtime_ns < base)
            base = files[i].start_realtime_ns;
    }
    PGC_LIT(out, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"perfgroup-convert\"},"
                 "\"traceEvents\":[");
    int rc = 0;
    for (size_t i = 0; i < nfiles && !rc; i++) {
        C.f = &files[i];
        /* within 2^61 ns like every other time (damaged start times stay defined) */
        int64_t off;
        if (__builtin_sub_overflow(files[i].start_realtime_ns, base, &off) || off > (1ll << 61))
            off = 1ll << 61;
        C.base_ns = off;
        C.tid = files[i].pid;
        char pname[300];
        snprintf(pname, sizeof(pname), "%s (pid %u)", files[i].program, files[i].pid);
        meta_name(&C, "process_name", pname);
        rc = perfgroup__file_stream(&files[i], &cb, &C, err);
    }
    PGC_LIT(out, "]}\n");
    perfgroup__progress(opt, C.records_total, C.records_total);
    if (rc)
        return -1;
    perfgroup__out_flush(out);
    return out->err ? -out->err : 0;
}
