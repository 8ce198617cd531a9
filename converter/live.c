/* SPDX-License-Identifier: MIT */
/*
 * live.c — follow recordings while their programs write them (see live.h): find the files
 * (argument, directory, /proc/PID/maps, fork children), re-read each one's definitions and
 * only its new records at every refresh, and keep cumulative per-thread, per-group totals.
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

/* ---- finding recordings ------------------------------------------------------------- */

/* Reads the file header of path if it is a recording: 1 = yes, 0 = no. */
static int read_header(const char *path, struct pgf_file_header *h, struct stat *st)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return 0;
    int ok = fstat(fd, st) == 0 && S_ISREG(st->st_mode) &&
             (uint64_t)st->st_size >= sizeof(*h) &&
             pread(fd, h, sizeof(*h), 0) == (ssize_t)sizeof(*h) &&
             memcmp(h->magic, PGF_MAGIC, PGF_MAGIC_LEN) == 0;
    close(fd);
    return ok;
}

static struct pgl_file *find_file(struct pgl_set *s, dev_t dev, ino_t ino)
{
    for (size_t i = 0; i < s->nfiles; i++)
        if (s->files[i].dev == dev && s->files[i].ino == ino)
            return &s->files[i];
    return NULL;
}

static int add_file(struct pgl_set *s, const char *path, const struct pgf_file_header *h,
                    const struct stat *st)
{
    if (find_file(s, st->st_dev, st->st_ino))
        return 0;
    struct pgl_file *nf = realloc(s->files, (s->nfiles + 1) * sizeof(*nf));
    if (!nf)
        return -1;
    s->files = nf;
    struct pgl_file *f = &s->files[s->nfiles];
    memset(f, 0, sizeof(*f));
    char prog[sizeof(h->program) + 1];
    memcpy(prog, h->program, sizeof(h->program));
    prog[sizeof(h->program)] = '\0';
    f->path = strdup(path);
    f->program = strdup(prog[0] ? prog : "program");
    if (!f->path || !f->program) {
        free(f->path);
        free(f->program);
        return -1;
    }
    f->dev = st->st_dev;
    f->ino = st->st_ino;
    f->pid = h->pid;
    f->ppid = h->ppid;
    f->state = PGL_LIVE;
    s->nfiles++;
    return 0;
}

/* A recording that is being created ("<name>.tmpXXXXXX", renamed into place when whole). */
static int is_temporary(const char *name)
{
    const char *t = strstr(name, ".tmp");
    return t && strlen(t) == 10;
}

static int followed_pid(const struct pgl_set *s, uint32_t pid)
{
    for (size_t i = 0; i < s->nfiles; i++)
        if (s->files[i].pid == pid)
            return 1;
    return 0;
}

static const char *base_name(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

/* name is "<a followed file of this pid>.execN": the file of its exec()ed image. */
static int followed_exec(const struct pgl_set *s, const char *name, uint32_t pid)
{
    for (size_t i = 0; i < s->nfiles; i++) {
        const char *b = base_name(s->files[i].path);
        size_t n = strlen(b);
        if (s->files[i].pid == pid && !strncmp(name, b, n) && !strncmp(name + n, ".exec", 5))
            return 1;
    }
    return 0;
}

/* New recordings in dir: all of them (a followed directory), or those whose parent is a
 * followed process (a fork child's file, whatever its name) or whose process is (the file
 * its exec()ed image writes). */
static void scan_dir(struct pgl_set *s, const char *dir, int all)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || is_temporary(e->d_name))
            continue;
        uint32_t v;
        if (perfgroup__map_get(&s->not_ours, (uint64_t)e->d_ino, &v))
            continue;
        char path[4096];
        if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
            continue;
        struct stat st;
        struct pgf_file_header h;
        if (!read_header(path, &h, &st)) {
            perfgroup__map_put(&s->not_ours, (uint64_t)e->d_ino, 1);
            continue;
        }
        if (find_file(s, st.st_dev, st.st_ino))
            continue;
        /* a child's file, or the file of a followed process's exec()ed image (.execN) */
        if (all || followed_pid(s, h.ppid) || followed_exec(s, e->d_name, h.pid))
            add_file(s, path, &h, &st);
        /* a recording of another process may become a child's later: not cached */
    }
    closedir(d);
}

