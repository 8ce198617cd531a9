/* SPDX-License-Identifier: MIT */
/*
 * gecko.c — writes recordings as one Gecko profile (format version 36) for the Firefox
 * Profiler: one process per recording (the root one at the top, the others, e.g. forked
 * children, as sub-processes with their own startTime), one thread per recorded thread,
 * categories per group, synthesised samples, markers with schemas, per-group CPU counters.
 *
 * Samples. The Gecko format has no sample weights, so the converter puts samples on a
 * regular grid (meta.interval) in trace mode, each carrying the group + function nesting
 * active at that instant; in stats mode every `interval` of a group's CPU time becomes one
 * sample under "event name > group", spread over the event, so sample counts in the call tree
 * are CPU shares.
 *
 * Trace intervals arrive at their exit (children before parents), so a sample's stack is
 * known from the leaf up. Pending samples are kept as runs (first tick, tick count, one level
 * id per depth) until an outermost interval closes them; then they are written. Memory grows
 * with the sample ticks under one still-open outermost interval, never with records.
 *
 * Streaming. Per thread, markers go straight to the output; samples go to a temporary spill
 * file copied in after them; string, frame and stack tables (unique entries only) are written
 * last. Counter samples go to per-thread spill files merged by time at the process's end.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "perfgroup.h"
#include "pgconv.h"

#define UNKNOWN UINT32_MAX
#define MAX_DEPTH 255
#define MAX_COUNTERS 16
#define MAX_EVENT_GROUPS 256
#define MAX_PENDING_RUNS (1u << 18)

/* ---- Categories (global: the front-end uses the root meta's list) --------------------- */
/* Function groups (PERFGROUP_KIND_FUNCTION, one per function) share one category: a colour
 * each would exhaust the palette and say nothing. */
/* The front-end supports 256 categories: the heaviest groups (by their whole-run CPU in the
 * file's totals, else in the order of their definitions) get one each, the rest share the
 * last, "Other groups" (CAT_MORE, listed only when used; their names stay in frames and
 * markers). */
enum { CAT_IDLE = 0, CAT_OTHER = 1, CAT_EVENT = 2, CAT_FUNCTIONS = 3, CAT_FIRST_GROUP = 4,
       CAT_MORE = 255 };
static const char *const group_colors[] = {"blue", "green", "orange", "purple", "yellow",
                                           "brown", "magenta", "red", "lightred"};

struct cats {
    char **names; /* group names, category = CAT_FIRST_GROUP + i */
    uint32_t n;
    int more;     /* groups beyond them: CAT_MORE */
    struct pgc_hash by_name;
};

static uint32_t cat_of_name(const struct cats *c, const char *name, uint32_t kind)
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
static int cats_add(struct cats *c, const struct pgc_file *f)
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

/* ---- Per-thread state ---------------------------------------------------------------- */
struct run {        /* pending trace samples: n ticks from t0 with the same levels */
    int64_t t0;
    uint32_t n;
    uint32_t nlev;  /* levels[0..nlev) in the pool at off */
    uint32_t off;
};

struct level {      /* one interval kind: the site and the groups it acquired */
    uint32_t site;
    uint32_t mask;
    /* its marker, computed once: name and category; function and file as string indexes
     * (unique-string fields) */
    uint32_t mname, mcat, fn, file, lib;
    int mready;
};

struct gthread {
    struct gecko *prof;
    struct pgc_file *f;
    struct pgc_thread *th;
    struct pgc_clock clk;
    /* tables */
    char **strings;
    uint32_t nstrings, capstrings;
    struct pgc_hash string_map;
    uint32_t *frame_loc, *frame_cat, *frame_line;
    uint32_t nframes, capframes;
    struct pgc_hash frame_map;
    uint32_t *stack_prefix, *stack_frame;
    uint32_t nstacks, capstacks;
    struct pgc_hash stack_map;
    /* samples */
    uint64_t nsamples;
    int capped;              /* hit opt->max_samples: no more samples for this thread */
    uint64_t quota;          /* its share of the output's samples (gecko.threads_left) */
    int is_main;             /* the process's GeckoMain (or its "until exec" thread) */
    int64_t last_sample_ns;
    int64_t next_tick;       /* trace: first tick not yet written */
    int ticks_started;
    struct run *runs;
    uint32_t nruns, capruns;
    uint32_t *pool;
    uint32_t npool, cappool;
    struct level *levels;
    uint32_t nlevels, caplevels;
    struct pgc_hash level_map;
    /* stats-mode accumulators, one per group of the file, + one for "outside groups" */
    uint64_t *acc;
    uint64_t cpu_done;       /* stats: CPU of the thread's events before the current one */
    uint64_t cpu_sampled;    /* stats: the thread's CPU up to its latest sample */
    struct pgc_grid grid;    /* per-group CPU counters */
    /* samples go to a spill file (markers, far more numerous in trace mode, go straight to
     * the output) and are copied in after the markers */
    FILE *spill;
    struct pgc_out *sw;      /* buffered writer on `spill` */
    uint64_t nmarkers;
    /* times */
    int64_t first_ns, last_ns;
    int have_time;
    uint32_t idle_stack;
    uint64_t last_ev_name;   /* name_string_id + 1 of the last event, 0 = none */
    uint32_t last_ev_loc;
};

struct gecko {
    const struct pgc_options *opt;
    struct pgc_out *out;
    struct pgc_error *err;
    struct cats cats;
    int64_t iv;                 /* sample interval, ns */
    uint64_t max_samples;       /* per thread */
    uint64_t samples_left;      /* for the whole output (pgc_row_budget) */
    uint64_t threads_left;      /* threads not begun yet, over every input: each thread may
                                 * take samples_left / threads_left (what a thread leaves
                                 * goes to the next), so no thread is left without samples */
    uint64_t rows_left;         /* counter rows, the same */
    int64_t max_span_ns;        /* max_samples * iv: longer spans are damaged input */
    /* current process */
    struct pgc_file *f;
    uint32_t main_thread;       /* index into f->threads of the GeckoMain thread */
    int main_written;
    int exec_follows;           /* a later recording of this pid (an exec'd image) */
    char until_exec[420];       /* then the main thread's name */
    int nthreads_written;
    FILE *cspill;               /* the process's counter rows, a segment per thread: one file
                                 * whatever the number of threads (file descriptors) */
    struct cseg *cseg;          /* per thread: its rows' [start, end) in cspill */
    uint32_t ncspill, cap_cseg;
    uint64_t *group_cpu;        /* per group of f: total CPU, to pick counter groups */
    /* meta.profilingStartTime/EndTime: what the process's threads covered (ns since its
     * start), and over every process, ns since the root's start (the root's meta is the one
     * the front-end reads, so it is written after the sub-processes) */
    int64_t plo, phi, glo, ghi;
    int64_t root_start_ns;      /* the root's start_realtime_ns */
    struct pgc_file *files;     /* every input */
    size_t nfiles;
    char pname[400];            /* the current process's name (process_name()) */
    struct gthread *t;
    uint64_t records_done, records_total;
    /* markers of "lazy" thread indexes (a thread that wrote a marker before the runtime's
     * core saw it) moved to the thread with the same tid; see collect_lazy() */
    uint32_t *merged_into;      /* per f->threads index: target index, or UNKNOWN */
    uint32_t nmerged_into;
    struct lazy_marker *lazy;
    uint32_t nlazy;
    int skip;                   /* the current thread is a merged lazy one: no output */
};

