/* SPDX-License-Identifier: MIT */
/*
 * gecko_meta.c — what a Gecko profile says about itself: the categories (one per heavy group),
 * the marker schemas and the meta object of each process.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gecko.h"

static const char *const group_colors[] = {"blue", "green", "orange", "purple", "yellow",
                                           "brown", "magenta", "red", "lightred"};

uint32_t pgc_category_of(const struct cats *c, const char *name, uint32_t kind)
{
    uint32_t v;
    if (kind == PERFGROUP_KIND_FUNCTION)
        return CAT_FUNCTIONS;
    if (pgc_hash_get(&c->by_name, pgc_hash_bytes(name, strlen(name)), &v))
        return CAT_FIRST_GROUP + v;
    return CAT_MORE;
}

struct weight { uint64_t cpu_ns; uint32_t g; };
static int by_weight(const void *a, const void *b)
{
    const struct weight *x = a, *y = b;
    if (x->cpu_ns != y->cpu_ns)
        return x->cpu_ns < y->cpu_ns ? 1 : -1;
    return x->g < y->g ? -1 : x->g > y->g;
}

/* The categories grow as processes are written (each file's definitions are in memory only
 * for its turn): the list is complete in the root's meta, which is written last. */
int pgc_categories_add(struct cats *c, const struct pgc_file *f)
{
    /* the file's groups, heaviest first by their whole-run CPU (format.h's totals) */
    struct weight *w = calloc(f->ngroups ? f->ngroups : 1, sizeof *w);
    if (!w)
        return -ENOMEM;
    for (uint32_t g = 0; g < f->ngroups; g++)
        w[g].g = g;
    const struct pgf_totals_slot *ts;
    size_t nt = f->r ? pgr_totals(f->r, &ts, NULL) : 0;
    for (size_t i = 0; i < nt; i++) {
        uint32_t gi = pgc_group_index(f, ts[i].group);
        if (gi < f->ngroups)
            w[gi].cpu_ns += ts[i].t.cpu_ns;
    }
    qsort(w, f->ngroups, sizeof *w, by_weight);
    int rc = 0;
    for (uint32_t k = 0; k < f->ngroups && !rc; k++) {
        uint32_t g = w[k].g;
        if (f->groups[g].kind == PERFGROUP_KIND_FUNCTION)
            continue;
        const char *name = f->groups[g].name;
        uint64_t h = pgc_hash_bytes(name, strlen(name));
        uint32_t v;
        if (pgc_hash_get(&c->by_name, h, &v))
            continue;
        if (CAT_FIRST_GROUP + c->n >= CAT_MORE) {
            c->more = 1; /* this one and the lighter rest: "Other groups" */
            break;
        }
        if ((c->n & (c->n - 1)) == 0) {
            char **nn = realloc(c->names, (c->n ? c->n * 2 : 8) * sizeof(*nn));
            if (!nn) {
                rc = -ENOMEM;
                break;
            }
            c->names = nn;
        }
        if (!(c->names[c->n] = strdup(name))) {
            rc = -ENOMEM;
            break;
        }
        if (pgc_hash_put(&c->by_name, h, c->n)) {
            free(c->names[c->n]);
            rc = -ENOMEM;
            break;
        }
        c->n++;
    }
    free(w);
    return rc;
}


