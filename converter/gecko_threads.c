/* SPDX-License-Identifier: MIT */
/*
 * gecko_threads.c — one Gecko thread object: its head, its markers (straight to the output),
 * its samples (copied in from the spill file), its range and its tables; and the empty
 * thread a process with no data still needs.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gecko.h"

/* ---- Threads ------------------------------------------------------------------------- */
static void write_thread_head(struct gecko *prof, const char *name, const char *process_name,
                              uint32_t tid)
{
    struct pgc_out *o = prof->out;
    PGC_SEP(o, prof->nthreads_written, "\n{\"name\":");
    pgc_out_json_str(o, name, strlen(name));
    PGC_LIT(o, ",\"processType\":\"default\",\"processName\":");
    pgc_out_json_str(o, process_name, strlen(process_name));
    PGC_LIT(o, ",\"pid\":");
    pgc_out_u64(o, prof->f->pid);
    PGC_LIT(o, ",\"tid\":");
    pgc_out_u64(o, tid);
    prof->nthreads_written++;
}

/* threadCPUDelta only in stats mode, where samples stand for the events' measured CPU; a
 * trace-mode sample has no CPU reading of its own */
static const char samples_schema[] =
    ",\"samples\":{\"schema\":{\"stack\":0,\"time\":1,\"eventDelay\":2,\"threadCPUDelta\":3},"
    "\"data\":[";
static const char samples_schema_trace[] =
    ",\"samples\":{\"schema\":{\"stack\":0,\"time\":1,\"eventDelay\":2},\"data\":[";

static void write_samples_head(struct gecko *prof)
{
    if (prof->f->mode == PGF_MODE_TRACE)
        pgc_out_raw(prof->out, samples_schema_trace, sizeof(samples_schema_trace) - 1);
    else
        pgc_out_raw(prof->out, samples_schema, sizeof(samples_schema) - 1);
}
static const char markers_schema[] =
    ",\"markers\":{\"schema\":{\"name\":0,\"startTime\":1,\"endTime\":2,\"phase\":3,"
    "\"category\":4,\"data\":5},\"data\":[";

int pgc_gecko_begin_thread(void *ctx, uint32_t ti)
{
    struct gecko *prof = ctx;
    if (ti < prof->nmerged_into && prof->merged_into[ti] != UNKNOWN) {
        prof->skip = 1; /* its markers went to the thread with its tid */
        return 0;
    }
    struct gthread *t = calloc(1, sizeof(*t));
    if (!t)
        return pgc_gecko_oom(prof);
    prof->t = t;
    t->prof = prof;
    t->f = prof->f;
    t->th = &prof->f->threads[ti];
    t->complete_tsc = pgc_thread_complete_from(prof->f, ti);
    t->last_sample_ns = INT64_MIN;
    t->quota = prof->samples_left / (prof->threads_left > 1 ? prof->threads_left : 1);
    if (prof->threads_left > 1)
        prof->threads_left--;
    pgc_clock_init(&t->clk, prof->f);
    t->acc = calloc(prof->f->ngroups + 1, sizeof(*t->acc));
    int grid_rc = pgc_grid_init(&t->grid, prof->f->ngroups, prof->iv, prof->max_samples, pgc_counter_row, t);
    t->grid.budget = &prof->rows_left;
    t->spill = tmpfile();
    t->sw = malloc(sizeof(*t->sw));
    if (t->sw)
        pgc_out_init(t->sw, t->spill);
    /* doubling: one more segment per thread was quadratic (5000 threads: 43 s under ASan,
     * whose realloc always copies) */
    int seg_rc = grow((void **)&prof->cseg, &prof->cap_cseg, prof->ncspill + 1, sizeof(*prof->cseg));
    if (!t->acc || grid_rc || !t->spill || !t->sw || seg_rc)
        return pgc_gecko_oom(prof);
    if (!prof->cspill && !(prof->cspill = tmpfile()))
        return pgc_gecko_oom(prof);
    struct cseg *seg = &prof->cseg[prof->ncspill++];
    seg->start = seg->end = ftello(prof->cspill); /* end: at the thread's end */
    int is_main = !prof->main_written && (ti == prof->main_thread || prof->main_thread == UNKNOWN);
    if (is_main)
        prof->main_written = 1;
    t->is_main = is_main;
    /* The main thread is named GeckoMain (the front-end attaches counters only to it) and
     * shows under processName: the process's name (process_name()). */
    const char *name = is_main ? "GeckoMain" : t->th->name;
    if (is_main && prof->exec_follows) {
        /* The front-end shows one process track per pid, with the last GeckoMain of that pid:
         * a GeckoMain before an exec would be hidden. So this one is a thread of the pid's
         * track, named for what it is; an empty GeckoMain (end of the process) holds the
         * counters, which the importer attaches only to a process's GeckoMain. */
        snprintf(prof->until_exec, sizeof(prof->until_exec), "%s (until exec)", prof->pname);
        name = prof->until_exec;
    }
    write_thread_head(prof, name, prof->pname, t->th->tid);
    t->idle_stack = pgc_intern_stack(t, UNKNOWN, pgc_label_frame(t, "(outside instrumented functions)", CAT_IDLE));
    pgc_out_raw(prof->out, markers_schema, sizeof(markers_schema) - 1);
    return 0;
}