struct lazy_marker {
    uint32_t target;            /* f->threads index */
    uint32_t src;               /* f->threads index of the lazy thread */
    struct pgr_record rec;      /* a PGF_REC_MARKER; text points to `text` */
    char *text;
};

#define MAX_LAZY_MARKERS 65536

/* ---- Tables -------------------------------------------------------------------------- */
static int fail_oom(struct gecko *prof)
{
    if (!prof->err->set) {
        prof->err->set = 1;
        snprintf(prof->err->msg, sizeof(prof->err->msg), "%s: byte 0: out of memory", prof->f->path);
    }
    return -1;
}

static int grow(void **p, uint32_t *cap, uint32_t need, size_t elt)
{
    if (need <= *cap)
        return 0;
    uint32_t nc = *cap ? *cap : 64;
    while (nc < need)
        nc *= 2;
    void *np = realloc(*p, (size_t)nc * elt);
    if (!np)
        return -1;
    *p = np;
    *cap = nc;
    return 0;
}

static uint32_t intern_str(struct gthread *t, const char *s, size_t n)
{
    uint64_t h = pgc_hash_bytes(s, n);
    uint32_t v;
    /* chain on collision: probe h, h+1, ... until the string matches or is absent */
    for (uint64_t k = h;; k = (k + 0x9e3779b97f4a7c15ull) & ~(1ull << 63)) {
        if (!pgc_hash_get(&t->string_map, k, &v)) {
            if (grow((void **)&t->strings, &t->capstrings, t->nstrings + 1, sizeof(char *)))
                return UNKNOWN;
            char *c = malloc(n + 1);
            if (!c)
                return UNKNOWN;
            memcpy(c, s, n);
            c[n] = '\0';
            if (pgc_hash_put(&t->string_map, k, t->nstrings)) {
                free(c);
                return UNKNOWN;
            }
            t->strings[t->nstrings] = c;
            return t->nstrings++;
        }
        if (strlen(t->strings[v]) == n && memcmp(t->strings[v], s, n) == 0)
            return v;
    }
}

static uint32_t intern_frame(struct gthread *t, uint32_t loc, uint32_t cat, uint32_t line)
{
    if (loc == UNKNOWN)
        return UNKNOWN;
    uint64_t key = ((uint64_t)loc << 24) ^ ((uint64_t)cat << 2) ^ ((uint64_t)line << 40);
    uint32_t v;
    /* key collisions are possible in theory: verify and probe */
    for (;; key = (key * 0x9e3779b97f4a7c15ull + 1) & ~(1ull << 63)) {
        if (!pgc_hash_get(&t->frame_map, key, &v))
            break;
        if (t->frame_loc[v] == loc && t->frame_cat[v] == cat && t->frame_line[v] == line)
            return v;
    }
    uint32_t cap = t->capframes;
    if (grow((void **)&t->frame_loc, &cap, t->nframes + 1, 4))
        return UNKNOWN;
    cap = t->capframes;
    if (grow((void **)&t->frame_cat, &cap, t->nframes + 1, 4))
        return UNKNOWN;
    if (grow((void **)&t->frame_line, &t->capframes, t->nframes + 1, 4))
        return UNKNOWN;
    if (pgc_hash_put(&t->frame_map, key, t->nframes))
        return UNKNOWN;
    t->frame_loc[t->nframes] = loc;
    t->frame_cat[t->nframes] = cat;
    t->frame_line[t->nframes] = line;
    return t->nframes++;
}

/* prefix UNKNOWN = a root stack */
static uint32_t intern_stack(struct gthread *t, uint32_t prefix, uint32_t frame)
{
    if (frame == UNKNOWN)
        return UNKNOWN;
    uint64_t key = ((uint64_t)(prefix + 1u) << 32) | frame;
    uint32_t v;
    if (pgc_hash_get(&t->stack_map, key, &v))
        return v;
    uint32_t cap = t->capstacks;
    if (grow((void **)&t->stack_prefix, &cap, t->nstacks + 1, 4))
        return UNKNOWN;
    if (grow((void **)&t->stack_frame, &t->capstacks, t->nstacks + 1, 4))
        return UNKNOWN;
    if (pgc_hash_put(&t->stack_map, key, t->nstacks))
        return UNKNOWN;
    t->stack_prefix[t->nstacks] = prefix; /* always an earlier row (or none) */
    t->stack_frame[t->nstacks] = frame;
    return t->nstacks++;
}

static uint32_t label_frame(struct gthread *t, const char *label, uint32_t cat)
{
    return intern_frame(t, intern_str(t, label, strlen(label)), cat, 0);
}

static uint32_t group_cat(struct gthread *t, uint32_t gidx)
{
    return gidx < t->f->ngroups
               ? cat_of_name(&t->prof->cats, t->f->groups[gidx].name, t->f->groups[gidx].kind)
               : CAT_OTHER;
}

/* "function (in plugin-3.so)": a native function whose resource is the object its code is in
 * (the Firefox Profiler shows one add-on's `addon_run` apart from another's); "function
 * (file.c) (in lib)" where the lib has another function of that name in another file. */
static uint32_t function_frame(struct gthread *t, uint32_t site, uint32_t cat)
{
    if (site >= t->f->nsites)
        return label_frame(t, "(unknown function)", cat);
    const struct pgc_site *s = &t->f->sites[site];
    const char *file = strrchr(s->file, '/');
    file = file ? file + 1 : s->file;
    size_t n = strlen(s->display) + strlen(file) + strlen(s->lib) + 16;
    char stackbuf[512];
    char *b = n <= sizeof(stackbuf) ? stackbuf : malloc(n);
    if (!b)
        return UNKNOWN;
    if (s->name_shared)
        snprintf(b, n, "%s (%s) (in %s)", s->display, file[0] ? file : "?", s->lib);
    else
        snprintf(b, n, "%s (in %s)", s->display, s->lib);
    uint32_t fr = intern_frame(t, intern_str(t, b, strlen(b)), cat, s->line);
    if (b != stackbuf)
        free(b);
    return fr;
}

/* ---- Output helpers ------------------------------------------------------------------ */
static void out_ms(struct pgc_out *o, int64_t ns)
{
    pgc_out_fixed(o, ns, 1000000);
}

static void write_sample(struct gthread *t, uint32_t stack, int64_t ns, int64_t cpu_delta_ns)
{
    struct pgc_out *o = t->sw;
    if (t->nsamples >= t->prof->max_samples || t->nsamples >= t->quota) {
        t->capped = 1;
        return;
    }
    t->prof->samples_left--;
    if (ns < t->last_sample_ns)
        ns = t->last_sample_ns; /* sample times never go back */
    t->last_sample_ns = ns;
    PGC_SEP(o, t->nsamples, "\n[");
    if (stack == UNKNOWN)
        PGC_LIT(o, "null");
    else
        pgc_out_u64(o, stack);
    PGC_LIT(o, ",");
    out_ms(o, ns);
    if (cpu_delta_ns < 0) {
        PGC_LIT(o, ",0]"); /* trace mode: no per-sample CPU reading, no threadCPUDelta */
    } else {
        PGC_LIT(o, ",0,");
        pgc_out_i64(o, cpu_delta_ns);
        PGC_LIT(o, "]");
    }
    t->nsamples++;
}

