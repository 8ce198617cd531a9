/* SPDX-License-Identifier: MIT */
/*
 * input.c — one recording as both programs see it: the shared reader (pgreader) opened and
 * validated, its definitions read (kept by defs.c), then the data records streamed thread by
 * thread to a sink, each through the clipping policy (clip.c); the open events a cut file
 * left, parking between turns, the warnings. Errors become one "<file>: byte <offset>:
 * <what>" line.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "reading.h"

const char *pgc_stdin_path;

static int reader_err(struct pgc_file *f, struct pgc_error *err)
{
    const struct pgr_error *e = pgr_error(f->r);
    if (e)
        pgc_read_fail(err, f->path, e->offset, e->message);
    else
        pgc_read_fail(err, f->path, 0, "unreadable recording");
    return -1;
}

static int by_gtotal_cpu(const void *a, const void *b)
{
    const struct pgc_gtotal *x = a, *y = b;
    if (x->t.cpu_ns != y->t.cpu_ns)
        return x->t.cpu_ns < y->t.cpu_ns ? 1 : -1;
    return strcmp(x->name, y->name);
}

/* The file's whole-run totals (pgr_totals) by group, over its threads: f->gtot, heaviest
 * first, the top group's in tot_cpu_ns / tot_events. Kept while parked. -1: out of memory. */
static int group_totals(struct pgc_file *f)
{
    const struct pgf_totals_slot *ts;
    size_t nt = pgr_totals(f->r, &ts, &f->tot_torn);
    f->has_totals = nt != 0;
    if (!nt)
        return 0;
    struct pgc_gtotal *gt = calloc(f->ngroups ? f->ngroups : 1, sizeof *gt);
    if (!gt)
        return -1;
    for (size_t i = 0; i < nt; i++) {
        uint32_t gi = pgc_group_index(f, ts[i].group);
        if (gi == UINT32_MAX)
            continue;
        const struct pgf_totals *s = &ts[i].t;
        if (f->groups[gi].kind == 0) { /* PERFGROUP_KIND_TOP: the whole of every event */
            f->tot_cpu_ns += s->cpu_ns;
            f->tot_events += s->events;
            continue;
        }
        struct pgf_totals *d = &gt[gi].t;
        d->task_cpu_ns += s->task_cpu_ns, d->tasks += s->tasks; /* tasks: no event needed */
        if (!s->events)
            continue;
        if (s->max_wall_ns > d->max_wall_ns)
            d->max_wall_ns = s->max_wall_ns;
        if (s->max_event_ns > d->max_event_ns)
            d->max_event_ns = s->max_event_ns;
        if (!d->events || s->min_event_ns < d->min_event_ns)
            d->min_event_ns = s->min_event_ns;
        d->cpu_ns += s->cpu_ns, d->wall_ns += s->wall_ns, d->blocked_ns += s->blocked_ns;
        d->cycles += s->cycles, d->activations += s->activations, d->events += s->events;
        d->discarded += s->discarded;
        for (int j = 0; j < 10; j++)
            d->jank[j] += s->jank[j];
    }
    uint32_t k = 0;
    for (uint32_t g = 0; g < f->ngroups; g++)
        if (gt[g].t.events || gt[g].t.tasks) {
            gt[k] = gt[g];
            if (!(gt[k].name = strdup(f->groups[g].name))) {
                for (uint32_t j = 0; j < k; j++)
                    free(gt[j].name);
                free(gt);
                return -1;
            }
            gt[k++].kind = f->groups[g].kind;
        }
    qsort(gt, k, sizeof *gt, by_gtotal_cpu);
    f->gtot = gt;
    f->ngtot = k;
    return 0;
}

static void gtot_free(struct pgc_gtotal *gt, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        free(gt[i].name);
    free(gt);
}

