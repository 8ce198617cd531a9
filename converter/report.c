/* SPDX-License-Identifier: MIT */
/*
 * report.c — what the outputs say beside their data: the runtime's overhead as text or
 * JSON, a file's whole-run totals as text, the output bound on rows (docs/converter.md,
 * "Bounds") and the progress line on stderr.
 */
#include <inttypes.h>

#include "pgconv.h"

void pgc_overhead_text(char *buf, size_t n, const struct pgc_overhead *o)
{
    snprintf(buf, n, "%" PRIu64 " commits in %.3f ms, %" PRIu64 " slow paths, %" PRIu64
             " resyncs, %" PRIu64 " pairs not counted, %" PRIu64 " calls refused, %" PRIu64
             " events clamped", o->commits, (double)o->commit_ns / 1e6, o->slow_paths,
             o->resyncs, o->dropped, o->refused, o->clamped);
}

void pgc_out_overhead_json(struct pgc_out *out, const struct pgc_overhead *o)
{
    PGC_LIT(out, "{\"commit_ms\":");
    pgc_out_fixed(out, (int64_t)(o->commit_ns > INT64_MAX ? INT64_MAX : o->commit_ns), 1000000);
    PGC_LIT(out, ",\"commits\":");
    pgc_out_u64(out, o->commits);
    PGC_LIT(out, ",\"slow_paths\":");
    pgc_out_u64(out, o->slow_paths);
    PGC_LIT(out, ",\"resyncs\":");
    pgc_out_u64(out, o->resyncs);
    PGC_LIT(out, ",\"pairs_not_counted\":");
    pgc_out_u64(out, o->dropped);
    PGC_LIT(out, ",\"calls_refused\":");
    pgc_out_u64(out, o->refused);
    PGC_LIT(out, ",\"events_clamped\":");
    pgc_out_u64(out, o->clamped);
    PGC_LIT(out, "}");
}

uint64_t pgc_row_budget(const struct pgc_file *files, size_t nfiles,
                        const struct pgc_options *opt)
{
    if (opt->max_samples)
        return UINT64_MAX; /* asked for: the per-thread limit only */
    uint64_t n = 0;
    for (size_t i = 0; i < nfiles; i++)
        n += files[i].size;
    if (n > (UINT64_MAX - PGC_ROWS_BASE) / PGC_ROWS_PER_BYTE)
        return UINT64_MAX;
    return PGC_ROWS_BASE + PGC_ROWS_PER_BYTE * n;
}

void pgc_totals_text(char *b, size_t n, const struct pgc_file *f, unsigned top)
{
    int k = snprintf(b, n, "CPU %.3f ms in %" PRIu64 " events", (double)f->tot_cpu_ns / 1e6,
                     f->tot_events);
    for (uint32_t i = 0; i < f->ngtot && i < top && k > 0 && (size_t)k < n; i++)
    {
        k += snprintf(b + k, n - (size_t)k, "%s%s %.3f ms", i ? ", " : "; ", f->gtot[i].name,
                      (double)f->gtot[i].t.cpu_ns / 1e6);
        if (f->gtot[i].t.tasks && k > 0 && (size_t)k < n) /* tasks run elsewhere for it */
            k += snprintf(b + k, n - (size_t)k, " + %.3f ms on its behalf",
                          (double)f->gtot[i].t.task_cpu_ns / 1e6);
    }
    if (f->ngtot > top && k > 0 && (size_t)k < n)
        snprintf(b + k, n - (size_t)k, " and %u more groups", f->ngtot - top);
}

/* ---- Progress ------------------------------------------------------------------------ */
void pgc_progress(const struct pgc_options *opt, uint64_t done, uint64_t total)
{
    static unsigned last = 1000;
    if (!opt->progress || total == 0)
        return;
    unsigned pct = (unsigned)(done * 100 / total);
    if (pct == last)
        return;
    last = pct;
    fprintf(stderr, "\rperfgroup-convert: %3u%% (%" PRIu64 " of %" PRIu64 " records)%s", pct,
            done, total, done >= total ? "\n" : "");
}