/* A row of the markers table, straight to the output; `payload` is the data object. */
static void marker_row(struct gthread *t, uint32_t name, int64_t start, int64_t end, int phase,
                       uint32_t cat, const struct pgc_out *payload)
{
    struct pgc_out *m = t->prof->out;
    if (name == UNKNOWN)
        return;
    PGC_SEP(m, t->nmarkers, "\n[");
    pgc_out_u64(m, name);
    PGC_LIT(m, ",");
    out_ms(m, start);
    PGC_LIT(m, ",");
    if (phase == 0)
        PGC_LIT(m, "null");
    else
        out_ms(m, end < start ? start : end);
    PGC_LIT(m, ",");
    pgc_out_u64(m, (uint64_t)phase);
    PGC_LIT(m, ",");
    pgc_out_u64(m, cat);
    PGC_LIT(m, ",");
    pgc_out_raw(m, payload->buf, payload->len);
    PGC_LIT(m, "]");
    t->nmarkers++;
}

/* A small payload builder on the stack: {"type":"...", ...}. Overlong payloads are cut at a
 * field boundary, never mid-token. */
struct payload {
    struct pgc_out o; /* used only as a buffer: f is NULL and it is never flushed */
};

static void pl_begin(struct pgc_out *p, const char *type)
{
    p->f = NULL;
    p->len = 0;
    p->err = 0;
    PGC_LIT(p, "{\"type\":\"");
    pgc_out_str(p, type);
    PGC_LIT(p, "\"");
}

static int pl_room(struct pgc_out *p, size_t n)
{
    return p->len + n + 8 < sizeof(p->buf);
}

static void pl_key(struct pgc_out *p, const char *k)
{
    PGC_LIT(p, ",\"");
    pgc_out_str(p, k);
    PGC_LIT(p, "\":");
}

static void pl_str(struct pgc_out *p, const char *k, const char *v, size_t n)
{
    if (n > 4096)
        n = 4096;
    if (!pl_room(p, n * 6 + strlen(k) + 8))
        return;
    pl_key(p, k);
    pgc_out_json_str(p, v, n);
}

static void pl_ms(struct pgc_out *p, const char *k, int64_t ns)
{
    if (!pl_room(p, 64))
        return;
    pl_key(p, k);
    out_ms(p, ns);
}

static void pl_u64(struct pgc_out *p, const char *k, uint64_t v)
{
    if (!pl_room(p, 64))
        return;
    pl_key(p, k);
    pgc_out_u64(p, v);
}

static void pl_end(struct pgc_out *p)
{
    PGC_LIT(p, "}");
}

/* ---- Time ---------------------------------------------------------------------------- */
static int64_t tns(struct gthread *t, uint64_t tsc)
{
    return pgc_clock_ns(&t->clk, tsc);
}

static void seen(struct gthread *t, int64_t ns)
{
    if (!t->have_time) {
        t->first_ns = t->last_ns = ns;
        t->have_time = 1;
    }
    if (ns < t->first_ns)
        t->first_ns = ns;
    if (ns > t->last_ns)
        t->last_ns = ns;
}

/* ---- Trace-mode samples -------------------------------------------------------------- */
static uint32_t level_id(struct gthread *t, uint32_t site, uint32_t mask)
{
    uint64_t key = ((uint64_t)site << 8) | (mask & 0xff);
    uint32_t v;
    if (pgc_hash_get(&t->level_map, key, &v))
        return v;
    if (grow((void **)&t->levels, &t->caplevels, t->nlevels + 1, sizeof(struct level)))
        return UNKNOWN;
    if (pgc_hash_put(&t->level_map, key, t->nlevels))
        return UNKNOWN;
    t->levels[t->nlevels] = (struct level){site, mask & 0xff, UNKNOWN, CAT_OTHER, 0, 0, 0, 0};
    return t->nlevels++;
}

/* The Gecko stack for a run's levels: for each level, a label frame where the group changes
 * (the first group the pair acquired that is not the current one, in its category: a group
 * acquired again, e.g. by the next event's first frame, or a file group acquired with an
 * attribute group, is not labelled again), then the function (in the current group's
 * category). */
static uint32_t levels_stack(struct gthread *t, const uint32_t *lev, uint32_t n)
{
    uint32_t stack = UNKNOWN, cat = CAT_OTHER, cur = UNKNOWN;
    for (uint32_t d = 0; d < n; d++) {
        if (lev[d] == UNKNOWN || lev[d] >= t->nlevels)
            continue;
        const struct level *l = &t->levels[lev[d]];
        const struct pgc_site *s = l->site < t->f->nsites ? &t->f->sites[l->site] : NULL;
        for (uint32_t b = 0; s && b < s->ngroups && b < 8; b++) {
            if (!(l->mask & (1u << b)) || s->groups[b] == cur)
                continue;
            cur = s->groups[b];
            cat = group_cat(t, cur);
            stack = intern_stack(t, stack, label_frame(t, t->f->groups[cur].name, cat));
            break;
        }
        if (s && l->mask == 0 && stack == UNKNOWN && s->ngroups)
            cat = group_cat(t, s->groups[0]); /* a re-entry seen without its first entry */
        stack = intern_stack(t, stack, function_frame(t, l->site, cat));
    }
    return stack;
}

static void idle_until(struct gthread *t, int64_t until)
{
    if (t->capped) {
        t->next_tick = until;
        return;
    }
    if (!t->ticks_started) { /* no idle samples before the thread's first activity */
        t->next_tick = until;
        t->ticks_started = 1;
    }
    for (; t->next_tick < until && !t->capped; t->next_tick += t->prof->iv)
        write_sample(t, t->idle_stack, t->next_tick, -1);
    if (t->capped)
        t->next_tick = until;
}

static void flush_runs(struct gthread *t)
{
    for (uint32_t i = 0; i < t->nruns; i++) {
        struct run *r = &t->runs[i];
        idle_until(t, r->t0);
        uint32_t st = levels_stack(t, t->pool + r->off, r->nlev);
        for (uint32_t k = 0; k < r->n && !t->capped; k++)
            write_sample(t, st, r->t0 + (int64_t)k * t->prof->iv, -1);
        t->next_tick = r->t0 + (int64_t)r->n * t->prof->iv;
    }
    t->nruns = 0;
    t->npool = 0;
}

static int push_run(struct gthread *t, struct run **tmp, uint32_t *ntmp, uint32_t *cap,
                    int64_t t0, uint32_t n, uint32_t nlev, uint32_t off)
{
    if (*ntmp) {
        struct run *p = &(*tmp)[*ntmp - 1];
        if (p->t0 + (int64_t)p->n * t->prof->iv == t0 && p->nlev == nlev &&
            memcmp(t->pool + p->off, t->pool + off, nlev * 4) == 0) {
            p->n += n;
            return 0;
        }
    }
    if (grow((void **)tmp, cap, *ntmp + 1, sizeof(struct run)))
        return -1;
    (*tmp)[(*ntmp)++] = (struct run){t0, n, nlev, off};
    return 0;
}