/* A file still being written is read in one copy of its chunks, in ascending order: a
 * definition written into a lower chunk after that chunk was copied, and one referring to it
 * written into a higher chunk before that one was, give a copy whose site names a group it
 * does not define (seen once in ~1,000 conversions of a live file, recording.totals' `kill`
 * scenario). So a file not closed that fails to read, for that or any other reason (the
 * failure carries no kind to tell them apart), is read again — a fresh copy, up to three
 * more times, 2 ms apart — before it is called damaged: a damaged one costs four reads and
 * 6 ms more, then the same error; a closed file is read once. */
int pgc_file_open(struct pgc_file *f, const char *path, struct pgc_error *err)
{
    for (int tries = 0;; tries++) {
        int rc = pgc_file_follow(f, path, NULL, NULL, err);
        if (rc == 0 || !f->not_closed || tries >= 3)
            return rc;
        pgc_file_close(f);
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
}

int pgc_file_follow(struct pgc_file *f, const char *path, pgr_resume_fn resume,
                    void *resume_ctx, struct pgc_error *err)
{
    return pgc_file_follow_fd(f, path, -1, resume, resume_ctx, err);
}

int pgc_file_follow_fd(struct pgc_file *f, const char *path, int fd,
                       pgr_resume_fn resume, void *resume_ctx, struct pgc_error *err)
{
    memset(f, 0, sizeof(*f));
    f->path = path;
    f->open_path = strcmp(path, "-") || !pgc_stdin_path ? path : pgc_stdin_path;
    /* the size of the file read, not of whatever the path names now */
    struct stat st;
    int have_st = fd >= 0 ? fstat(fd, &st) == 0 : stat(f->open_path, &st) == 0;
    f->r = fd >= 0 ? pgr_open_fd(fd) : pgr_open(f->open_path);
    if (!f->r)
        return pgc_read_oom(f, err);
    if (resume)
        pgr_set_resume(f->r, resume, resume_ctx);
    if (pgr_error(f->r))
        return reader_err(f, err);
    f->hdr = *pgr_header(f->r);
    const struct pgf_open_slot *os;
    size_t no = pgr_open_events(f->r, &os);
    if (no) {
        f->open = malloc(no * sizeof *os);
        f->open_stale = calloc(no, 1);
        if (!f->open || !f->open_stale)
            return pgc_read_oom(f, err);
        memcpy(f->open, os, no * sizeof *os);
        f->nopen = no;
    }
    f->pid = f->hdr.pid;
    f->ppid = f->hdr.ppid;
    f->start_realtime_ns = f->hdr.start_realtime_ns;
    f->start_monotonic_ns = f->hdr.start_monotonic_ns;
    f->start_tsc = f->hdr.start_tsc;
    f->tsc_hz = f->hdr.tsc_hz;
    f->mode = f->hdr.mode;
    f->not_closed = f->hdr.state != PGF_STATE_CLOSED;
    char prog[sizeof(f->hdr.program) + 1];
    memcpy(prog, f->hdr.program, sizeof(f->hdr.program));
    prog[sizeof(f->hdr.program)] = '\0';
    if (!(f->program = strdup(prog[0] ? prog : "program")))
        return pgc_read_oom(f, err);
    for (size_t i = 0; i < pgr_chunk_count(f->r); i++) {
        const struct pgr_chunk_info *c = pgr_chunk(f->r, i);
        if (c->kind == PGF_CHUNK_DATA)
            f->records_total += c->record_count;
    }
    /* a recording not closed may still be written: its chunks being written get records
     * after the clocks read here (a plain conversion of a running program reads for seconds) */
    pgc_clip_init(f, resume != NULL || f->not_closed);
    /* A file shorter than its header says: a clean (closed) file must be whole, and the
     * definitions must be whole in any file; a cut data chunk of an unclosed recording is
     * what a crash leaves, and converts with a warning. */
    uint64_t want = f->hdr.chunks_offset + (uint64_t)f->hdr.chunk_count * f->hdr.chunk_size;
    f->size = have_st ? (uint64_t)st.st_size : want;
    if (have_st && (uint64_t)st.st_size < want) {
        int defs_cut = 0;
        for (size_t i = 0; i < pgr_chunk_count(f->r); i++) {
            const struct pgr_chunk_info *c = pgr_chunk(f->r, i);
            uint64_t end = f->hdr.chunks_offset + (uint64_t)c->index * f->hdr.chunk_size +
                           PGF_CHUNK_HEADER_SIZE + c->committed;
            if (c->kind == PGF_CHUNK_DEFS && end > (uint64_t)st.st_size)
                defs_cut = 1;
        }
        if (!f->not_closed || defs_cut || pgr_chunk_count(f->r) == 0) {
            char m[160];
            snprintf(m, sizeof(m), "truncated: %s end of file (%llu of %llu bytes)",
                     defs_cut || pgr_chunk_count(f->r) == 0 ? "definitions cut by the"
                                                            : "closed recording cut by the",
                     (unsigned long long)st.st_size, (unsigned long long)want);
            pgc_read_fail(err, path, (uint64_t)st.st_size, m);
            return -1;
        }
    }
    struct pgr_record rec;
    int rc;
    while ((rc = pgr_next(f->r, &rec)) > 0) {
        if (rec.thread != PGF_THREAD_DEFS) {
            f->pending = rec;
            f->has_pending = 1;
            break;
        }
        if (pgc_def_add(f, &rec, err))
            return -1;
    }
    if (rc < 0)
        return reader_err(f, err);
    pgc_sites_libs(f);
    f->threads_total = f->nthreads;
    /* group ids are small in practice: a direct table for the per-event lookups */
    f->group_direct = malloc(PGC_DIRECT_IDS * sizeof(*f->group_direct));
    if (!f->group_direct)
        return pgc_read_oom(f, err);
    for (uint32_t i = 0; i < PGC_DIRECT_IDS; i++) {
        uint32_t v;
        f->group_direct[i] = pgc_hash_get(&f->group_ids, i, &v) ? v : UINT32_MAX;
    }
    if (group_totals(f))
        return pgc_read_oom(f, err);
    return 0;
}

static void free_defs(struct pgc_file *f);

static void warnings_to(const struct pgc_file *f, FILE *out)
{
    for (size_t i = 0; i < pgr_warning_count(f->r); i++) {
        const struct pgr_error *w = pgr_warning(f->r, i);
        fprintf(out, "perfgroup-convert: warning: %s: byte %" PRIu64 ": %s\n", f->path,
                w->offset, w->message);
    }
    if (!f->not_closed)
        return;
    /* say what was lost: the chunks still being written when the writer stopped */
    uint32_t writing = 0;
    uint64_t kept = 0;
    for (size_t i = 0; i < pgr_chunk_count(f->r); i++) {
        const struct pgr_chunk_info *c = pgr_chunk(f->r, i);
        if (c->kind == PGF_CHUNK_DATA && c->state == PGF_CSTATE_WRITING) {
            writing++;
            kept += c->record_count;
        }
    }
    fprintf(out,
            "perfgroup-convert: warning: %s: recording not closed: %u thread chunk(s) were being "
            "written (%" PRIu64 " whole records kept); lost: at most the record each thread was "
            "writing, and everything after the cut; %" PRIu64 " records dropped before it\n",
            f->path, writing, kept, f->hdr.records_dropped);
}

/* Warnings go to stderr, after a successful conversion only (bad input gets one line):
 * "perfgroup-convert: warning: <file>: byte N: <what>". */
void pgc_file_warnings(const struct pgc_file *f)
{
    if (f->warn)
        fputs(f->warn, stderr);
    else if (f->r)
        warnings_to(f, stderr);
    if (f->counts.clipped)
        fprintf(stderr, "perfgroup-convert: warning: %s: byte %" PRIu64 ": %" PRIu64 " record "
                "time(s) beyond the file's own clocks clipped (an event's CPU above its wall "
                "time, a clock record against the header's clock): damaged records, the first "
                "here\n", f->path, f->counts.clipped_offset, f->counts.clipped);
}

/* An EVENT record: the open-event slot of its thread with its begin is stale (the event
 * ended after the slot's last refresh). Slots come in thread order, one per thread. */
size_t pgc_open_find(const struct pgc_file *f, uint32_t thread)
{
    size_t lo = 0, hi = f->nopen;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (f->open[mid].thread < thread)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < f->nopen && f->open[lo].thread == thread ? lo : f->nopen;
}

size_t pgc_open_groups(const struct pgc_file *f, const struct pgf_open_slot *s, char *b,
                       size_t n)
{
    size_t len = 0;
    b[0] = 0;
    for (unsigned i = 0; i < s->ngroups && i < PGF_OPEN_GROUPS; i++) {
        uint32_t gi = pgc_group_index(f, s->group[i]);
        char unk[32];
        snprintf(unk, sizeof unk, "group %u", s->group[i]);
        int w = snprintf(b + len, n - len, "%s%s%s", i ? ", " : "",
                         gi < f->ngroups ? f->groups[gi].name : unk,
                         i < s->nrunning ? " (running)" : "");
        if (w < 0 || (size_t)w >= n - len)
            return strlen(b);
        len += (size_t)w;
    }
    if (s->flags & PGF_OPEN_F_MORE) {
        int w = snprintf(b + len, n - len, "%s", s->ngroups ? " and more" : "(more)");
        if (w > 0 && (size_t)w < n - len)
            len += (size_t)w;
    }
    return strlen(b);
}

static void open_ended(struct pgc_file *f, const struct pgr_record *r)
{
    size_t i = pgc_open_find(f, r->thread);
    if (i < f->nopen && f->open[i].begin_tsc == r->u.event.begin_tsc)
        f->open_stale[i] |= 1;
}

/* Once streamed: the slots that are not stale, resolved (thread, name, times), kept when the
 * file is parked. Times from the file's own clock; CPU at most the wall time. */
static int unfinished_list(struct pgc_file *f)
{
    f->unfinished = calloc(f->nopen, sizeof *f->unfinished);
    if (!f->unfinished)
        return -1;
    uint64_t hz = pgc_clip_hz(f);
    for (size_t i = 0; i < f->nopen; i++) {
        const struct pgf_open_slot *s = &f->open[i];
        if (f->open_stale[i] & 1)
            continue;
        struct pgc_unfinished *u = &f->unfinished[f->nunfinished++];
        u->thread = s->thread;
        u->tid = s->tid; /* the slot's: the file may have no definition of the thread */
        uint32_t idx;
        if (pgc_hash_get(&f->thread_ids, s->thread, &idx) && f->threads[idx].tid == s->tid)
            snprintf(u->thread_name, sizeof u->thread_name, "%s", f->threads[idx].name);
        else
            snprintf(u->thread_name, sizeof u->thread_name, "thread %u", s->tid);
        if (s->name && pgc_hash_get(&f->string_ids, s->name, &idx))
            snprintf(u->event, sizeof u->event, "%s", f->strings[idx].text);
        else
            snprintf(u->event, sizeof u->event, "%s",
                     (s->flags & PGF_EVENT_F_IMPLICIT) ? "(implicit)" : "(event)");
        double tick = 1e9 / (double)hz;
        u->begin_ns = s->begin_tsc > f->start_tsc ? (uint64_t)((double)(s->begin_tsc - f->start_tsc) * tick) : 0;
        u->wall_ns = s->now_tsc > s->begin_tsc ? (uint64_t)((double)(s->now_tsc - s->begin_tsc) * tick) : 0;
        u->slot = *s;
        u->cpu_known = (s->flags & PGF_OPEN_F_CPU) != 0;
        u->cpu_ns = u->cpu_known ? (s->cpu_ns < u->wall_ns ? s->cpu_ns : u->wall_ns) : 0;
    }
    return 0;
}

int pgc_file_stream(struct pgc_file *f, const struct pgc_stream_cb *cb, void *ctx,
                    struct pgc_error *err)
{
    struct pgr_record rec;
    int have = f->has_pending, rc = 0;
    int64_t cur = -1;
    if (have)
        rec = f->pending;
    f->has_pending = 0;
    for (;;) {
        if (!have) {
            int n = pgr_next(f->r, &rec);
            if (n < 0)
                return reader_err(f, err);
            if (n == 0)
                break;
        }
        have = 0;
        if (rec.thread == PGF_THREAD_DEFS) {
            pgc_read_fail(err, f->path, rec.offset, "definitions after data");
            return -1;
        }
        if ((int64_t)rec.thread != cur) {
            uint32_t idx;
            if (cur >= 0) {
                pgc_hash_get(&f->thread_ids, (uint32_t)cur, &idx);
                if ((rc = cb->end_thread(ctx, idx)))
                    return rc;
            }
            int t = pgc_thread_ensure(f, rec.thread, err);
            if (t < 0)
                return -1;
            cur = rec.thread;
            size_t o = f->nopen ? pgc_open_find(f, rec.thread) : 0;
            if (o < f->nopen)
                f->open_stale[o] |= 2; /* streamed: its outputs show the slot at its end */
            if ((rc = cb->begin_thread(ctx, (uint32_t)t)))
                return rc;
        }
        if (rec.kind == PGF_REC_EVENT && f->nopen)
            open_ended(f, &rec);
        pgc_clip_record(f, &rec);
        if (rec.kind == PGF_REC_OVERHEAD) {
            f->counts.ovh_commit_ns += rec.u.overhead.commit_ns;
            f->counts.ovh_commits += rec.u.overhead.commits;
            f->counts.ovh_slow_paths += rec.u.overhead.slow_paths;
            f->counts.ovh_resyncs += rec.u.overhead.resyncs;
            f->counts.ovh_dropped += rec.u.overhead.dropped;
            f->counts.ovh_records++;
        }
        if ((rc = cb->record(ctx, &rec)))
            return rc;
    }
    f->counts.chunks_corrupt = pgr_chunks_corrupt(f->r); /* known before the last thread ends */
    f->streamed = 1;
    if (f->nopen && !f->unfinished && unfinished_list(f) != 0)
        return pgc_read_oom(f, err);
    if (cur >= 0) {
        uint32_t idx;
        pgc_hash_get(&f->thread_ids, (uint32_t)cur, &idx);
        if ((rc = cb->end_thread(ctx, idx)))
            return rc;
    }
    /* A thread with an open event and no record at all (a fork child's, a thread killed in
     * its first event): a thread of its own, with nothing but that event; at most 64 such
     * (each costs the outputs a thread: a crafted file's 350,000 slots would not be bounded
     * by its size; the summary lists them all) */
    for (size_t i = 0, made = 0; i < f->nopen && made < 64; i++) {
        if (f->open_stale[i])
            continue;
        made++;
        int t = pgc_thread_ensure(f, f->open[i].thread, err);
        if (t < 0)
            return -1;
        if (!f->threads[t].tid)
            f->threads[t].tid = f->open[i].tid;
        if ((rc = cb->begin_thread(ctx, (uint32_t)t)) || (rc = cb->end_thread(ctx, (uint32_t)t)))
            return rc;
    }
    return 0;
}

static int c_any(const struct pgc_file *f)
{
    return f->counts.ovh_records != 0;
}

void pgc_overhead_of(const struct pgc_file *f, struct pgc_overhead *o)
{
    const struct pgf_file_header *h = &f->hdr;
    o->from_header = (h->ovh_commit_ns | h->ovh_commits | h->ovh_slow_paths | h->ovh_resyncs |
                      h->ovh_dropped) != 0;
    if (o->from_header) {
        o->commit_ns = h->ovh_commit_ns, o->commits = h->ovh_commits;
        o->slow_paths = h->ovh_slow_paths, o->resyncs = h->ovh_resyncs;
        o->dropped = h->ovh_dropped;
    } else {
        const struct pgc_file_counts *c = &f->counts;
        o->commit_ns = c->ovh_commit_ns, o->commits = c->ovh_commits;
        o->slow_paths = c->ovh_slow_paths, o->resyncs = c->ovh_resyncs;
        o->dropped = c->ovh_dropped;
    }
    o->refused = h->refused, o->clamped = h->clamped;
    o->any = o->from_header || c_any(f) || o->refused || o->clamped;
}

int pgc_file_park(struct pgc_file *f)
{
    if (f->parked)
        return 0;
    char *warn = f->warn; /* parked before: the same warnings */
    if (!warn) {
        size_t n = 0;
        FILE *m = open_memstream(&warn, &n);
        if (!m)
            return -1;
        warnings_to(f, m);
        if (fclose(m)) {
            free(warn);
            return -1;
        }
    }
    struct pgc_file k = *f;
    k.program = NULL; /* kept */
    free_defs(&k);
    const char *path = f->path;
    char *program = f->program;
    struct pgf_file_header hdr = f->hdr;
    uint64_t records_total = f->records_total;
    memset(f, 0, sizeof(*f));
    f->path = path;
    f->size = k.size;
    f->threads_total = k.threads_total;
    f->program = program;
    f->hdr = hdr;
    f->pid = k.pid;
    f->ppid = k.ppid;
    f->start_realtime_ns = k.start_realtime_ns;
    f->start_monotonic_ns = k.start_monotonic_ns;
    f->start_tsc = k.start_tsc;
    f->tsc_hz = k.tsc_hz;
    f->mode = k.mode;
    f->records_total = records_total;
    f->not_closed = k.not_closed;
    f->counts = k.counts;
    f->warn = warn;
    f->unfinished = k.unfinished, f->nunfinished = k.nunfinished;
    f->gtot = k.gtot, f->ngtot = k.ngtot, f->has_totals = k.has_totals;
    f->tot_cpu_ns = k.tot_cpu_ns, f->tot_events = k.tot_events, f->tot_torn = k.tot_torn;
    f->parked = 1;
    return 0;
}

int pgc_file_unpark(struct pgc_file *f, struct pgc_error *err)
{
    if (!f->parked)
        return 0;
    char *warn = f->warn, *program = f->program;
    struct pgc_unfinished *unf = f->unfinished;
    size_t nunf = f->nunfinished;
    gtot_free(f->gtot, f->ngtot); /* read again with the file */
    int rc = pgc_file_open(f, f->path, err);
    free(program);
    f->warn = warn;
    if (unf) { /* found by an earlier stream: kept */
        free(f->unfinished);
        f->unfinished = unf, f->nunfinished = nunf;
    }
    f->reopened = 1;
    return rc;
}

void pgc_file_repark(struct pgc_file *f)
{
    if (f->reopened && !f->parked)
        pgc_file_park(f); /* no memory for the warnings' text: stays open */
}

void pgc_file_close(struct pgc_file *f)
{
    free_defs(f);
    free(f->unfinished);
    free(f->program);
    free(f->warn);
    gtot_free(f->gtot, f->ngtot);
    memset(f, 0, sizeof(*f));
}

/* The reader and the definitions (not the program name). */
static void free_defs(struct pgc_file *f)
{
    if (f->r)
        pgr_close(f->r);
    free(f->open);
    free(f->open_stale);
    f->open = NULL, f->open_stale = NULL, f->nopen = 0;
    for (uint32_t i = 0; i < f->nargs; i++)
        free(f->args[i]);
    free(f->args);
    for (uint32_t i = 0; i < f->ngroups; i++)
        free(f->groups[i].name);
    for (uint32_t i = 0; i < f->nsites; i++) {
        if (f->sites[i].display != f->sites[i].function)
            free(f->sites[i].display);
        free(f->sites[i].function);
        free(f->sites[i].file);
        free(f->sites[i].module);
        free(f->sites[i].groups);
    }
    for (uint32_t i = 0; i < f->nthreads; i++)
        free(f->threads[i].name);
    for (uint32_t i = 0; i < f->nstrings; i++)
        free(f->strings[i].text);
    free(f->groups);
    free(f->sites);
    free(f->threads);
    free(f->strings);
    pgc_hash_free(&f->group_ids);
    free(f->group_direct);
    pgc_hash_free(&f->site_ids);
    pgc_hash_free(&f->thread_ids);
    pgc_hash_free(&f->string_ids);
}
