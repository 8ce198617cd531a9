/* SPDX-License-Identifier: MIT */
/*
 * live.c — follow recordings while their programs write them (see live.h): at every refresh,
 * look for new files (find.c), re-read each one's definitions and only its new records, and
 * keep cumulative per-thread, per-group totals.
 */
#define _GNU_SOURCE
#include "live.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- reading what is new ------------------------------------------------------------ */

struct follow {
    struct pgl_file *lf;
    struct pgc_file *f;
    struct pgl_thread *th;
};

static uint32_t resume_at(void *ctx, const struct pgr_chunk_info *c)
{
    struct pgl_file *lf = ctx;
    uint32_t before = 0;
    pgc_hash_get(&lf->seen, c->seq, &before);
    pgc_hash_put(&lf->seen_next, c->seq, c->committed);
    return before;
}

/* A name read from the file, kept as valid UTF-8 (old if it did not change). */
static char *dup_or_keep(char *old, const char *s)
{
    char *n = pgc_utf8_dup(s, 0);
    if (!n || (old && !strcmp(old, n))) {
        free(n);
        return old;
    }
    free(old);
    return n;
}

static int grow_rows(struct pgl_thread *t, uint32_t old, uint32_t n)
{
    if (n <= old && t->rows)
        return 0;
    struct pgc_row *r = realloc(t->rows, (n ? n : 1) * sizeof(*r));
    if (!r)
        return -1;
    memset(r + old, 0, (n - old) * sizeof(*r));
    t->rows = r;
    return 0;
}

static int begin_thread(void *ctx, uint32_t slot)
{
    struct follow *F = ctx;
    struct pgl_file *lf = F->lf;
    const struct pgc_thread *ct = &F->f->threads[slot];
    struct pgl_thread *t = NULL;
    for (uint32_t i = 0; i < lf->nthreads; i++)
        if (lf->threads[i].index == ct->index)
            t = &lf->threads[i];
    if (!t) {
        struct pgl_thread *nt = realloc(lf->threads, (lf->nthreads + 1) * sizeof(*nt));
        if (!nt)
            return -1;
        lf->threads = nt;
        t = &lf->threads[lf->nthreads++];
        memset(t, 0, sizeof(*t));
        t->index = ct->index;
    }
    t->tid = ct->tid;
    t->name = dup_or_keep(t->name, ct->name);
    if (grow_rows(t, t->rows ? lf->ngroups : 0, F->f->ngroups))
        return -1;
    struct pgc_clock fresh;
    pgc_clock_init(&fresh, F->f);
    if (!t->clk_set)
        t->clk = fresh;
    t->clk.ns_per_tick = fresh.ns_per_tick; /* tsc_hz: the writer's best estimate, updated */
    t->clk_set = 1;
    F->th = t;
    return 0;
}

static int on_record(void *ctx, const struct pgr_record *r)
{
    struct follow *F = ctx;
    struct pgl_thread *t = F->th;
    if (r->kind == PGF_REC_CLOCK) {
        pgc_clock_update(&t->clk, F->f, r);
    } else if (r->kind == PGF_REC_EVENT) {
        t->cpu_ns += r->u.event.cpu_ns;
        t->events++;
        pgc_rows_add_event(t->rows, F->f, &t->clk, r);
    }
    return 0;
}

static int end_thread(void *ctx, uint32_t slot)
{
    (void)ctx;
    (void)slot;
    return 0;
}

/* The file's whole-run totals (format.h, version 3) replace the sums of the events read:
 * they hold the events recycled before this reader saw them, and a reader started late or
 * restarted gets the program's counters from its start. A thread whose slots were all
 * folded into the ended threads' row (thread index 0, "ended threads") is zeroed: its
 * totals are in that row now. A slot rewritten under every try of this read keeps its last
 * value. */