static int trace_interval(struct gthread *t, uint32_t lid, uint32_t depth, int64_t s, int64_t e)
{
    int64_t iv = t->prof->iv;
    if (depth > MAX_DEPTH)
        depth = MAX_DEPTH;
    int64_t a = s > 0 ? (s + iv - 1) / iv * iv : s / iv * iv;
    if (t->ticks_started && a < t->next_tick)
        a = t->next_tick; /* ticks already written (bad nesting in the input) stay written */
    if (a < e) {
        /* the tail runs at or after a are this interval's descendants: give them level depth */
        uint32_t first = t->nruns;
        while (first > 0 && t->runs[first - 1].t0 >= a)
            first--;
        static __thread struct run *tmp;
        static __thread uint32_t captmp;
        uint32_t ntmp = 0;
        int64_t cur = a;
        for (uint32_t i = first; i <= t->nruns; i++) {
            int64_t next = i < t->nruns ? t->runs[i].t0 : e;
            if (next > e)
                next = e;
            if (cur < next) { /* a gap: ticks where only this interval is known */
                uint32_t n = (uint32_t)((next - cur + iv - 1) / iv);
                if (grow((void **)&t->pool, &t->cappool, t->npool + depth + 1, 4))
                    return -1;
                uint32_t off = t->npool;
                for (uint32_t d = 0; d < depth; d++)
                    t->pool[off + d] = UNKNOWN;
                t->pool[off + depth] = lid;
                t->npool += depth + 1;
                if (push_run(t, &tmp, &ntmp, &captmp, cur, n, depth + 1, off))
                    return -1;
                cur += (int64_t)n * iv;
            }
            if (i == t->nruns)
                break;
            struct run r = t->runs[i];
            if (r.nlev > depth)
                t->pool[r.off + depth] = lid;
            if (push_run(t, &tmp, &ntmp, &captmp, r.t0, r.n, r.nlev, r.off))
                return -1;
            cur = r.t0 + (int64_t)r.n * iv;
        }
        if (grow((void **)&t->runs, &t->capruns, first + ntmp, sizeof(struct run)))
            return -1;
        memcpy(t->runs + first, tmp, ntmp * sizeof(struct run));
        t->nruns = first + ntmp;
    }
    /* depth 0 is an outermost pair (the runtime's stack index): nothing that comes later
     * can cover the ticks before its end. A bound on pending ticks keeps memory flat when
     * the outermost function runs for the whole program (e.g. main is instrumented). */
    if (depth == 0 || t->nruns > MAX_PENDING_RUNS)
        flush_runs(t);
    return 0;
}

/* ---- Stats-mode samples -------------------------------------------------------------- */
/* double -> u64 without the undefined conversion of values beyond the range */
static uint64_t to_u64(double v)
{
    return v > 0 ? (v < 1.8e19 ? (uint64_t)v : (uint64_t)1.8e19) : 0;
}

/* A sample's threadCPUDelta: the thread's CPU between its previous sample and `at`, each
 * event's measured CPU spread evenly over its span (as the counters spread it). Real CPU, not
 * one interval per sample: a sample after an idle gap reads low, the deltas add up to the
 * thread's CPU. */
static int64_t stats_cpu_delta(struct gthread *t, uint64_t cpu, int64_t b, int64_t span,
                               int64_t at)
{
    double part = span > 0 ? (double)cpu * (double)(at - b) / (double)span : (double)cpu;
    uint64_t upto = t->cpu_done + to_u64(part);
    if (upto <= t->cpu_sampled)
        return 0; /* a nested loop's outer event: its samples follow the inner ones */
    uint64_t d = upto - t->cpu_sampled;
    t->cpu_sampled = upto;
    return d < (uint64_t)INT64_MAX ? (int64_t)d : INT64_MAX;
}

static void stats_event(struct gthread *t, const struct pgr_record *r, int64_t b, int64_t e,
                        uint32_t name_frame_loc)
{
    int64_t iv = t->prof->iv;
    uint32_t ng = t->f->ngroups;
    uint64_t sum = 0, cpu = r->u.event.cpu_ns;
    uint32_t ev_stack = UNKNOWN; /* interned only when a sample needs it */
    /* the thread's top group is the whole event: the event frame stands for it */
    for (uint32_t i = 0; i < r->u.event.ngroups; i++) {
        uint32_t gi = pgc_group_index(t->f, r->u.event.groups[i].group_id);
        if (gi < ng && t->f->groups[gi].kind != 0)
            sum += r->u.event.groups[i].cpu_ns;
    }
    double scale = sum > cpu && sum ? (double)cpu / (double)sum : 1.0; /* nested groups */
    uint64_t k_total = 0;
    uint32_t counts[MAX_EVENT_GROUPS + 1];
    uint32_t idx[MAX_EVENT_GROUPS + 1];
    uint32_t nk = 0;
    for (uint32_t i = 0; i < r->u.event.ngroups && nk < MAX_EVENT_GROUPS; i++) {
        uint32_t gi = pgc_group_index(t->f, r->u.event.groups[i].group_id);
        if (gi >= ng || t->f->groups[gi].kind == 0)
            continue;
        t->acc[gi] += to_u64((double)r->u.event.groups[i].cpu_ns * scale);
        uint64_t k = t->acc[gi] / (uint64_t)iv;
        t->acc[gi] -= k * (uint64_t)iv;
        if (k > 1000000)
            k = 1000000;
        counts[nk] = (uint32_t)k;
        idx[nk++] = gi;
        k_total += k;
    }
    uint64_t scaled = to_u64((double)sum * scale);
    uint64_t rest = cpu > scaled ? cpu - scaled : 0;
    t->acc[ng] += rest;
    uint64_t krest = t->acc[ng] / (uint64_t)iv;
    t->acc[ng] -= krest * (uint64_t)iv;
    if (krest > 1000000)
        krest = 1000000;
    counts[nk] = (uint32_t)krest;
    idx[nk++] = UNKNOWN;
    k_total += krest;
    if (!k_total) {
        t->cpu_done += cpu;
        return;
    }
    int64_t span = e > b ? e - b : 0;
    uint64_t j = 0;
    for (uint32_t i = 0; i < nk; i++) {
        uint32_t st;
        if (!counts[i])
            continue;
        if (ev_stack == UNKNOWN)
            ev_stack = intern_stack(t, UNKNOWN, intern_frame(t, name_frame_loc, CAT_EVENT, 0));
        if (idx[i] == UNKNOWN)
            st = intern_stack(t, ev_stack, label_frame(t, "(outside groups)", CAT_IDLE));
        else
            st = intern_stack(t, ev_stack,
                              label_frame(t, t->f->groups[idx[i]].name, group_cat(t, idx[i])));
        for (uint32_t k = 0; k < counts[i] && !t->capped; k++, j++) {
            int64_t at = b + (int64_t)((double)span * ((double)j + 0.5) / (double)k_total);
            write_sample(t, st, at, stats_cpu_delta(t, cpu, b, span, at));
        }
    }
    t->cpu_done += cpu;
}

/* ---- Records ------------------------------------------------------------------------- */
struct crec { int64_t ns; uint32_t group, pad; uint64_t count; };
/* A thread's counter rows in the process's spill file, read back through a small buffer. */
struct cseg {
    off_t start, end, pos;
    uint32_t n, i;
    struct crec buf[32];
};

