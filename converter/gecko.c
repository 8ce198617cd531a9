/* SPDX-License-Identifier: MIT */
/*
 * gecko.c — perfgroup-convert's Gecko output (pgc_gecko_write): one profile for every input,
 * one process per recording (the root one at the top, the others as sub-processes by start
 * time), each read thread by thread (gecko_threads.c); markers of "lazy" thread indexes moved
 * to their thread. gecko.h draws the writer's files.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gecko.h"

/* ---- Processes ----------------------------------------------------------------------- */
/* The runtime gives a thread that records a marker before its core has seen it a second
 * ("lazy") thread index with the same tid. Rather than a second, marker-only track for one
 * OS thread, its markers are moved to the thread with that tid. They are read ahead with a
 * second reader (only when such a pair exists), up to MAX_LAZY_MARKERS; a damaged file is
 * left to the main pass to report. */
static void free_lazy(struct gecko *prof)
{
    for (uint32_t i = 0; i < prof->nlazy; i++)
        free(prof->lazy[i].text);
    free(prof->lazy);
    free(prof->merged_into);
    prof->lazy = NULL;
    prof->merged_into = NULL;
    prof->nlazy = prof->nmerged_into = 0;
}

static int has_data(const struct pgc_file *f, uint32_t thread_index)
{
    for (size_t c = 0; c < pgr_chunk_count(f->r); c++) {
        const struct pgr_chunk_info *ci = pgr_chunk(f->r, c);
        if (ci->kind == PGF_CHUNK_DATA && ci->thread == thread_index && ci->committed)
            return 1;
    }
    return 0;
}

static void collect_lazy(struct gecko *prof, struct pgc_file *f)
{
    uint32_t any = 0;
    prof->merged_into = malloc((f->nthreads + 1) * sizeof(*prof->merged_into));
    if (!prof->merged_into)
        return;
    prof->nmerged_into = f->nthreads;
    for (uint32_t i = 0; i < f->nthreads; i++) {
        prof->merged_into[i] = UNKNOWN;
        if (f->threads[i].index < PGF_THREAD_INDEX_LAZY || f->threads[i].tid == 0)
            continue;
        for (uint32_t j = 0; j < f->nthreads; j++)
            if (f->threads[j].index < PGF_THREAD_INDEX_LAZY && f->threads[j].tid == f->threads[i].tid &&
                has_data(f, f->threads[j].index)) { /* a target that will be streamed */
                prof->merged_into[i] = j;
                any++;
                break;
            }
    }
    if (!any)
        return;
    pgr_reader *r = pgr_open(f->open_path ? f->open_path : f->path);
    struct pgr_record rec;
    uint32_t cap = 0;
    while (r && !pgr_error(r) && pgr_next(r, &rec) > 0) {
        if (rec.thread < PGF_THREAD_INDEX_LAZY || rec.thread == PGF_THREAD_DEFS)
            continue;
        uint32_t ti = pgc_thread_slot(f, rec.thread);
        if (ti >= prof->nmerged_into || prof->merged_into[ti] == UNKNOWN)
            continue;
        if (rec.kind != PGF_REC_MARKER) {
            if (rec.kind != PGF_REC_CLOCK && rec.kind != PGF_REC_THREAD_END)
                prof->merged_into[ti] = UNKNOWN; /* more than markers: keep it as its own track */
            continue;
        }
        if (prof->nlazy >= MAX_LAZY_MARKERS)
            continue;
        if (prof->nlazy == cap) {
            uint32_t nc = cap ? cap * 2 : 16;
            struct lazy_marker *nl = realloc(prof->lazy, nc * sizeof(*nl));
            if (!nl)
                break;
            prof->lazy = nl;
            cap = nc;
        }
        struct lazy_marker *m = &prof->lazy[prof->nlazy];
        m->target = prof->merged_into[ti];
        m->src = ti;
        m->rec = rec;
        m->text = malloc(rec.u.marker.text.len + 1u);
        if (!m->text)
            break;
        memcpy(m->text, rec.u.marker.text.ptr, rec.u.marker.text.len);
        m->rec.u.marker.text.ptr = m->text;
        prof->nlazy++;
    }
    if (r)
        pgr_close(r);
    /* markers collected for a thread found unmergeable later stay with it: drop them here */
    uint32_t k = 0;
    for (uint32_t i = 0; i < prof->nlazy; i++) {
        uint32_t src = prof->lazy[i].src;
        if (prof->merged_into[src] == UNKNOWN)
            free(prof->lazy[i].text);
        else
            prof->lazy[k++] = prof->lazy[i];
    }
    prof->nlazy = k;
}