/* ---- Meta ---------------------------------------------------------------------------- */
static void write_schema(struct pgc_out *o)
{
    /* one entry per marker type; every field labelled and formatted */
    PGC_LIT(o,
        "\"markerSchema\":["
        "{\"name\":\"PerfgroupEvent\",\"tooltipLabel\":\"{marker.name}: {marker.data.cpu} CPU\","
        "\"tableLabel\":\"{marker.name} cpu {marker.data.cpu}, wall {marker.data.wall} "
        "{marker.data.groups}\",\"chartLabel\":\"{marker.name}\","
        "\"display\":[\"marker-chart\",\"marker-table\",\"timeline-overview\"],"
        "\"data\":[{\"key\":\"cpu\",\"label\":\"CPU time\",\"format\":\"milliseconds\"},"
        "{\"key\":\"wall\",\"label\":\"Wall time\",\"format\":\"milliseconds\"},"
        "{\"key\":\"groups\",\"label\":\"Groups (CPU)\",\"format\":\"string\",\"searchable\":true},"
        "{\"key\":\"self\",\"label\":\"Groups (self CPU)\",\"format\":\"string\",\"searchable\":true},"
        "{\"key\":\"jank\",\"label\":\"Jank (> 50 ms of CPU)\",\"format\":\"string\",\"searchable\":true},"
        "{\"key\":\"flags\",\"label\":\"Flags\",\"format\":\"string\"}]},\n"
        "{\"name\":\"PerfgroupInterval\",\"tooltipLabel\":\"{marker.name}: {marker.data.function}\","
        "\"tableLabel\":\"{marker.data.function} in {marker.data.lib} ({marker.data.file}:{marker.data.line})\","
        "\"chartLabel\":\"{marker.data.function}\",\"display\":[\"marker-chart\",\"marker-table\"],"
        "\"data\":[{\"key\":\"function\",\"label\":\"Function\",\"format\":\"unique-string\",\"searchable\":true},"
        "{\"key\":\"lib\",\"label\":\"Library\",\"format\":\"unique-string\",\"searchable\":true},"
        "{\"key\":\"file\",\"label\":\"File\",\"format\":\"unique-string\"},"
        "{\"key\":\"line\",\"label\":\"Line\",\"format\":\"integer\"},"
        "{\"key\":\"depth\",\"label\":\"Depth\",\"format\":\"integer\"},"
        "{\"key\":\"self\",\"label\":\"Self time (wall)\",\"format\":\"milliseconds\"}]},\n"
        "{\"name\":\"PerfgroupMarker\",\"tooltipLabel\":\"{marker.name}: {marker.data.text}\","
        "\"tableLabel\":\"{marker.data.text}\",\"chartLabel\":\"{marker.data.text}\","
        "\"display\":[\"marker-chart\",\"marker-table\",\"timeline-overview\"],"
        "\"data\":[{\"key\":\"text\",\"label\":\"Text\",\"format\":\"string\",\"searchable\":true}]},\n"
        "{\"name\":\"PerfgroupDropped\",\"tooltipLabel\":\"{marker.data.records} records dropped\","
        "\"tableLabel\":\"{marker.data.records} records, {marker.data.bytes} dropped\","
        "\"display\":[\"marker-chart\",\"marker-table\",\"timeline-overview\"],"
        "\"data\":[{\"key\":\"records\",\"label\":\"Records lost\",\"format\":\"integer\"},"
        "{\"key\":\"bytes\",\"label\":\"Bytes lost\",\"format\":\"bytes\"},"
        "{\"key\":\"chunks\",\"label\":\"Chunks recycled\",\"format\":\"integer\"}]},\n"
        "{\"name\":\"PerfgroupCut\",\"tooltipLabel\":\"Recording cut\",\"tableLabel\":\"{marker.data.reason}\","
        "\"display\":[\"marker-chart\",\"marker-table\",\"timeline-overview\"],"
        "\"data\":[{\"key\":\"reason\",\"label\":\"What was lost\",\"format\":\"string\"}]},\n"
        "{\"name\":\"PerfgroupTotals\",\"tooltipLabel\":\"Whole run: {marker.data.cpu} in {marker.data.events} events\","
        "\"tableLabel\":\"whole run: {marker.data.cpu} in {marker.data.events} events: {marker.data.groups}\","
        "\"display\":[\"marker-table\"],"
        "\"data\":[{\"key\":\"cpu\",\"label\":\"CPU time\",\"format\":\"milliseconds\"},"
        "{\"key\":\"events\",\"label\":\"Events\",\"format\":\"integer\"},"
        "{\"key\":\"groups\",\"label\":\"Groups (CPU, heaviest first)\",\"format\":\"string\",\"searchable\":true},"
        "{\"key\":\"ngroups\",\"label\":\"Groups\",\"format\":\"integer\"}]},\n"
        "{\"name\":\"PerfgroupOverhead\",\"tooltipLabel\":\"Runtime overhead: {marker.data.commit}\","
        "\"tableLabel\":\"commits {marker.data.commits} took {marker.data.commit}\","
        "\"display\":[\"marker-table\"],"
        "\"data\":[{\"key\":\"commit\",\"label\":\"Time in commits\",\"format\":\"milliseconds\"},"
        "{\"key\":\"commits\",\"label\":\"Commits\",\"format\":\"integer\"},"
        "{\"key\":\"slowPaths\",\"label\":\"Slow paths\",\"format\":\"integer\"},"
        "{\"key\":\"resyncs\",\"label\":\"Clock resyncs\",\"format\":\"integer\"},"
        "{\"key\":\"dropped\",\"label\":\"Pairs not counted\",\"format\":\"integer\"},"
        "{\"key\":\"refused\",\"label\":\"Calls refused (process)\",\"format\":\"integer\"},"
        "{\"key\":\"clamped\",\"label\":\"Events clamped (process)\",\"format\":\"integer\"}]}]");
}