static void counter_spill(struct gthread *t, int64_t ns, uint32_t group, uint64_t count)
{
    FILE *s = t->prof->cspill;
    struct crec rec = {ns, group, 0, count};
    if (s && fwrite(&rec, sizeof(rec), 1, s) != 1 && !t->prof->out->err)
        t->prof->out->err = errno ? errno : EIO;
}

/* Per-group CPU counters: the rows of cpugrid.c, per thread to a spill file merged by time
 * at the process's end. */
static void counter_row(void *ctx, uint32_t gi, int64_t ns, uint64_t count)
{
    counter_spill(ctx, ns, gi, count);
}

/* An event's [begin, end] in ns, ordered and bounded, seen by the thread's time range. */
static void event_span(struct gthread *t, uint64_t btsc, uint64_t etsc, int64_t *bp, int64_t *ep)
{
    int64_t b = tns(t, btsc), e = tns(t, etsc);
    if (e < b)
        e = b;
    if (e - b > t->prof->max_span_ns)
        e = b + t->prof->max_span_ns;
    seen(t, b);
    seen(t, e);
    *bp = b, *ep = e;
}

static void event_record(struct gthread *t, const struct pgr_record *r)
{
    int64_t b, e;
    event_span(t, r->u.event.begin_tsc, r->u.event.end_tsc, &b, &e);
    uint32_t loc;
    if (t->last_ev_name == r->u.event.name_string_id + 1ull && r->u.event.name_string_id) {
        loc = t->last_ev_loc; /* event names repeat: skip the lookups */
    } else {
        const char *name = pgc_string_text(t->f, r->u.event.name_string_id);
        if (!name)
            name = r->u.event.flags & PGF_EVENT_F_IMPLICIT ? "(implicit event)" : "(event)";
        loc = intern_str(t, name, strlen(name));
        t->last_ev_name = r->u.event.name_string_id + 1ull;
        t->last_ev_loc = loc;
    }
    if (t->f->mode != PGF_MODE_TRACE)
        stats_event(t, r, b, e, loc);

    /* counters and the marker payload */
    struct pgc_out pl;
    pl_begin(&pl, "PerfgroupEvent");
    pl_ms(&pl, "cpu", (int64_t)r->u.event.cpu_ns);
    pl_ms(&pl, "wall", e - b);
    uint64_t best = 0;
    uint32_t best_cat = CAT_EVENT;
    /* "groups": "name 1.25 ms, other 0.5 ms", written straight into the payload */
    pl_key(&pl, "groups");
    PGC_LIT(&pl, "\"");
    uint32_t listed = 0;
    for (uint32_t i = 0; i < r->u.event.ngroups; i++) {
        const struct pgr_event_group *eg = &r->u.event.groups[i];
        uint32_t gi = pgc_group_index(t->f, eg->group_id);
        if (gi >= t->f->ngroups)
            continue;
        t->prof->group_cpu[gi] += eg->cpu_ns;
        pgc_grid_add(&t->grid, gi, b, e, eg->cpu_ns);
        if (t->f->groups[gi].kind != 0 && eg->cpu_ns >= best) {
            best = eg->cpu_ns;
            best_cat = group_cat(t, gi);
        }
        const char *gn = t->f->groups[gi].name;
        size_t gnl = strlen(gn);
        if (listed < 64 && pl_room(&pl, gnl * 6 + 64)) {
            if (listed++)
                PGC_LIT(&pl, ", ");
            pgc_out_json_chars(&pl, gn, gnl);
            PGC_LIT(&pl, " ");
            pgc_out_fixed(&pl, (int64_t)(eg->cpu_ns / 1000 * 1000), 1000000);
            PGC_LIT(&pl, " ms");
        }
    }
    /* groups not named here: past 64, and those the record could not list (groups_more) */
    uint64_t unnamed = (uint64_t)r->u.event.ngroups - listed + r->u.event.groups_more;
    if (unnamed && pl_room(&pl, 64)) {
        if (listed)
            PGC_LIT(&pl, ", and ");
        pgc_out_u64(&pl, unnamed);
        PGC_LIT(&pl, " more groups");
    }
    PGC_LIT(&pl, "\"");
    int jank = r->u.event.cpu_ns > (uint64_t)PGC_JANK_MS * 1000000; /* CPU, as everywhere */
    pl_str(&pl, "jank", jank ? "yes" : "no", jank ? 3 : 2);
    static const char *const flag_text[8] = {
        "", "implicit", "discarded", "implicit discarded", "nested-loop", "implicit nested-loop",
        "discarded nested-loop", "implicit discarded nested-loop"};
    const char *flags = flag_text[r->u.event.flags & 7];
    pl_str(&pl, "flags", flags, strlen(flags));
    pl_end(&pl);
    marker_row(t, loc, b, e, 1, best_cat, &pl);
}

static void interval_record(struct gthread *t, const struct pgr_record *r)
{
    int64_t s = tns(t, r->u.interval.start_tsc);
    /* the end through the same mapping as the start: nested intervals ending together stay
     * nested to the nanosecond (Chrome output, the same ends) */
    int64_t d = pgc_clock_ns(&t->clk, r->u.interval.start_tsc + r->u.interval.duration) - s;
    if (d < 0 || d > t->prof->max_span_ns) /* a duration no sample budget covers: damaged input */
        d = t->prof->max_span_ns;
    int64_t e = s + d;
    seen(t, s);
    seen(t, e);
    uint32_t site = pgc_site_index(t->f, r->u.interval.function_id);
    uint32_t lid = level_id(t, site, r->u.interval.group_mask);
    if ((lid == UNKNOWN || trace_interval(t, lid, r->u.interval.depth, s, e)) && !t->prof->out->err)
        t->prof->out->err = ENOMEM;
    if (!r->u.interval.group_mask || site == UNKNOWN || lid == UNKNOWN || t->prof->opt->no_interval_markers)
        return;
    /* a group interval: one marker named after the group(s) the pair acquired */
    struct level *l = &t->levels[lid];
    const struct pgc_site *st = &t->f->sites[site];
    if (!l->mready) {
        char name[256];
        size_t nl = 0;
        for (uint32_t b = 0; b < st->ngroups && b < 8; b++) {
            if (!(r->u.interval.group_mask & (1u << b)))
                continue;
            const char *gn = t->f->groups[st->groups[b]].name;
            if (nl == 0)
                l->mcat = group_cat(t, st->groups[b]);
            int n = snprintf(name + nl, sizeof(name) - nl, "%s%s", nl ? "+" : "", gn);
            if (n > 0)
                nl += (size_t)n < sizeof(name) - nl ? (size_t)n : sizeof(name) - nl - 1;
        }
        l->mname = nl ? intern_str(t, name, nl) : UNKNOWN;
        l->fn = intern_str(t, st->display, strlen(st->display));
        l->file = intern_str(t, st->file, strlen(st->file));
        l->lib = intern_str(t, st->lib, strlen(st->lib));
        l->mready = 1;
    }
    if (l->mname == UNKNOWN || l->fn == UNKNOWN || l->file == UNKNOWN || l->lib == UNKNOWN)
        return;
    struct pgc_out pl;
    pl_begin(&pl, "PerfgroupInterval");
    pl_u64(&pl, "function", l->fn);
    pl_u64(&pl, "lib", l->lib);
    pl_u64(&pl, "file", l->file);
    pl_u64(&pl, "line", st->line);
    pl_u64(&pl, "depth", r->u.interval.depth);
    pl_end(&pl);
    marker_row(t, l->mname, s, e, 1, l->mcat, &pl);
}