void pgc_gthread_free(struct gthread *t)
{
    for (uint32_t i = 0; i < t->nstrings; i++)
        free(t->strings[i]);
    free(t->strings);
    free(t->frame_loc);
    free(t->frame_cat);
    free(t->frame_line);
    free(t->stack_prefix);
    free(t->stack_frame);
    free(t->runs);
    free(t->pool);
    free(t->levels);
    free(t->acc);
    pgc_grid_free(&t->grid);
    pgc_hash_free(&t->string_map);
    pgc_hash_free(&t->frame_map);
    pgc_hash_free(&t->stack_map);
    pgc_hash_free(&t->level_map);
    if (t->spill)
        fclose(t->spill);
    free(t->sw);
    free(t);
}

static int copy_file(struct pgc_out *o, FILE *f)
{
    char b[1 << 15];
    size_t n;
    fflush(f);
    rewind(f);
    while ((n = fread(b, 1, sizeof(b), f)) > 0)
        pgc_out_raw(o, b, n);
    return ferror(f) ? -1 : 0;
}

int pgc_gecko_end_thread(void *ctx, uint32_t ti)
{
    struct gecko *prof = ctx;
    struct gthread *t = prof->t;
    struct pgc_out *o = prof->out;
    if (prof->skip) {
        prof->skip = 0;
        return 0;
    }
    for (uint32_t i = 0; i < prof->nlazy; i++)
        if (prof->lazy[i].target == ti)
            pgc_user_marker(t, &prof->lazy[i].rec);
    if (t->f->nopen)
        pgc_unfinished_marker(t);
    pgc_trace_flush(t); /* outermost intervals that never closed (cut recording): write anyway */
    int64_t last_row = pgc_grid_finish(&t->grid);
    prof->cseg[prof->ncspill - 1].end = ftello(prof->cspill);
    if (last_row > t->last_ns)
        t->last_ns = last_row; /* the range holds every counter row */
    pgc_end_markers(t);
    PGC_LIT(o, "]}");
    write_samples_head(prof);
    pgc_out_flush(t->sw);
    if ((t->sw->err || copy_file(o, t->spill)) && !o->err)
        o->err = t->sw->err ? t->sw->err : EIO;
    if (t->have_time) {
        if (t->first_ns < prof->plo)
            prof->plo = t->first_ns;
        if (t->last_ns > prof->phi)
            prof->phi = t->last_ns;
    }
    PGC_LIT(o, "]},\"registerTime\":");
    out_ms(o, t->have_time ? t->first_ns : 0);
    PGC_LIT(o, ",\"unregisterTime\":");
    if (prof->f->not_closed || !t->have_time)
        PGC_LIT(o, "null");
    else
        out_ms(o, t->last_ns);
    pgc_tables_write(t);
    PGC_LIT(o, "]}");
    pgc_gthread_free(t);
    prof->t = NULL;
    return o->err ? -1 : 0;
}

/* A process whose recording has no thread data still needs a thread to be shown. */
void pgc_gecko_empty_thread(struct gecko *prof)
{
    struct pgc_out *o = prof->out;
    write_thread_head(prof, "GeckoMain", prof->pname, prof->f->pid);
    write_samples_head(prof);
    PGC_LIT(o, "]}");
    pgc_out_raw(o, markers_schema, sizeof(markers_schema) - 1);
    PGC_LIT(o, "]},\"registerTime\":0,\"unregisterTime\":null,"
               "\"frameTable\":{\"schema\":{\"location\":0,\"relevantForJS\":1,\"innerWindowID\":2,"
               "\"implementation\":3,\"line\":4,\"column\":5,\"category\":6,\"subcategory\":7},"
               "\"data\":[]},\"stackTable\":{\"schema\":{\"prefix\":0,\"frame\":1},\"data\":[]},"
               "\"stringTable\":[]}");
}