/* A process is named after its program (argv[0]'s basename; the front-end and Perfetto show
 * the pid beside the name themselves); an image that an exec() started in a process recorded
 * before it (the same pid, an earlier start) says so, so the two recordings of one pid read
 * as one process over time. */
void pgc_process_name(char *buf, size_t n, const struct pgc_file *files, size_t nfiles,
                      const struct pgc_file *f)
{
    const struct pgc_file *before = NULL;
    for (size_t i = 0; i < nfiles; i++)
        if (&files[i] != f && files[i].pid == f->pid &&
            files[i].start_realtime_ns < f->start_realtime_ns &&
            (!before || files[i].start_realtime_ns > before->start_realtime_ns))
            before = &files[i];
    if (before)
        snprintf(buf, n, "%s (exec'd by %s)", f->program, before->program);
    else
        snprintf(buf, n, "%s", f->program);
}

static int write_process(struct gecko *prof, struct pgc_file *f, int root)
{
    pgc_process_name(prof->pname, sizeof(prof->pname), prof->files, prof->nfiles, f);
    static const struct pgc_stream_cb cb = {pgc_gecko_begin_thread, pgc_gecko_record, pgc_gecko_end_thread};
    prof->f = f;
    if (pgc_file_unpark(f, prof->err))
        return -1;
    if (pgc_categories_add(&prof->cats, f))
        return pgc_gecko_oom(prof);
    /* GeckoMain: the thread whose tid is the pid; if the runtime gave that tid two thread
     * indexes (a marker written before the core saw the thread), the one with most records */
    prof->main_thread = UNKNOWN;
    uint64_t best = 0;
    for (uint32_t i = 0; i < f->nthreads; i++) {
        if (f->threads[i].tid != f->pid)
            continue;
        uint64_t n = 1;
        for (size_t c = 0; c < pgr_chunk_count(f->r); c++) {
            const struct pgr_chunk_info *ci = pgr_chunk(f->r, c);
            if (ci->kind == PGF_CHUNK_DATA && ci->thread == f->threads[i].index)
                n += ci->record_count;
        }
        if (n > best) {
            best = n;
            prof->main_thread = i;
        }
    }
    prof->main_written = 0;
    prof->nthreads_written = 0;
    prof->exec_follows = 0;
    for (size_t i = 0; i < prof->nfiles; i++)
        prof->exec_follows |= prof->files[i].pid == f->pid &&
                           prof->files[i].start_realtime_ns > f->start_realtime_ns;
    prof->group_cpu = calloc(f->ngroups + 1, sizeof(*prof->group_cpu));
    if (!prof->group_cpu)
        return pgc_gecko_oom(prof);
    collect_lazy(prof, f);
    /* the process's range: its start, its clean end, and what its threads cover */
    struct pgc_clock clk;
    pgc_clock_init(&clk, f);
    prof->plo = 0;
    prof->phi = f->hdr.end_tsc ? pgc_clock_ns(&clk, f->hdr.end_tsc) : 0;
    PGC_LIT(prof->out, "{\"libs\":[],\"pages\":[],\"threads\":[");
    int rc = pgc_file_stream(f, &cb, prof, prof->err);
    if (rc) {
        if (prof->t) {
            pgc_gthread_free(prof->t);
            prof->t = NULL;
        }
    } else {
        if (prof->nthreads_written == 0 || prof->exec_follows)
            pgc_gecko_empty_thread(prof);
        PGC_LIT(prof->out, "]");
        pgc_counters_write(prof);
    }
    int64_t off = f->start_realtime_ns - prof->root_start_ns;
    if (root || prof->plo + off < prof->glo)
        prof->glo = prof->plo + off;
    if (root || prof->phi + off > prof->ghi)
        prof->ghi = prof->phi + off;
    if (prof->cspill)
        fclose(prof->cspill);
    free(prof->cseg);
    prof->cspill = NULL;
    prof->cseg = NULL;
    prof->ncspill = prof->cap_cseg = 0;
    free(prof->group_cpu);
    prof->group_cpu = NULL;
    free_lazy(prof);
    prof->skip = 0;
    pgc_file_repark(f);
    return rc ? -1 : 0;
}