static void user_marker(struct gthread *t, const struct pgr_record *r)
{
    int64_t s = tns(t, r->u.marker.start_tsc), e = tns(t, r->u.marker.end_tsc);
    seen(t, s);
    if (e > s)
        seen(t, e);
    const char *name = pgc_string_text(t->f, r->u.marker.name_string_id);
    if (!name)
        name = "(marker)";
    struct pgc_out pl;
    pl_begin(&pl, "PerfgroupMarker");
    pl_str(&pl, "text", r->u.marker.text.ptr, r->u.marker.text.len);
    pl_end(&pl);
    int instant = r->u.marker.end_tsc == r->u.marker.start_tsc || e < s;
    marker_row(t, intern_str(t, name, strlen(name)), s, e, instant ? 0 : 1, CAT_OTHER, &pl);
}

static void dropped_marker(struct gthread *t, const struct pgr_record *r)
{
    struct pgc_out pl;
    pl_begin(&pl, "PerfgroupDropped");
    pl_u64(&pl, "records", r->u.dropped.records);
    pl_u64(&pl, "bytes", r->u.dropped.bytes);
    pl_u64(&pl, "chunks", r->u.dropped.chunks);
    pl_end(&pl);
    marker_row(t, intern_str(t, "Records dropped", 15), t->last_ns, 0, 0, CAT_OTHER, &pl);
}

static void overhead_marker(struct gthread *t, const struct pgr_record *r)
{
    struct pgc_out pl;
    pl_begin(&pl, "PerfgroupOverhead");
    pl_ms(&pl, "commit", (int64_t)r->u.overhead.commit_ns);
    pl_u64(&pl, "commits", r->u.overhead.commits);
    pl_u64(&pl, "slowPaths", r->u.overhead.slow_paths);
    pl_u64(&pl, "resyncs", r->u.overhead.resyncs);
    pl_u64(&pl, "dropped", r->u.overhead.dropped);
    pl_end(&pl);
    marker_row(t, intern_str(t, "Runtime overhead", 16), t->last_ns, 0, 0, CAT_OTHER, &pl);
}

static void clock_record(struct gthread *t, const struct pgr_record *r)
{
    pgc_clock_update(&t->clk, t->f, r);
}

static int on_record(void *ctx, const struct pgr_record *r)
{
    struct gecko *prof = ctx;
    struct gthread *t = prof->t;
    if (prof->skip)
        return 0;
    switch (r->kind) {
    case PGF_REC_CLOCK: clock_record(t, r); break;
    case PGF_REC_EVENT: event_record(t, r); break;
    case PGF_REC_INTERVAL: interval_record(t, r); break;
    case PGF_REC_MARKER: user_marker(t, r); break;
    case PGF_REC_DROPPED: dropped_marker(t, r); break;
    case PGF_REC_OVERHEAD: overhead_marker(t, r); break;
    case PGF_REC_THREAD_END: seen(t, tns(t, r->u.thread_end.end_tsc)); break;
    default: break;
    }
    if ((++prof->records_done & 0xffff) == 0)
        pgc_progress(prof->opt, prof->records_done, prof->records_total);
    return prof->out->err ? -1 : 0;
}

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

static int begin_thread(void *ctx, uint32_t ti)
{
    struct gecko *prof = ctx;
    if (ti < prof->nmerged_into && prof->merged_into[ti] != UNKNOWN) {
        prof->skip = 1; /* its markers went to the thread with its tid */
        return 0;
    }
    struct gthread *t = calloc(1, sizeof(*t));
    if (!t)
        return fail_oom(prof);
    prof->t = t;
    t->prof = prof;
    t->f = prof->f;
    t->th = &prof->f->threads[ti];
    t->last_sample_ns = INT64_MIN;
    t->quota = prof->samples_left / (prof->threads_left > 1 ? prof->threads_left : 1);
    if (prof->threads_left > 1)
        prof->threads_left--;
    pgc_clock_init(&t->clk, prof->f);
    t->acc = calloc(prof->f->ngroups + 1, sizeof(*t->acc));
    int grid_rc = pgc_grid_init(&t->grid, prof->f->ngroups, prof->iv, prof->max_samples, counter_row, t);
    t->grid.budget = &prof->rows_left;
    t->spill = tmpfile();
    t->sw = malloc(sizeof(*t->sw));
    if (t->sw)
        pgc_out_init(t->sw, t->spill);
    /* doubling: one more segment per thread was quadratic (5000 threads: 43 s under ASan,
     * whose realloc always copies) */
    int seg_rc = grow((void **)&prof->cseg, &prof->cap_cseg, prof->ncspill + 1, sizeof(*prof->cseg));
    if (!t->acc || grid_rc || !t->spill || !t->sw || seg_rc)
        return fail_oom(prof);
    if (!prof->cspill && !(prof->cspill = tmpfile()))
        return fail_oom(prof);
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
    t->idle_stack = intern_stack(t, UNKNOWN, label_frame(t, "(outside instrumented functions)", CAT_IDLE));
    pgc_out_raw(prof->out, markers_schema, sizeof(markers_schema) - 1);
    return 0;
}

static void gthread_free(struct gthread *t)
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

/* The thread's event the file still has open (its slot, not stale: docs/file-format.md "Open
 * events"): a PerfgroupEvent marker from its begin to the slot's last refresh, flags
 * "unfinished", its groups so far without a CPU split (the slot has none). Threads stream whole (the reader orders chunks by
 * thread), so the slot's staleness is known when the thread ends. */
static void unfinished_marker(struct gthread *t)
{
    const struct pgc_file *f = t->f;
    size_t lo = pgc_open_find(f, t->th->index);
    if (lo == f->nopen || (f->open_stale[lo] & 1))
        return;
    const struct pgf_open_slot *s = &f->open[lo];
    int64_t b, e;
    event_span(t, s->begin_tsc, s->now_tsc, &b, &e);
    const char *name = s->name ? pgc_string_text(f, s->name) : NULL;
    if (!name)
        name = (s->flags & PGF_EVENT_F_IMPLICIT) ? "(implicit event)" : "(event)";
    struct pgc_out pl;
    pl_begin(&pl, "PerfgroupEvent");
    uint64_t cpu = (s->flags & PGF_OPEN_F_CPU) ? s->cpu_ns : 0;
    pl_ms(&pl, "cpu", (int64_t)(cpu < (uint64_t)(e - b) ? cpu : (uint64_t)(e - b)));
    pl_ms(&pl, "wall", e - b);
    /* its groups so far, no CPU each yet: "a (running), b" */
    char gl[1024];
    size_t gn = pgc_open_groups(f, s, gl, sizeof gl);
    if (!gn)
        gn = (size_t)snprintf(gl, sizeof gl, "none yet");
    pl_str(&pl, "groups", gl, gn);
    pl_str(&pl, "jank", cpu > (uint64_t)PGC_JANK_MS * 1000000 ? "yes" : "no", cpu > (uint64_t)PGC_JANK_MS * 1000000 ? 3 : 2);
    pl_str(&pl, "flags", "unfinished", 10);
    pl_end(&pl);
    marker_row(t, intern_str(t, name, strlen(name)), b, e, 1, CAT_EVENT, &pl);
}