static void apply_totals(struct pgl_file *lf, const struct pgc_file *f)
{
    const struct pgf_totals_slot *ts;
    size_t nt = pgr_totals(f->r, &ts, NULL);
    for (uint32_t i = 0; i < lf->nthreads; i++)
        lf->threads[i].tot_seen = 0;
    for (size_t k = 0; k < nt; k++) {
        const struct pgf_totals_slot *sl = &ts[k];
        struct pgl_thread *t = NULL;
        for (uint32_t i = 0; i < lf->nthreads && !t; i++)
            if (lf->threads[i].index == sl->thread)
                t = &lf->threads[i];
        if (!t) {
            struct pgl_thread *nt2 = realloc(lf->threads, (lf->nthreads + 1) * sizeof(*nt2));
            if (!nt2)
                return;
            lf->threads = nt2;
            t = &lf->threads[lf->nthreads++];
            memset(t, 0, sizeof(*t));
            t->index = sl->thread;
            uint32_t idx;
            const char *name = sl->thread == 0 ? "ended threads"
                             : pgc_hash_get(&f->thread_ids, sl->thread, &idx)
                                 ? f->threads[idx].name : "thread";
            t->name = pgc_utf8_dup(name, 0);
            if (sl->thread && pgc_hash_get(&f->thread_ids, sl->thread, &idx))
                t->tid = f->threads[idx].tid;
        }
        if (grow_rows(t, t->rows ? lf->ngroups : 0, lf->ngroups))
            return;
        if (!t->tot_seen) { /* first slot of the thread in this read */
            t->tot_seen = 1;
            t->from_totals = 1;
            t->cpu_ns = t->events = 0;
        }
        uint32_t gi = pgc_group_index(f, sl->group);
        if (gi >= lf->ngroups)
            continue;
        const struct pgf_totals *x = &sl->t;
        if (f->groups[gi].kind == 0) { /* PERFGROUP_KIND_TOP: the thread's events */
            t->cpu_ns = x->cpu_ns;
            t->events = x->events;
            continue;
        }
        pgc_row_from_totals(&t->rows[gi], sl);
    }
    for (uint32_t i = 0; i < lf->nthreads; i++) {
        struct pgl_thread *t = &lf->threads[i];
        if (t->from_totals && !t->tot_seen && t->rows) { /* folded away */
            memset(t->rows, 0, lf->ngroups * sizeof(*t->rows));
            t->cpu_ns = t->events = 0;
        }
    }
}

/* The recording's process still runs (and is not a later one that got its pid). */
static int pid_alive(const struct pgl_file *lf)
{
    return pgl_writer_runs(lf->pid, lf->start_monotonic_ns) != 0; /* -1: cannot tell, trust kill() */
}

/* The followed file opened again, as it was found (relative to its directory, no symlink,
 * regular), and still the same inode: fd, or -1 with why in msg. */