static size_t pick_root(struct pgc_file *files, size_t n)
{
    size_t best = 0;
    int best_orphan = 0;
    for (size_t i = 0; i < n; i++) {
        int orphan = 1;
        for (size_t j = 0; j < n; j++)
            if (j != i && files[j].pid == files[i].ppid)
                orphan = 0;
        if (i == 0 || (orphan && !best_orphan) ||
            (orphan == best_orphan && files[i].start_realtime_ns < files[best].start_realtime_ns)) {
            best = i;
            best_orphan = orphan;
        }
    }
    return best;
}

int pgc_gecko_write(struct pgc_file *files, size_t nfiles, const struct pgc_options *opt,
                    struct pgc_out *out, struct pgc_error *err)
{
    struct gecko prof;
    memset(&prof, 0, sizeof(prof));
    prof.opt = opt;
    prof.out = out;
    prof.err = err;
    prof.iv = opt->interval_ns > 0 ? opt->interval_ns : 1000000;
    prof.max_samples = opt->max_samples ? opt->max_samples : 100000000;
    prof.max_span_ns = (int64_t)prof.max_samples * prof.iv;
    prof.samples_left = prof.rows_left = pgc_row_budget(files, nfiles, opt);
    for (size_t i = 0; i < nfiles; i++)
        prof.threads_left += files[i].threads_total;
    for (size_t i = 0; i < nfiles; i++)
        prof.records_total += files[i].records_total;
    int rc;
    size_t root = pick_root(files, nfiles);
    prof.root_start_ns = files[root].start_realtime_ns;
    prof.files = files;
    prof.nfiles = nfiles;
    rc = write_process(&prof, &files[root], 1);
    PGC_LIT(out, ",\n\"processes\":[");
    /* the others (forked children, or unrelated runs) by start time */
    size_t done = 0;
    int64_t after = INT64_MIN;
    size_t after_i = 0;
    while (!rc && done + 1 < nfiles) {
        size_t next = SIZE_MAX;
        for (size_t i = 0; i < nfiles; i++) {
            if (i == root)
                continue;
            int later = files[i].start_realtime_ns > after ||
                        (files[i].start_realtime_ns == after && i > after_i);
            if (later && (next == SIZE_MAX || files[i].start_realtime_ns < files[next].start_realtime_ns))
                next = i;
        }
        if (next == SIZE_MAX)
            break;
        if (done)
            PGC_LIT(out, ",\n");
        rc = write_process(&prof, &files[next], 0);
        PGC_LIT(out, ",\"processes\":[],");
        pgc_meta_write(&prof, &files[next], 0, prof.plo, prof.phi);
        PGC_LIT(out, "}");
        after = files[next].start_realtime_ns;
        after_i = next;
        done++;
    }
    PGC_LIT(out, "],\n");
    pgc_meta_write(&prof, &files[root], 1, prof.glo, prof.ghi);
    PGC_LIT(out, "}\n");
    pgc_progress(opt, prof.records_total, prof.records_total);
    pgc_hash_free(&prof.cats.by_name);
    for (uint32_t i = 0; i < prof.cats.n; i++)
        free(prof.cats.names[i]);
    free(prof.cats.names);
    if (rc)
        return -1;
    pgc_out_flush(out);
    return out->err ? -out->err : 0;
}