static int end_thread(void *ctx, uint32_t ti)
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
            user_marker(t, &prof->lazy[i].rec);
    if (t->f->nopen)
        unfinished_marker(t);
    flush_runs(t); /* outermost intervals that never closed (cut recording): write anyway */
    int64_t last_row = pgc_grid_finish(&t->grid);
    prof->cseg[prof->ncspill - 1].end = ftello(prof->cspill);
    if (last_row > t->last_ns)
        t->last_ns = last_row; /* the range holds every counter row */
    if (t->grid.dropped) {
        fprintf(stderr, "perfgroup-convert: warning: %s: thread %s: CPU counters stopped at "
                "%" PRIu64 " rows per group (--max-samples) or at the output's bound; %" PRIu64
                " ns of CPU not shown in them\n", prof->f->path, t->th->name, t->grid.max_rows,
                t->grid.dropped);
        struct pgc_out pl;
        pl_begin(&pl, "PerfgroupCut");
        const char *why = "counter row limit reached (--max-samples, or the output's bound of "
                          "2^20 + 8 per input byte): CPU counters incomplete";
        pl_str(&pl, "reason", why, strlen(why));
        pl_ms(&pl, "cpu", (int64_t)(t->grid.dropped > INT64_MAX ? INT64_MAX : t->grid.dropped));
        pl_end(&pl);
        marker_row(t, intern_str(t, "Counters capped", 15), t->last_ns, 0, 0, CAT_OTHER, &pl);
    }
    if (t->capped) {
        fprintf(stderr, "perfgroup-convert: warning: %s: thread %s: samples stopped at %" PRIu64
                " (--max-samples %" PRIu64 " per thread, or the output's bound: 2^20 + 8 per "
                "input byte in all; --max-samples N lifts the bound, --interval a coarser grid "
                "needs fewer); markers are complete\n", prof->f->path, t->th->name, t->nsamples,
                prof->max_samples);
        struct pgc_out pl;
        pl_begin(&pl, "PerfgroupCut");
        const char *why = "sample limit reached (--max-samples, or the output's bound of 2^20 + "
                          "8 per input byte): no samples after this point";
        pl_str(&pl, "reason", why, strlen(why));
        pl_end(&pl);
        marker_row(t, intern_str(t, "Samples capped", 14), t->last_sample_ns, 0, 0, CAT_OTHER, &pl);
    }
    if (t->is_main && prof->f->hdr.records_dropped) {
        /* the header's totals as a process-level marker: the Records dropped markers that
         * carried the losses may have been recycled themselves */
        struct pgc_out pl;
        pl_begin(&pl, "PerfgroupDropped");
        pl_u64(&pl, "records", prof->f->hdr.records_dropped);
        pl_u64(&pl, "bytes", 0);
        pl_u64(&pl, "chunks", prof->f->hdr.chunks_recycled);
        pl_end(&pl);
        marker_row(t, intern_str(t, "Records dropped (process total)", 31), t->last_ns, 0, 0,
                   CAT_OTHER, &pl);
    }
    if (t->is_main && prof->f->has_totals) {
        /* the whole-run totals (format.h): what the process did, whatever the buffer kept of
         * its events; the per-group counter tracks stay those of the events kept */
        struct pgc_out pl;
        char gl[1200];
        pl_begin(&pl, "PerfgroupTotals");
        pl_ms(&pl, "cpu", (int64_t)(prof->f->tot_cpu_ns > INT64_MAX ? INT64_MAX : prof->f->tot_cpu_ns));
        pl_u64(&pl, "events", prof->f->tot_events);
        pgc_totals_text(gl, sizeof gl, prof->f, 20);
        const char *groups = strchr(gl, ';');
        groups = groups ? groups + 2 : "";
        pl_str(&pl, "groups", groups, strlen(groups));
        pl_u64(&pl, "ngroups", prof->f->ngtot);
        pl_end(&pl);
        marker_row(t, intern_str(t, "Whole-run totals (process)", 26), t->last_ns, 0, 0,
                   CAT_OTHER, &pl);
    }
    struct pgc_overhead ov;
    pgc_overhead_of(prof->f, &ov);
    if (t->is_main && ov.from_header) {
        /* the header's overhead totals, the same way: known before any thread is read */
        struct pgc_out pl;
        pl_begin(&pl, "PerfgroupOverhead");
        pl_ms(&pl, "commit", (int64_t)(ov.commit_ns > INT64_MAX ? INT64_MAX : ov.commit_ns));
        pl_u64(&pl, "commits", ov.commits);
        pl_u64(&pl, "slowPaths", ov.slow_paths);
        pl_u64(&pl, "resyncs", ov.resyncs);
        pl_u64(&pl, "dropped", ov.dropped);
        pl_u64(&pl, "refused", ov.refused);
        pl_u64(&pl, "clamped", ov.clamped);
        pl_end(&pl);
        marker_row(t, intern_str(t, "Runtime overhead (process total)", 32), t->last_ns, 0, 0,
                   CAT_OTHER, &pl);
    }
    if (prof->f->not_closed) {
        struct pgc_out pl;
        pl_begin(&pl, "PerfgroupCut");
        const char *why = "the program did not close the recording (crash, kill or still "
                          "running): records after this point are lost, at most the one being "
                          "written per thread";
        pl_str(&pl, "reason", why, strlen(why));
        pl_end(&pl);
        marker_row(t, intern_str(t, "Recording cut", 13), t->last_ns, 0, 0, CAT_OTHER, &pl);
    }
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
    PGC_LIT(o, ",\n\"frameTable\":{\"schema\":{\"location\":0,\"relevantForJS\":1,\"innerWindowID\":2,"
               "\"implementation\":3,\"line\":4,\"column\":5,\"category\":6,\"subcategory\":7},"
               "\"data\":[");
    for (uint32_t i = 0; i < t->nframes; i++) {
        PGC_SEP(o, i, "\n[");
        pgc_out_u64(o, t->frame_loc[i]);
        PGC_LIT(o, ",false,0,null,");
        if (t->frame_line[i])
            pgc_out_u64(o, t->frame_line[i]);
        else
            PGC_LIT(o, "null");
        PGC_LIT(o, ",null,");
        pgc_out_u64(o, t->frame_cat[i]);
        PGC_LIT(o, ",0]");
    }
    PGC_LIT(o, "]},\n\"stackTable\":{\"schema\":{\"prefix\":0,\"frame\":1},\"data\":[");
    for (uint32_t i = 0; i < t->nstacks; i++) {
        PGC_SEP(o, i, "\n[");
        if (t->stack_prefix[i] == UNKNOWN)
            PGC_LIT(o, "null");
        else
            pgc_out_u64(o, t->stack_prefix[i]);
        PGC_LIT(o, ",");
        pgc_out_u64(o, t->stack_frame[i]);
        PGC_LIT(o, "]");
    }
    PGC_LIT(o, "]},\n\"stringTable\":[");
    for (uint32_t i = 0; i < t->nstrings; i++) {
        if (i)
            PGC_LIT(o, ",\n");
        pgc_out_json_str(o, t->strings[i], strlen(t->strings[i]));
    }
    PGC_LIT(o, "]}");
    gthread_free(t);
    prof->t = NULL;
    return o->err ? -1 : 0;
}