static int add_dir(struct pgl_set *s, const char *dir)
{
    char **nd = realloc(s->dirs, (s->ndirs + 1) * sizeof(*nd));
    if (!nd)
        return -1;
    s->dirs = nd;
    if (!(s->dirs[s->ndirs] = strdup(dir)))
        return -1;
    s->ndirs++;
    scan_dir(s, dir, 1);
    return 0;
}

/* A mapping's path as /proc/PID/maps shows it, turned into a name that opens the file.
 * The runtime creates its file with O_TMPFILE and links it into place once written, so the
 * kernel names the mapping after the unnamed inode, "<dir>/#<ino> (deleted)", for the life of
 * the process: the file is found again by its inode number in that directory (dev too). A
 * file really deleted is still readable through /proc/PID/map_files/<range>, the last resort.
 * Returns 0 with out filled, -1 if neither names the mapped inode. */
static int resolve_mapped(long pid, const char *range, const char *path, unsigned long long ino,
                          char *out, size_t outlen)
{
    struct stat st;
    if (stat(path, &st) == 0 && (unsigned long long)st.st_ino == ino) {
        snprintf(out, outlen, "%s", path);
        return 0;
    }
    static const char deleted[] = " (deleted)";
    size_t n = strlen(path), dn = sizeof(deleted) - 1;
    if (n > dn && !strcmp(path + n - dn, deleted)) {
        char dir[4096];
        const char *slash = strrchr(path, '/');
        size_t len = slash ? (size_t)(slash - path) : 0;
        if (len == 0)
            len = 1; /* "/" */
        if (len < sizeof(dir)) {
            memcpy(dir, path, len);
            dir[len] = '\0';
            DIR *d = opendir(dir);
            struct dirent *e;
            int found = 0;
            while (d && !found && (e = readdir(d))) {
                if ((unsigned long long)e->d_ino != ino || e->d_name[0] == '.')
                    continue;
                if (snprintf(out, outlen, "%s/%s", len == 1 && dir[0] == '/' ? "" : dir,
                             e->d_name) < (int)outlen &&
                    stat(out, &st) == 0 && (unsigned long long)st.st_ino == ino)
                    found = 1;
            }
            if (d)
                closedir(d);
            if (found)
                return 0;
        }
    }
    if (snprintf(out, outlen, "/proc/%ld/map_files/%s", pid, range) < (int)outlen &&
        stat(out, &st) == 0 && (unsigned long long)st.st_ino == ino)
        return 0;
    return -1;
}

/* The recording a running process maps (MAP_SHARED, read-write), from /proc/PID/maps. */
static int add_pid(struct pgl_set *s, long pid, char *msg, size_t msglen)
{
    char maps[64];
    snprintf(maps, sizeof(maps), "/proc/%ld/maps", pid);
    FILE *m = fopen(maps, "re");
    if (!m) {
        snprintf(msg, msglen, "pid %ld: cannot read %s: %s", pid, maps, strerror(errno));
        return -1;
    }
    char line[4608];
    int found = 0;
    while (fgets(line, sizeof(line), m)) {
        /* address perms offset dev inode path */
        char perms[8], range[64];
        unsigned long long ino;
        int at = 0;
        if (sscanf(line, "%63s %7s %*s %*s %llu %n", range, perms, &ino, &at) < 3 || !at ||
            !ino)
            continue;
        if (perms[3] != 's' || perms[1] != 'w')
            continue;
        char *mapped = line + at;
        mapped[strcspn(mapped, "\n")] = '\0';
        if (mapped[0] != '/')
            continue;
        char path[4096];
        struct stat st;
        struct pgf_file_header h;
        if (resolve_mapped(pid, range, mapped, ino, path, sizeof(path)) == 0 &&
            read_header(path, &h, &st) && h.pid == (uint32_t)pid) {
            if (add_file(s, path, &h, &st) == 0)
                found = 1;
        }
    }
    fclose(m);
    if (!found) {
        snprintf(msg, msglen, "pid %ld: no perfgroup recording mapped (is it recording? "
                 "PERFGROUP_OUTPUT)", pid);
        return -1;
    }
    return 0;
}

