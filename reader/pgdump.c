/* SPDX-License-Identifier: MIT */
/*
 * pgdump.c — print a perfgroup recording as text, one line per record (for tests and
 * debugging). Usage: pgdump [-c] FILE   (-c: also one line per chunk header)
 * Exit status: 0 read to the end, 1 the reader reported an error (one line on stderr with
 * the file and byte offset), 2 usage. Warnings go to stderr prefixed "warning:".
 */
#include "pgreader.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void pstr(struct pgr_str s) {
    putchar('"');
    for (uint32_t i = 0; i < s.len; i++) {
        unsigned char ch = (unsigned char)s.ptr[i];
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20 || ch >= 0x7f)
            printf("\\x%02x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

static void print_record(const struct pgr_record *r) {
    printf("%s t=%" PRIu32 " seq=%" PRIu64 " @%" PRIu64 ":", pgr_kind_name(r->kind),
           r->thread, r->chunk_seq, r->offset);
    switch (r->kind) {
    case PGF_REC_PROCESS:
        printf(" pid=%u ppid=%u program=", r->u.process.pid, r->u.process.ppid);
        pstr(r->u.process.program);
        printf(" args=[");
        for (uint32_t i = 0; i < r->u.process.nargs; i++) {
            if (i)
                putchar(' ');
            pstr(r->u.process.args[i]);
        }
        printf("] realtime=%" PRId64 " monotonic=%" PRId64 " tsc=%" PRIu64 " hz=%" PRIu64
               " mode=%u version=",
               r->u.process.start_realtime_ns, r->u.process.start_monotonic_ns,
               r->u.process.start_tsc, r->u.process.tsc_hz, r->u.process.mode);
        pstr(r->u.process.runtime_version);
        break;
    case PGF_REC_GROUP:
        printf(" id=%u name=", r->u.group.group_id);
        pstr(r->u.group.name);
        printf(" kind=%u active=%d", r->u.group.group_kind, r->u.group.active);
        break;
    case PGF_REC_SITE:
        printf(" id=%u function=", r->u.site.function_id);
        pstr(r->u.site.function);
        printf(" file=");
        pstr(r->u.site.file);
        printf(" line=%u groups=[", r->u.site.line);
        for (uint32_t i = 0; i < r->u.site.ngroups; i++)
            printf(i ? " %u" : "%u", r->u.site.group_ids[i]);
        printf("] module=");
        pstr(r->u.site.module);
        break;
    case PGF_REC_THREAD:
        printf(" index=%u tid=%u name=", r->u.thread.thread_index, r->u.thread.tid);
        pstr(r->u.thread.name);
        break;
    case PGF_REC_STRING:
        printf(" id=%u text=", r->u.string.string_id);
        pstr(r->u.string.text);
        break;
    case PGF_REC_CLOCK:
        printf(" tsc=%" PRIu64 " realtime=%" PRId64 " monotonic=%" PRId64 " cpu=%" PRIu64,
               r->u.clock.tsc, r->u.clock.realtime_ns, r->u.clock.monotonic_ns,
               r->u.clock.thread_cpu_ns);
        break;
    case PGF_REC_EVENT:
        printf(" name=%u begin=%" PRIu64 " end=%" PRIu64 " cpu=%" PRIu64 " flags=%u groups=[",
               r->u.event.name_string_id, r->u.event.begin_tsc, r->u.event.end_tsc,
               r->u.event.cpu_ns, r->u.event.flags);
        for (uint32_t i = 0; i < r->u.event.ngroups; i++) {
            const struct pgr_event_group *g = &r->u.event.groups[i];
            printf("%s[%u %" PRIu64 " %" PRIu64 " %" PRIu64 "]", i ? " " : "", g->group_id,
                   g->cycles, g->cpu_ns, g->activations);
        }
        putchar(']');
        if (r->u.event.groups_more)
            printf(" groups_more=%u", r->u.event.groups_more);
        break;
    case PGF_REC_INTERVAL:
        printf(" function=%u mask=%u depth=%u start=%" PRIu64 " duration=%" PRIu64,
               r->u.interval.function_id, r->u.interval.group_mask, r->u.interval.depth,
               r->u.interval.start_tsc, r->u.interval.duration);
        break;
    case PGF_REC_MARKER:
        printf(" name=%u text=", r->u.marker.name_string_id);
        pstr(r->u.marker.text);
        printf(" start=%" PRIu64 " end=%" PRIu64, r->u.marker.start_tsc, r->u.marker.end_tsc);
        break;
    case PGF_REC_DROPPED:
        printf(" records=%" PRIu64 " bytes=%" PRIu64 " chunks=%" PRIu64, r->u.dropped.records,
               r->u.dropped.bytes, r->u.dropped.chunks);
        break;
    case PGF_REC_OVERHEAD:
        printf(" commit_ns=%" PRIu64 " commits=%" PRIu64 " slow_paths=%" PRIu64
               " resyncs=%" PRIu64 " dropped=%" PRIu64,
               r->u.overhead.commit_ns, r->u.overhead.commits, r->u.overhead.slow_paths,
               r->u.overhead.resyncs, r->u.overhead.dropped);
        break;
    case PGF_REC_THREAD_END:
        printf(" end=%" PRIu64, r->u.thread_end.end_tsc);
        break;
    }
    putchar('\n');
}

int main(int argc, char **argv) {
    int chunks = 0;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-c") == 0)
            chunks = 1;
        else if (!path)
            path = argv[i];
        else
            path = NULL, i = argc;
    }
    if (!path) {
        fprintf(stderr, "usage: pgdump [-c] FILE\n");
        return 2;
    }
    pgr_reader *r = pgr_open(path);
    if (!r) {
        fprintf(stderr, "%s: out of memory\n", path);
        return 1;
    }
    const struct pgf_file_header *h = pgr_header(r);
    if (!pgr_error(r)) {
        printf("header version=%u chunk_size=%u chunk_count=%u pid=%u ppid=%u clock=%u "
               "mode=%u state=%u hz=%" PRIu64 " next_seq=%" PRIu64 " recycled=%" PRIu64
               " dropped=%" PRIu64 " end_tsc=%" PRIu64 " program=\"%s\"\n",
               h->version, h->chunk_size, h->chunk_count, h->pid, h->ppid, h->clock, h->mode,
               h->state, h->tsc_hz, h->next_seq, h->chunks_recycled, h->records_dropped,
               h->end_tsc, h->program);
        for (size_t i = 0; chunks && i < pgr_chunk_count(r); i++) {
            const struct pgr_chunk_info *c = pgr_chunk(r, i);
            printf("chunk index=%u kind=%u state=%u seq=%" PRIu64 " thread=%u committed=%u "
                   "records=%u records_before=%" PRIu64 " dropped_before=%" PRIu64 "\n",
                   c->index, c->kind, c->state, c->seq, c->thread, c->committed,
                   c->record_count, c->records_before, c->dropped_before);
        }
    }
    struct pgr_record rec;
    while (pgr_next(r, &rec) > 0)
        print_record(&rec);
    if (!pgr_error(r)) { /* the whole-run totals (format.h, version 3) */
        const struct pgf_totals_slot *ts;
        size_t nt = pgr_totals(r, &ts, NULL);
        for (size_t i = 0; i < nt; i++)
            printf("totals thread=%u group=%u flags=%u cpu_ns=%" PRIu64 " wall_ns=%" PRIu64
                   " activations=%" PRIu64 " events=%" PRIu64 " max_ns=%" PRIu64
                   " discarded=%" PRIu64 "\n", ts[i].thread, ts[i].group, ts[i].flags,
                   ts[i].t.cpu_ns, ts[i].t.wall_ns, ts[i].t.activations, ts[i].t.events,
                   ts[i].t.max_event_ns, ts[i].t.discarded);
    }
    fflush(stdout);
    for (size_t i = 0; i < pgr_warning_count(r); i++)
        fprintf(stderr, "warning: %s: byte %" PRIu64 ": %s\n", path, pgr_warning(r, i)->offset,
                pgr_warning(r, i)->message);
    int rc = 0;
    if (pgr_error(r)) {
        fprintf(stderr, "%s: byte %" PRIu64 ": %s\n", path, pgr_error(r)->offset,
                pgr_error(r)->message);
        rc = 1;
    }
    pgr_close(r);
    return rc;
}