/* A process whose recording has no thread data still needs a thread to be shown. */
static void empty_thread(struct gecko *prof)
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

/* ---- Counters ------------------------------------------------------------------------ */

/* The segment's next row of group gi: 1, or 0 at its end (or a read error, kept in out). */
static int cseg_next(struct gecko *prof, struct cseg *s, uint32_t gi, struct crec *r)
{
    for (;;) {
        if (s->i == s->n) {
            off_t left = s->end - s->pos;
            size_t want = sizeof(s->buf);
            if (left < (off_t)want)
                want = (size_t)left;
            want -= want % sizeof(struct crec);
            if (want == 0)
                return 0;
            ssize_t got = pread(fileno(prof->cspill), s->buf, want, s->pos);
            if (got < (ssize_t)sizeof(struct crec)) {
                if (!prof->out->err)
                    prof->out->err = got < 0 ? errno : EIO;
                return 0;
            }
            s->pos += got - got % (ssize_t)sizeof(struct crec);
            s->n = (uint32_t)(got / (ssize_t)sizeof(struct crec));
            s->i = 0;
        }
        *r = s->buf[s->i++];
        if (r->group == gi)
            return 1;
    }
}

static void write_counters(struct gecko *prof)
{
    struct pgc_out *o = prof->out;
    uint32_t ng = prof->f->ngroups, chosen[MAX_COUNTERS], nchosen = 0;
    /* the MAX_COUNTERS groups with the most CPU */
    for (uint32_t k = 0; k < MAX_COUNTERS; k++) {
        uint32_t best = UNKNOWN;
        for (uint32_t i = 0; i < ng; i++) {
            int taken = 0;
            for (uint32_t j = 0; j < nchosen; j++)
                taken |= chosen[j] == i;
            if (!taken && prof->group_cpu[i] && (best == UNKNOWN || prof->group_cpu[i] > prof->group_cpu[best]))
                best = i;
        }
        if (best == UNKNOWN)
            break;
        chosen[nchosen++] = best;
    }
    PGC_LIT(o, ",\n\"counters\":[");
    uint32_t nc = prof->ncspill;
    struct crec *head = calloc(nc ? nc : 1, sizeof(*head));
    int *live = calloc(nc ? nc : 1, sizeof(*live));
    if (prof->cspill && fflush(prof->cspill) && !o->err)
        o->err = errno ? errno : EIO;
    for (uint32_t k = 0; k < nchosen && head && live && prof->cspill; k++) {
        uint32_t gi = chosen[k];
        PGC_SEP(o, k, "\n{\"name\":");
        char name[300];
        snprintf(name, sizeof(name), "CPU ns: %s", prof->f->groups[gi].name);
        pgc_out_json_str(o, name, strlen(name));
        PGC_LIT(o, ",\"category\":\"perfgroup\",\"description\":");
        snprintf(name, sizeof(name), "CPU time of group %s: ns in each sample interval "
                 "(the graph: its share of one CPU)", prof->f->groups[gi].name);
        pgc_out_json_str(o, name, strlen(name));
        PGC_LIT(o, ",\"samples\":{\"schema\":{\"time\":0,\"count\":1,\"number\":2},\"data\":[");
        /* k-way merge by time over the thread spills, this group only */
        for (uint32_t i = 0; i < nc; i++) {
            prof->cseg[i].pos = prof->cseg[i].start;
            prof->cseg[i].n = prof->cseg[i].i = 0;
            live[i] = cseg_next(prof, &prof->cseg[i], gi, &head[i]);
        }
        /* rows of several threads at one time become one row (their sum): a second row at
         * the same time would be a rate over no time */
        uint64_t n = 0, sum = 0;
        int64_t last = INT64_MIN;
        for (;;) {
            uint32_t m = UNKNOWN;
            for (uint32_t i = 0; i < nc; i++)
                if (live[i] && (m == UNKNOWN || head[i].ns < head[m].ns))
                    m = i;
            if (m == UNKNOWN || (head[m].ns > last && last != INT64_MIN)) {
                if (last != INT64_MIN) {
                    PGC_SEP(o, n++, "[");
                    out_ms(o, last);
                    PGC_LIT(o, ",");
                    pgc_out_u64(o, sum);
                    PGC_LIT(o, ",1]");
                }
                if (m == UNKNOWN)
                    break;
                last = head[m].ns;
                sum = 0;
            }
            if (last == INT64_MIN)
                last = head[m].ns;
            sum += head[m].count; /* a row earlier than `last` (damaged input) joins it */
            live[m] = cseg_next(prof, &prof->cseg[m], gi, &head[m]);
        }
        PGC_LIT(o, "]}}");
    }
    free(head);
    free(live);
    PGC_LIT(o, "]");
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
        "{\"key\":\"jank\",\"label\":\"Jank (> 50 ms of CPU)\",\"format\":\"string\",\"searchable\":true},"
        "{\"key\":\"flags\",\"label\":\"Flags\",\"format\":\"string\"}]},\n"
        "{\"name\":\"PerfgroupInterval\",\"tooltipLabel\":\"{marker.name}: {marker.data.function}\","
        "\"tableLabel\":\"{marker.data.function} in {marker.data.lib} ({marker.data.file}:{marker.data.line})\","
        "\"chartLabel\":\"{marker.data.function}\",\"display\":[\"marker-chart\",\"marker-table\"],"
        "\"data\":[{\"key\":\"function\",\"label\":\"Function\",\"format\":\"unique-string\",\"searchable\":true},"
        "{\"key\":\"lib\",\"label\":\"Library\",\"format\":\"unique-string\",\"searchable\":true},"
        "{\"key\":\"file\",\"label\":\"File\",\"format\":\"unique-string\"},"
        "{\"key\":\"line\",\"label\":\"Line\",\"format\":\"integer\"},"
        "{\"key\":\"depth\",\"label\":\"Depth\",\"format\":\"integer\"}]},\n"
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
static void write_meta(struct gecko *prof, struct pgc_file *f, int root, int64_t lo, int64_t hi)
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
    static const struct pgc_stream_cb cb = {begin_thread, on_record, end_thread};
    prof->f = f;
    if (pgc_file_unpark(f, prof->err))
        return -1;
    if (cats_add(&prof->cats, f))
        return fail_oom(prof);
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
        return fail_oom(prof);
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
            gthread_free(prof->t);
            prof->t = NULL;
        }
    } else {
        if (prof->nthreads_written == 0 || prof->exec_follows)
            empty_thread(prof);
        PGC_LIT(prof->out, "]");
        write_counters(prof);
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
        write_meta(&prof, &files[next], 0, prof.plo, prof.phi);
        PGC_LIT(out, "}");
        after = files[next].start_realtime_ns;
        after_i = next;
        done++;
    }
    PGC_LIT(out, "],\n");
    write_meta(&prof, &files[root], 1, prof.glo, prof.ghi);
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