int perfgroup__live_add(struct pgl_set *s, const char *arg, char *msg, size_t msglen)
{
    struct stat st;
    if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
        if (add_dir(s, arg)) {
            snprintf(msg, msglen, "%s: out of memory", arg);
            return -1;
        }
        return 0;
    }
    struct pgf_file_header h;
    if (read_header(arg, &h, &st))
        return add_file(s, arg, &h, &st) ? (snprintf(msg, msglen, "out of memory"), -1) : 0;
    char *end;
    errno = 0;
    long pid = strtol(arg, &end, 10);
    if (*arg && !*end && !errno && pid > 0 && pid <= 0x7fffffff)
        return add_pid(s, pid, msg, msglen);
    if (access(arg, F_OK) != 0)
        snprintf(msg, msglen, "%s: %s", arg, strerror(errno));
    else
        snprintf(msg, msglen, "%s: not a perfgroup recording", arg);
    return -1;
}

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
    perfgroup__map_get(&lf->seen, c->seq, &before);
    perfgroup__map_put(&lf->seen_next, c->seq, c->committed);
    return before;
}

static char *dup_or_keep(char *old, const char *s)
{
    if (old && !strcmp(old, s))
        return old;
    char *n = strdup(s);
    if (!n)
        return old;
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
    perfgroup__clock_init(&fresh, F->f);
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
        perfgroup__clock_update(&t->clk, F->f, r);
    } else if (r->kind == PGF_REC_EVENT) {
        t->cpu_ns += r->u.event.cpu_ns;
        t->events++;
        perfgroup__rows_add_event(t->rows, F->f, &t->clk, r);
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
                             : perfgroup__map_get(&f->thread_ids, sl->thread, &idx)
                                 ? f->threads[idx].name : "thread";
            t->name = strdup(name);
            if (sl->thread && perfgroup__map_get(&f->thread_ids, sl->thread, &idx))
                t->tid = f->threads[idx].tid;
        }
        if (grow_rows(t, t->rows ? lf->ngroups : 0, lf->ngroups))
            return;
        if (!t->tot_seen) { /* first slot of the thread in this read */
            t->tot_seen = 1;
            t->from_totals = 1;
            t->cpu_ns = t->events = 0;
        }
        uint32_t gi = perfgroup__group_index(f, sl->group);
        if (gi >= lf->ngroups)
            continue;
        const struct pgf_totals *x = &sl->t;
        if (f->groups[gi].kind == 0) { /* PERFGROUP_KIND_TOP: the thread's events */
            t->cpu_ns = x->cpu_ns;
            t->events = x->events;
            continue;
        }
        perfgroup__row_from_totals(&t->rows[gi], x);
    }
    for (uint32_t i = 0; i < lf->nthreads; i++) {
        struct pgl_thread *t = &lf->threads[i];
        if (t->from_totals && !t->tot_seen && t->rows) { /* folded away */
            memset(t->rows, 0, lf->ngroups * sizeof(*t->rows));
            t->cpu_ns = t->events = 0;
        }
    }
}

/* The recording's process still runs: its pid exists and is not a later process that got
 * the pid again (it started before the recording did: /proc/PID/stat's start time, in
 * CLOCK_BOOTTIME ticks, against the file's CLOCK_MONOTONIC start moved to BOOTTIME by
 * today's offset; a suspend since can only make a reused pid look older, never a live
 * process look newer). */
static int pid_alive(const struct pgl_file *lf)
{
    if (!lf->pid || (kill((pid_t)lf->pid, 0) != 0 && errno != EPERM))
        return 0;
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%" PRIu32 "/stat", lf->pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 1; /* no /proc: trust kill() */
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0 || lf->start_monotonic_ns <= 0)
        return 1;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    unsigned long long ticks = 0;
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
                     "%*d %*d %*d %*d %llu", &ticks) != 1)
        return 1;
    long hz = sysconf(_SC_CLK_TCK);
    struct timespec mono, boot;
    if (hz <= 0 || clock_gettime(CLOCK_MONOTONIC, &mono) || clock_gettime(CLOCK_BOOTTIME, &boot))
        return 1;
    double offset = (double)(boot.tv_sec - mono.tv_sec) + (boot.tv_nsec - mono.tv_nsec) / 1e9;
    double started = (double)ticks / (double)hz;
    double recording = (double)lf->start_monotonic_ns / 1e9 + offset;
    return started <= recording + 1.0; /* ticks are coarse (1/CLK_TCK s) */
}