static void write_categories(struct gecko *prof)
{
    struct pgc_out *o = prof->out;
    PGC_LIT(o, "\"categories\":["
               "{\"name\":\"Idle\",\"color\":\"transparent\",\"subcategories\":[\"Other\"]},"
               "{\"name\":\"Other\",\"color\":\"grey\",\"subcategories\":[\"Other\"]},"
               "{\"name\":\"Event\",\"color\":\"lightblue\",\"subcategories\":[\"Other\"]},"
               "{\"name\":\"Function groups\",\"color\":\"darkgrey\",\"subcategories\":[\"Other\"]}");
    for (uint32_t i = 0; i < prof->cats.n; i++) {
        PGC_LIT(o, ",\n{\"name\":");
        pgc_out_json_str(o, prof->cats.names[i], strlen(prof->cats.names[i]));
        PGC_LIT(o, ",\"color\":\"");
        pgc_out_str(o, group_colors[i % (sizeof(group_colors) / sizeof(*group_colors))]);
        PGC_LIT(o, "\",\"subcategories\":[\"Other\"]}");
    }
    if (prof->cats.more) /* CAT_MORE: the groups beyond the front-end's 256 categories */
        PGC_LIT(o, ",\n{\"name\":\"Other groups\",\"color\":\"grey\",\"subcategories\":[\"Other\"]}");
    PGC_LIT(o, "]");
}

/* Written after the process's threads (and, for the root, after every sub-process), when
 * the time range they cover is known: profilingStartTime/EndTime make the front-end show
 * the whole range, so no marker is left before the first sample. */
void pgc_meta_write(struct gecko *prof, struct pgc_file *f, int root, int64_t lo, int64_t hi)
{
    struct pgc_out *o = prof->out;
    PGC_LIT(o, "\"meta\":{\"version\":36,\"startTime\":");
    pgc_out_fixed(o, f->start_realtime_ns, 1000000);
    PGC_LIT(o, ",\"profilingStartTime\":");
    out_ms(o, lo);
    PGC_LIT(o, ",\"profilingEndTime\":");
    out_ms(o, hi);
    PGC_LIT(o, ",\"shutdownTime\":null,\"interval\":");
    pgc_out_fixed(o, prof->iv, 1000000);
    PGC_LIT(o, ",\"processType\":0,\"product\":");
    pgc_out_json_str(o, f->program, strlen(f->program));
    PGC_LIT(o, ",\"stackwalk\":0,\"debug\":0,\"gcpoison\":0,\"asyncstack\":0,"
               "\"presymbolicated\":true,\"platform\":\"Linux\",\"oscpu\":\"Linux\","
               "\"abi\":\"perfgroup\",\"misc\":");
    char misc[1100];
    int mn = snprintf(misc, sizeof(misc), "perfgroup %s mode, pid %u",
                      f->mode == PGF_MODE_TRACE ? "trace" : "stats", f->pid);
    if (f->hdr.records_dropped && mn > 0 && (size_t)mn < sizeof(misc)) /* the header's total */
        mn += snprintf(misc + mn, sizeof(misc) - (size_t)mn, ", %" PRIu64 " records dropped (%"
                       PRIu64 " chunks recycled)", f->hdr.records_dropped, f->hdr.chunks_recycled);
    if (f->counts.chunks_corrupt && mn > 0 && (size_t)mn < sizeof(misc)) /* what the reader skipped */
        mn += snprintf(misc + mn, sizeof(misc) - (size_t)mn, ", %" PRIu64 " chunks failed their "
                       "CRC-32C (skipped)", f->counts.chunks_corrupt);
    if (f->counts.clipped && mn > 0 && (size_t)mn < sizeof(misc)) /* pgc_file_stream */
        mn += snprintf(misc + mn, sizeof(misc) - (size_t)mn, ", %" PRIu64 " record times beyond "
                       "the file's clocks clipped (first at byte %" PRIu64 ")", f->counts.clipped,
                       f->counts.clipped_offset);
    if (f->has_totals && mn > 0 && (size_t)mn < sizeof(misc)) { /* format.h: never recycled */
        char t[400];
        pgc_totals_text(t, sizeof t, f, 5);
        mn += snprintf(misc + mn, sizeof(misc) - (size_t)mn, ", whole run: %s", t);
    }
    struct pgc_overhead ov;
    pgc_overhead_of(f, &ov);
    if (ov.any && mn > 0 && (size_t)mn < sizeof(misc)) { /* the runtime's own cost */
        char t[320];
        pgc_overhead_text(t, sizeof(t), &ov);
        snprintf(misc + mn, sizeof(misc) - (size_t)mn, ", runtime overhead: %s", t);
    }
    pgc_out_json_str(o, misc, strlen(misc));
    PGC_LIT(o, ",\"sampleUnits\":{\"time\":\"ms\",\"eventDelay\":\"ms\",\"threadCPUDelta\":\"ns\"},"
               "\"startTimeAsClockMonotonicNanosecondsSinceBoot\":");
    pgc_out_i64(o, f->start_monotonic_ns);
    PGC_LIT(o, ",\n");
    write_categories(prof);
    PGC_LIT(o, ",\n");
    if (root)
        write_schema(o);
    else
        PGC_LIT(o, "\"markerSchema\":[]");
    PGC_LIT(o, "}");
}