static int reopen(const struct pgl_set *s, const struct pgl_file *lf, char *msg, size_t len)
{
    int fd = lf->dir >= 0
                 ? openat(s->dirs[lf->dir].fd, lf->name,
                          O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
                 : open(lf->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        snprintf(msg, len, "cannot open: %s", errno == ELOOP ? "replaced by a symbolic link"
                                                             : strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_dev != lf->dev ||
        st.st_ino != lf->ino) {
        snprintf(msg, len, "replaced by another file since it was followed (not read)");
        close(fd);
        return -1;
    }
    return fd;
}

static void refresh_file(const struct pgl_set *s, struct pgl_file *lf)
{
    static const struct pgc_stream_cb cb = {begin_thread, on_record, end_thread};
    if (lf->final)
        return;
    int alive = pid_alive(lf); /* before the read: dead then, and not closed = killed */
    struct pgc_file f;
    struct pgc_error err = {0};
    pgc_hash_free(&lf->seen_next);
    char why[200];
    int fd = reopen(s, lf, why, sizeof(why));
    int rc = -1;
    if (fd < 0) {
        memset(&f, 0, sizeof(f));
        err.set = 1;
        snprintf(err.msg, sizeof(err.msg), "%s: %s", lf->path, why);
    } else {
        rc = pgc_file_follow_fd(&f, lf->path, fd, resume_at, lf, &err);
    }
    if (rc == 0) {
        /* group names by index: definitions only append, so indexes stay */
        if (f.ngroups > lf->ngroups) {
            char **ng = realloc(lf->groups, f.ngroups * sizeof(*ng));
            if (ng) {
                lf->groups = ng;
                for (uint32_t i = lf->ngroups; i < f.ngroups; i++)
                    ng[i] = pgc_utf8_dup(f.groups[i].name, 0);
                uint32_t old = lf->ngroups;
                lf->ngroups = f.ngroups;
                for (uint32_t i = 0; i < lf->nthreads; i++)
                    if (grow_rows(&lf->threads[i], old, f.ngroups))
                        lf->ngroups = old; /* out of memory: try again next time */
            }
        }
        struct follow F = {lf, &f, NULL};
        if (f.ngroups <= lf->ngroups)
            rc = pgc_file_stream(&f, &cb, &F, &err);
        else
            rc = -1;
    }
    /* keep what was read of the chunks still in the file; forget the others. After a
     * failure half-way, the chunks not reached keep what was read of them before. */
    for (size_t i = 0; rc != 0 && i < lf->seen.cap; i++) {
        uint32_t v;
        uint64_t k = lf->seen.keys[i];
        if (k != UINT64_MAX && !pgc_hash_get(&lf->seen_next, k, &v))
            pgc_hash_put(&lf->seen_next, k, lf->seen.vals[i]);
    }
    struct pgc_hash swap = lf->seen;
    lf->seen = lf->seen_next;
    lf->seen_next = swap;
    if (rc == 0) {
        lf->chunks_missed += pgr_chunks_skipped(f.r);
        lf->records_dropped = f.hdr.records_dropped;
        lf->chunks_recycled = f.hdr.chunks_recycled;
        lf->pid = f.pid;
        lf->ppid = f.ppid;
        lf->start_monotonic_ns = f.start_monotonic_ns;
        lf->program = dup_or_keep(lf->program, f.program);
        lf->error[0] = '\0';
        if (f.hdr.state == PGF_STATE_CLOSED)
            lf->state = PGL_EXITED;
        else
            lf->state = alive ? PGL_LIVE : PGL_GONE;
        lf->final = lf->state != PGL_LIVE;
        lf->refreshes++;
        if (f.has_totals)
            apply_totals(lf, &f);
    } else {
        /* the totals keep the records read before the failure (they were whole) */
        snprintf(lf->error, sizeof(lf->error), "%s", err.set ? err.msg : "unreadable");
        lf->state = PGL_ERROR;
        if (!alive)
            lf->final = 1;
    }
    pgc_file_close(&f);
}

void pgl_set_refresh(struct pgl_set *s)
{
    /* followed directories whole; the others (of followed files) for the children of live
     * processes */
    int live = 0;
    for (size_t i = 0; i < s->nfiles; i++)
        live |= !s->files[i].final;
    for (size_t i = 0; i < s->ndirs; i++)
        if (s->dirs[i].all || live)
            pgl_scan_dir(s, i);
    for (size_t i = 0; i < s->nfiles; i++)
        refresh_file(s, &s->files[i]);
}

void pgl_file_totals(const struct pgl_file *f, struct pgc_row *rows,
                     uint64_t *cpu_ns, uint64_t *events)
{
    *cpu_ns = *events = 0;
    for (uint32_t g = 0; g < f->ngroups; g++)
        rows[g].name = f->groups[g] ? f->groups[g] : "?";
    for (uint32_t i = 0; i < f->nthreads; i++) {
        const struct pgl_thread *t = &f->threads[i];
        *cpu_ns += t->cpu_ns;
        *events += t->events;
        for (uint32_t g = 0; g < f->ngroups && t->rows; g++)
            pgc_row_add(&rows[g], &t->rows[g]);
    }
}

const char *pgl_state_name(enum pgl_state s)
{
    switch (s) {
    case PGL_LIVE: return "running";
    case PGL_EXITED: return "exited";
    case PGL_GONE: return "gone";
    case PGL_ERROR: return "unreadable";
    }
    return "?";
}

void pgl_set_free(struct pgl_set *s)
{
    for (size_t i = 0; i < s->nfiles; i++) {
        struct pgl_file *f = &s->files[i];
        for (uint32_t g = 0; g < f->ngroups; g++)
            free(f->groups[g]);
        free(f->groups);
        for (uint32_t t = 0; t < f->nthreads; t++) {
            free(f->threads[t].name);
            free(f->threads[t].rows);
        }
        free(f->threads);
        pgc_hash_free(&f->seen);
        pgc_hash_free(&f->seen_next);
        free(f->path);
        free(f->name);
        free(f->program);
    }
    free(s->files);
    for (size_t i = 0; i < s->ndirs; i++) {
        free(s->dirs[i].path);
        close(s->dirs[i].fd);
    }
    free(s->dirs);
    pgc_hash_free(&s->not_ours);
    pgc_hash_free(&s->retry);
    pgc_hash_free(&s->told);
    memset(s, 0, sizeof(*s));
}