static void refresh_file(struct pgl_file *lf)
{
    static const struct pgc_stream_cb cb = {begin_thread, on_record, end_thread};
    if (lf->final)
        return;
    int alive = pid_alive(lf); /* before the read: dead then, and not closed = killed */
    struct pgc_file f;
    struct pgc_error err = {0};
    perfgroup__map_free(&lf->seen_next);
    int rc = perfgroup__file_follow(&f, lf->path, resume_at, lf, &err);
    if (rc == 0) {
        /* group names by index: definitions only append, so indexes stay */
        if (f.ngroups > lf->ngroups) {
            char **ng = realloc(lf->groups, f.ngroups * sizeof(*ng));
            if (ng) {
                lf->groups = ng;
                for (uint32_t i = lf->ngroups; i < f.ngroups; i++)
                    ng[i] = strdup(f.groups[i].name);
                uint32_t old = lf->ngroups;
                lf->ngroups = f.ngroups;
                for (uint32_t i = 0; i < lf->nthreads; i++)
                    if (grow_rows(&lf->threads[i], old, f.ngroups))
                        lf->ngroups = old; /* out of memory: try again next time */
            }
        }
        struct follow F = {lf, &f, NULL};
        if (f.ngroups <= lf->ngroups)
            rc = perfgroup__file_stream(&f, &cb, &F, &err);
        else
            rc = -1;
    }
    /* keep what was read of the chunks still in the file; forget the others. After a
     * failure half-way, the chunks not reached keep what was read of them before. */
    for (size_t i = 0; rc != 0 && i < lf->seen.cap; i++) {
        uint32_t v;
        uint64_t k = lf->seen.keys[i];
        if (k != UINT64_MAX && !perfgroup__map_get(&lf->seen_next, k, &v))
            perfgroup__map_put(&lf->seen_next, k, lf->seen.vals[i]);
    }
    struct pgc_map swap = lf->seen;
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
    perfgroup__file_close(&f);
}

void perfgroup__live_refresh(struct pgl_set *s)
{
    for (size_t i = 0; i < s->ndirs; i++)
        scan_dir(s, s->dirs[i], 1);
    /* children: in the directory of each followed live file */
    for (size_t i = 0; i < s->nfiles; i++) {
        if (s->files[i].final)
            continue;
        char *dir = strdup(s->files[i].path);
        if (!dir)
            continue;
        char *slash = strrchr(dir, '/');
        if (slash)
            *(slash == dir ? slash + 1 : slash) = '\0';
        scan_dir(s, slash ? dir : ".", 0);
        free(dir);
    }
    for (size_t i = 0; i < s->nfiles; i++)
        refresh_file(&s->files[i]);
}

void perfgroup__live_file_totals(const struct pgl_file *f, struct pgc_row *rows,
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
            perfgroup__row_add(&rows[g], &t->rows[g]);
    }
}

const char *perfgroup__live_state_name(enum pgl_state s)
{
    switch (s) {
    case PGL_LIVE: return "running";
    case PGL_EXITED: return "exited";
    case PGL_GONE: return "gone";
    case PGL_ERROR: return "unreadable";
    }
    return "?";
}

void perfgroup__live_free(struct pgl_set *s)
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
        perfgroup__map_free(&f->seen);
        perfgroup__map_free(&f->seen_next);
        free(f->path);
        free(f->program);
    }
    free(s->files);
    for (size_t i = 0; i < s->ndirs; i++)
        free(s->dirs[i]);
    free(s->dirs);
    perfgroup__map_free(&s->not_ours);
    memset(s, 0, sizeof(*s));
}
