/* SPDX-License-Identifier: MIT */
/* readback.c — summarise a recording for the tests (see readback.h). */
#include "readback.h"

#include <stdio.h>
#include <string.h>

struct rb_thread *rb_thread(struct readback *r, uint32_t index) {
    for (unsigned i = 0; i < r->nthreads; i++)
        if (r->threads[i].index == index)
            return &r->threads[i];
    if (r->nthreads == RB_MAX_THREADS)
        return NULL;
    struct rb_thread *t = &r->threads[r->nthreads++];
    memset(t, 0, sizeof *t);
    t->index = index;
    return t;
}

int readback(const char *path, struct readback *r) {
    memset(r, 0, sizeof *r);
    pgr_reader *rd = pgr_open(path);
    if (!rd) {
        r->error = 1;
        snprintf(r->message, sizeof r->message, "out of memory");
        return 0;
    }
    r->hdr = *pgr_header(rd);
    for (size_t i = 0; i < pgr_chunk_count(rd); i++) {
        const struct pgr_chunk_info *c = pgr_chunk(rd, i);
        if (c->kind == PGF_CHUNK_DEFS) {
            r->def_chunks++;
            continue;
        }
        r->data_chunks++;
        struct rb_thread *t = rb_thread(r, c->thread);
        if (!t)
            continue;
        t->chunk_records += c->record_count;
        if (c->seq > t->newest_seq) {
            t->newest_seq = c->seq;
            t->committed_total = c->records_before + c->record_count;
            t->dropped_before = c->dropped_before;
        }
    }
    struct pgr_record rec;
    while (pgr_next(rd, &rec) > 0) {
        r->kinds[rec.kind & 31]++;
        if (rec.kind == PGF_REC_PROCESS)
            r->process_pid = rec.u.process.pid;
        if (rec.thread == PGF_THREAD_DEFS)
            continue;
        struct rb_thread *t = rb_thread(r, rec.thread);
        if (!t)
            continue;
        t->records++;
        switch (rec.kind) {
        case PGF_REC_INTERVAL:
            if (t->intervals == 0)
                t->first = rec.u.interval.start_tsc;
            else if (rec.u.interval.start_tsc != t->last + 1)
                t->gap = 1;
            t->last = rec.u.interval.start_tsc;
            t->intervals++;
            break;
        case PGF_REC_THREAD_END: t->thread_end = 1; break;
        case PGF_REC_EVENT: t->events++; break;
        case PGF_REC_MARKER: t->markers++; break;
        case PGF_REC_DROPPED: t->dropped_recs += rec.u.dropped.records; break;
        default: break;
        }
    }
    if (pgr_error(rd)) {
        r->error = 1;
        snprintf(r->message, sizeof r->message, "%s", pgr_error(rd)->message);
        r->error_offset = pgr_error(rd)->offset;
        fprintf(stderr, "readback %s: byte %llu: %s\n", path,
                (unsigned long long)r->error_offset, r->message);
    }
    r->warnings = (unsigned)pgr_warning_count(rd);
    pgr_close(rd);
    return 0;
}
