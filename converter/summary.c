/* SPDX-License-Identifier: MIT */
/*
 * summary.c — the about:performance table: per process and thread, and overall, one row per
 * group (CPU ms, % of the thread's CPU, self ms and % (self time: "?" unknown), wall ms,
 * blocked ms, activations, events, longest
 * event by CPU and by wall, jank histogram > 1 … > 512 ms), sorted by CPU; as text or as
 * JSON (--json).
 *
 * A group's wall time in an event is its cycles (TSC ticks while it ran) converted to time;
 * blocked = wall - CPU (time it held the thread without using a CPU). Jank and "longest"
 * have one definition, the runtime's (perfgroup_snapshot_take): the group's CPU time in one
 * event — the histogram counts events in which it exceeded 2^k ms (Firefox's buckets); the
 * longest wall time in one event is a column of its own.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "pgconv.h"

#define ROWS_SHOWN 40 /* groups per table in the text; the lighter rest one line, counted */

struct summary {
    const struct pgc_options *opt;
    struct pgc_out *out;
    struct pgc_file *f;
    struct pgc_clock clk;
    struct pgc_row *rows;      /* current thread, one per group of f */
    struct pgc_row *proc;      /* current process, one per group of f */
    uint64_t proc_cpu, proc_events;
    uint64_t thread_cpu, thread_events;
    struct pgc_row *all;       /* overall, by group name */
    uint32_t nall, cap_all;
    struct pgc_hash all_map;
    uint64_t all_cpu, all_events;
    int nthreads_out, nprocs_out;
    uint64_t records_done, records_total;
    struct pgc_error *err;
    /* the file's whole-run totals (format.h, pgr_totals): the tables come from them; the
     * events streamed only say how much detail the file kept */
    const struct pgf_totals_slot *tot;
    size_t ntot;
    uint64_t tot_torn;
    uint64_t kept_events;  /* events read from the file (the detail) */
};

/* What the recording's header says of how CPU time was found (perfgroup/format.h). */
static const char *cpu_time_word(const struct pgc_file *f)
{
    switch (f->hdr.cpu_time) {
    case PGF_CPU_TIME_MEASURED: return "measured";
    case PGF_CPU_TIME_ESTIMATED: return "estimated";
    default: return "unknown";
    }
}
static const char *cpu_time_text(const struct pgc_file *f)
{
    switch (f->hdr.cpu_time) {
    case PGF_CPU_TIME_MEASURED: return "measured (rseq)";
    case PGF_CPU_TIME_ESTIMATED: return "estimated (event CPU shared by wall time; no rseq)";
    default: return "not recorded (older file)";
    }
}
static const char *tsc_scope_word(const struct pgc_file *f)
{
    switch (f->hdr.tsc_scope) {
    case PGF_TSC_SCOPE_KERNEL: return "kernel";
    case PGF_TSC_SCOPE_RELIABLE: return "reliable";
    case PGF_TSC_SCOPE_CPU: return "cpu";
    default: return "unknown";
    }
}
static const char *tsc_scope_text(const struct pgc_file *f)
{
    switch (f->hdr.tsc_scope) {
    case PGF_TSC_SCOPE_KERNEL: return "kept (counter synchronised: kernel clocksource tsc)";
    case PGF_TSC_SCOPE_RELIABLE: return "kept (invariant TSC, tsc_reliable)";
    case PGF_TSC_SCOPE_CPU: return "discarded (same-CPU check)";
    default: return "not recorded (older file)";
    }
}

static int by_cpu(const void *a, const void *b)
{
    const struct pgc_row *x = a, *y = b;
    if (x->cpu_ns != y->cpu_ns)
        return x->cpu_ns < y->cpu_ns ? 1 : -1;
    return strcmp(x->name, y->name);
}

/* --sort self: by self time, rows whose self time is unknown (older files) after, by CPU */
static int by_self(const void *a, const void *b)
{
    const struct pgc_row *x = a, *y = b;
    int kx = pgc_row_self_known(x), ky = pgc_row_self_known(y);
    if (kx != ky)
        return kx ? -1 : 1;
    if (kx && x->self_ns != y->self_ns)
        return x->self_ns < y->self_ns ? 1 : -1;
    return by_cpu(a, b);
}

static double ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

/* Rows with no activity are left out; the rest sorted by CPU (or self time). Returns how
 * many. */
static uint32_t sorted(const struct summary *S, struct pgc_row *rows, uint32_t n, struct pgc_row **out)
{
    struct pgc_row *s = malloc((n ? n : 1) * sizeof(*s));
    uint32_t k = 0;
    if (!s)
        return UINT32_MAX;
    for (uint32_t i = 0; i < n; i++)
        if (rows[i].events || rows[i].activations || rows[i].cpu_ns || rows[i].tasks)
            s[k++] = rows[i];
    qsort(s, k, sizeof(*s), S->opt->summary_by_self ? by_self : by_cpu);
    *out = s;
    return k;
}

static void text_table(struct summary *S, const char *title, struct pgc_row *rows, uint32_t n,
                       uint64_t total_cpu, uint64_t events)
{
    struct pgc_out *o = S->out;
    char b[512];
    struct pgc_row *s;
    uint32_t k = sorted(S, rows, n, &s);
    if (k == UINT32_MAX)
        return;
    int tasks = 0; /* the "on behalf" column only where tasks ran (docs/converter.md) */
    for (uint32_t i = 0; i < k; i++)
        tasks |= s[i].tasks != 0;
    /* title: its names already made safe by the callers */
    snprintf(b, sizeof(b), "\n%s — CPU %.3f ms in %" PRIu64 " events\n", title, ms(total_cpu), events);
    pgc_out_str(o, b);
    int hn = snprintf(b, sizeof(b), "%-24s %11s %6s %11s %6s %11s %11s %9s %8s %10s %10s%s |jank:",
                      "group", "cpu ms", "cpu%", "self ms", "self%", "wall ms", "blocked ms",
                      "activ.", "events", "max cpu", "max wall", tasks ? "    on behalf ms" : "");
    for (int j = 0; j < PGC_JANK_BUCKETS && hn > 0 && (size_t)hn < sizeof(b) - 16; j++) {
        char lab[8];
        snprintf(lab, sizeof(lab), ">%d", 1 << j);
        hn += snprintf(b + hn, sizeof(b) - (size_t)hn, "%6s", lab);
    }
    pgc_out_str(o, b);
    PGC_LIT(o, " ms\n");
    uint32_t shown = k > ROWS_SHOWN + 1 ? ROWS_SHOWN : k;
    for (uint32_t i = 0; i < shown; i++) {
        const struct pgc_row *r = &s[i];
        double pct = total_cpu ? 100.0 * (double)r->cpu_ns / (double)total_cpu : 0;
        char name[128];
        char self[2][16] = {"?", "?"}; /* unknown: an older file's (docs/converter.md) */
        if (pgc_row_self_known(r)) {
            snprintf(self[0], sizeof self[0], "%.3f", ms(r->self_ns));
            snprintf(self[1], sizeof self[1], "%.1f",
                     total_cpu ? 100.0 * (double)r->self_ns / (double)total_cpu : 0);
        }
        int n0 = snprintf(b, sizeof(b), "%-24.24s %11.3f %6.1f %11s %6s %11.3f %11.3f %9" PRIu64
                          " %8" PRIu64 " %10.3f %10.3f", pgc_text_safe(name, sizeof(name), r->name),
                          ms(r->cpu_ns), pct, self[0], self[1], ms(r->wall_ns), ms(r->blocked_ns),
                          r->activations, r->events, ms(r->longest_ns), ms(r->longest_wall_ns));
        if (tasks)
            n0 += snprintf(b + n0, sizeof(b) - (size_t)n0, " %15.3f", ms(r->task_cpu_ns));
        n0 += snprintf(b + n0, sizeof(b) - (size_t)n0, "%7s", "");
        for (int j = 0; j < PGC_JANK_BUCKETS && n0 > 0 && (size_t)n0 < sizeof(b) - 24; j++)
            n0 += snprintf(b + n0, sizeof(b) - (size_t)n0, "%6" PRIu64, r->jank[j]);
        pgc_out_str(o, b);
        PGC_LIT(o, "\n");
    }
    if (shown < k) { /* 2,000 groups stay readable: the lighter rest on one line (--json: all) */
        uint64_t cpu = 0, wall = 0;
        for (uint32_t i = shown; i < k; i++)
            cpu += s[i].cpu_ns, wall += s[i].wall_ns;
        char label[40];
        snprintf(label, sizeof label, "(%" PRIu32 " more groups)", k - shown);
        snprintf(b, sizeof(b), "%-24.24s %11.3f %6.1f %11.3f\n", label, ms(cpu),
                 total_cpu ? 100.0 * (double)cpu / (double)total_cpu : 0, ms(wall));
        pgc_out_str(o, b);
    }
    if (!k)
        PGC_LIT(o, "(no group activity)\n");
    free(s);
}

/* "cpu_ms":…,"events":…,"groups":[…] of a thread, a process or the whole file. */
static void json_totals(struct summary *S, struct pgc_row *rows, uint32_t n, uint64_t total_cpu,
                        uint64_t events)
{
    struct pgc_out *o = S->out;
    PGC_LIT(o, "\"cpu_ms\":");
    pgc_out_fixed(o, (int64_t)total_cpu, 1000000);
    PGC_LIT(o, ",\"events\":");
    pgc_out_u64(o, events);
    PGC_LIT(o, ",");
    struct pgc_row *s;
    uint32_t k = sorted(S, rows, n, &s);
    if (k == UINT32_MAX)
        return;
    PGC_LIT(o, "\"groups\":[");
    for (uint32_t i = 0; i < k; i++) {
        const struct pgc_row *r = &s[i];
        PGC_SEP(o, i, "\n{\"group\":");
        pgc_out_json_str(o, r->name, strlen(r->name));
        PGC_LIT(o, ",\"cpu_ms\":");
        pgc_out_fixed(o, (int64_t)r->cpu_ns, 1000000);
        PGC_LIT(o, ",\"cpu_percent\":");
        pgc_out_double(o, total_cpu ? 100.0 * (double)r->cpu_ns / (double)total_cpu : 0);
        PGC_LIT(o, ",\"self_ms\":"); /* null: unknown (an older file), never 0 for it */
        if (pgc_row_self_known(r))
            pgc_out_fixed(o, (int64_t)r->self_ns, 1000000);
        else
            PGC_LIT(o, "null");
        PGC_LIT(o, ",\"wall_ms\":");
        pgc_out_fixed(o, (int64_t)r->wall_ns, 1000000);
        PGC_LIT(o, ",\"blocked_ms\":");
        pgc_out_fixed(o, (int64_t)r->blocked_ns, 1000000);
        PGC_LIT(o, ",\"activations\":");
        pgc_out_u64(o, r->activations);
        PGC_LIT(o, ",\"events\":");
        pgc_out_u64(o, r->events);
        PGC_LIT(o, ",\"longest_ms\":");
        pgc_out_fixed(o, (int64_t)r->longest_ns, 1000000);
        PGC_LIT(o, ",\"longest_wall_ms\":");
        pgc_out_fixed(o, (int64_t)r->longest_wall_ns, 1000000);
        if (r->tasks) { /* CPU other threads spent in tasks on its behalf (not in cpu_ms) */
            PGC_LIT(o, ",\"task_cpu_ms\":");
            pgc_out_fixed(o, (int64_t)r->task_cpu_ns, 1000000);
            PGC_LIT(o, ",\"tasks\":");
            pgc_out_u64(o, r->tasks);
        }
        PGC_LIT(o, ",\"jank\":[");
        for (int j = 0; j < PGC_JANK_BUCKETS; j++) {
            if (j)
                PGC_LIT(o, ",");
            pgc_out_u64(o, r->jank[j]);
        }
        PGC_LIT(o, "]}");
    }
    PGC_LIT(o, "]");
    free(s);
}

static int begin_thread(void *ctx, uint32_t ti)
{
    struct summary *S = ctx;
    (void)ti;
    pgc_clock_init(&S->clk, S->f);
    memset(S->rows, 0, (S->f->ngroups + 1) * sizeof(*S->rows));
    for (uint32_t i = 0; i < S->f->ngroups; i++)
        S->rows[i].name = S->f->groups[i].name;
    S->thread_cpu = S->thread_events = 0;
    return 0;
}

static int on_record(void *ctx, const struct pgr_record *r)
{
    struct summary *S = ctx;
    if ((++S->records_done & 0xffff) == 0)
        pgc_progress(S->opt, S->records_done, S->records_total);
    if (r->kind == PGF_REC_CLOCK) {
        pgc_clock_update(&S->clk, S->f, r);
        return 0;
    }
    if (r->kind != PGF_REC_EVENT)
        return 0;
    S->thread_cpu += r->u.event.cpu_ns;
    S->thread_events++;
    pgc_rows_add_event(S->rows, S->f, &S->clk, r);
    return 0;
}

/* The thread in S->rows (thread_cpu, thread_events) into the process's and the overall
 * rows, and its table out. */
static int emit_thread(struct summary *S, uint32_t tid, const char *tname)
{
    struct pgc_out *o = S->out;
    for (uint32_t i = 0; i < S->f->ngroups; i++) {
        const char *name = S->rows[i].name;
        uint64_t h = pgc_hash_bytes(name, strlen(name));
        uint32_t v;
        /* names are unique per file; across files equal names add up */
        if (!pgc_hash_get(&S->all_map, h, &v) || strcmp(S->all[v].name, name) != 0) {
            if (S->nall == S->cap_all) { /* doubling: a row at a time was quadratic */
                uint32_t nc = S->cap_all ? S->cap_all * 2 : 64;
                struct pgc_row *na = realloc(S->all, (size_t)nc * sizeof(*na));
                if (!na)
                    return -1;
                S->all = na;
                S->cap_all = nc;
            }
            if (pgc_hash_put(&S->all_map, h, S->nall))
                return -1;
            memset(&S->all[S->nall], 0, sizeof(*S->all));
            /* a copy: the file's definitions are freed after its turn (file_repark) */
            if (!(S->all[S->nall].name = strdup(name)))
                return -1;
            v = S->nall++;
        }
        pgc_row_add(&S->all[v], &S->rows[i]);
        pgc_row_add(&S->proc[i], &S->rows[i]);
    }
    S->all_cpu += S->thread_cpu;
    S->proc_cpu += S->thread_cpu;
    S->proc_events += S->thread_events;
    S->all_events += S->thread_events;
    if (S->opt->summary_json) {
        PGC_SEP(o, S->nthreads_out, "\n{\"tid\":");
        pgc_out_u64(o, tid);
        PGC_LIT(o, ",\"name\":");
        pgc_out_json_str(o, tname, strlen(tname));
        PGC_LIT(o, ",");
        json_totals(S, S->rows, S->f->ngroups, S->thread_cpu, S->thread_events);
        PGC_LIT(o, "}");
    } else if (S->thread_events) { /* a thread with no event (markers only) has no rows */
        char title[600], prog[256], tn[256];
        snprintf(title, sizeof(title), "%s (pid %u) thread %s (tid %u)",
                 pgc_text_safe(prog, sizeof(prog), S->f->program), S->f->pid,
                 pgc_text_safe(tn, sizeof(tn), tname), tid);
        text_table(S, title, S->rows, S->f->ngroups, S->thread_cpu, S->thread_events);
    }
    if (S->opt->summary_json || S->thread_events)
        S->nthreads_out++;
    return o->err ? -1 : 0;
}

static int end_thread(void *ctx, uint32_t ti)
{
    struct summary *S = ctx;
    S->kept_events += S->thread_events;
    if (S->tot) /* the tables come from the whole-run totals (totals_threads) */
        return 0;
    const struct pgc_thread *th = &S->f->threads[ti];
    return emit_thread(S, th->tid, th->name);
}

static int by_thread_group(const void *a, const void *b)
{
    const struct pgf_totals_slot *x = a, *y = b;
    if (x->thread != y->thread) /* the ended threads' row (0) last */
        return x->thread == 0 ? 1 : y->thread == 0 ? -1 : x->thread < y->thread ? -1 : 1;
    return x->group < y->group ? -1 : x->group > y->group;
}

/* One table per thread from the file's whole-run totals: its top group gives the thread's
 * CPU and events, the other groups its rows; the ended threads' row (thread 0) last. */
static int totals_threads(struct summary *S)
{
    struct pgc_file *f = S->f;
    struct pgf_totals_slot *all = malloc((S->ntot ? S->ntot : 1) * sizeof *all);
    if (!all)
        return -ENOMEM;
    memcpy(all, S->tot, S->ntot * sizeof *all);
    qsort(all, S->ntot, sizeof *all, by_thread_group);
    int rc = 0;
    for (size_t i = 0; i < S->ntot && !rc;) {
        uint32_t th = all[i].thread;
        memset(S->rows, 0, (f->ngroups + 1) * sizeof(*S->rows));
        for (uint32_t k = 0; k < f->ngroups; k++)
            S->rows[k].name = f->groups[k].name;
        S->thread_cpu = S->thread_events = 0;
        for (; i < S->ntot && all[i].thread == th; i++) {
            const struct pgf_totals *t = &all[i].t;
            uint32_t gi = pgc_group_index(f, all[i].group);
            if (gi == UINT32_MAX)
                continue;
            if (f->groups[gi].kind == 0) { /* PERFGROUP_KIND_TOP: the whole of every event */
                S->thread_cpu += t->cpu_ns;
                S->thread_events += t->events;
                continue;
            }
            pgc_row_from_totals(&S->rows[gi], &all[i]);
        }
        uint32_t tid = 0, idx;
        char name[96];
        if (th == 0) {
            snprintf(name, sizeof name, "ended threads (%u folded)", f->hdr.threads_folded);
        } else if (pgc_hash_get(&f->thread_ids, th, &idx)) {
            tid = f->threads[idx].tid;
            snprintf(name, sizeof name, "%s", f->threads[idx].name);
        } else {
            snprintf(name, sizeof name, "thread index %u", th);
        }
        rc = emit_thread(S, tid, name);
    }
    free(all);
    return rc;
}

/* What the event detail covers beside the whole-run totals, as one line / JSON fields. */
static void coverage(struct summary *S, char *b, size_t n)
{
    uint64_t total = S->proc_events, kept = S->kept_events;
    if (kept >= total)
        snprintf(b, n, "events: all %" PRIu64 " kept; totals cover the whole run", total);
    else if (!kept)
        snprintf(b, n, "events: none of %" PRIu64 " kept (recycled, or no room in the buffer); "
                 "totals cover the whole run", total);
    else
        snprintf(b, n, "events %" PRIu64 "-%" PRIu64 " of %" PRIu64 " kept (the rest recycled); "
                 "totals cover the whole run", total - kept + 1, total, total);
}

/* Events the file has open (a crash, _exit or kill before they ended): their CPU so far,
 * not in the tables above (those hold committed events only). */
static void out_ms(struct pgc_out *out, uint64_t ns)
{
    pgc_out_fixed(out, (int64_t)(ns > INT64_MAX ? INT64_MAX : ns), 1000000);
}

static void unfinished_json(struct pgc_out *out, const struct pgc_file *f)
{
    PGC_LIT(out, ",\"unfinished\":[");
    for (size_t i = 0; i < f->nunfinished; i++) {
        const struct pgc_unfinished *u = &f->unfinished[i];
        PGC_SEP(out, i, "{\"tid\":");
        pgc_out_u64(out, u->tid);
        const char *text[2] = {u->thread_name, u->event};
        for (int k = 0; k < 2; k++) {
            pgc_out_str(out, k ? ",\"event\":" : ",\"thread\":");
            pgc_out_json_str(out, text[k], strlen(text[k]));
        }
        PGC_LIT(out, ",\"begin_ms\":");
        out_ms(out, u->begin_ns);
        PGC_LIT(out, ",\"wall_ms\":");
        out_ms(out, u->wall_ns);
        PGC_LIT(out, ",\"cpu_ms\":");
        if (u->cpu_known)
            out_ms(out, u->cpu_ns);
        else
            PGC_LIT(out, "null");
        /* its groups so far: running ones first (innermost first), then those that stopped */
        PGC_LIT(out, ",\"groups\":[");
        for (unsigned k = 0; k < u->slot.ngroups; k++) {
            uint32_t gi = pgc_group_index(f, u->slot.group[k]);
            char unk[32];
            snprintf(unk, sizeof unk, "group %u", u->slot.group[k]);
            const char *gn = gi < f->ngroups ? f->groups[gi].name : unk;
            PGC_SEP(out, k, "{\"group\":");
            pgc_out_json_str(out, gn, strlen(gn));
            if (k < u->slot.nrunning)
                PGC_LIT(out, ",\"running\":true}");
            else
                PGC_LIT(out, ",\"running\":false}");
        }
        PGC_LIT(out, "]");
        if (u->slot.flags & PGF_OPEN_F_MORE)
            PGC_LIT(out, ",\"more_groups\":true");
        PGC_LIT(out, "}");
    }
    PGC_LIT(out, "]");
}

static void unfinished_text(struct pgc_out *out, const struct pgc_file *f)
{
    for (size_t i = 0; i < f->nunfinished; i++) {
        const struct pgc_unfinished *u = &f->unfinished[i];
        char b[1200], tn[70], ev[70], cpu[40] = "CPU not known", gl[600], gs[620];
        if (u->cpu_known)
            snprintf(cpu, sizeof cpu, "CPU %.3f ms", (double)u->cpu_ns / 1e6);
        pgc_open_groups(f, &u->slot, gl, sizeof gl);
        snprintf(b, sizeof b, "unfinished: event \"%s\" on thread %s (tid %u), began at %.3f ms, "
                 "open %.3f ms when last written, %s, groups: %s (not in the tables)\n",
                 pgc_text_safe(ev, sizeof ev, u->event),
                 pgc_text_safe(tn, sizeof tn, u->thread_name), u->tid,
                 (double)u->begin_ns / 1e6, (double)u->wall_ns / 1e6, cpu,
                 gl[0] ? pgc_text_safe(gs, sizeof gs, gl) : "none yet");
        pgc_out_str(out, b);
    }
}

int pgc_summary_write(struct pgc_file *files, size_t nfiles, const struct pgc_options *opt,
                      struct pgc_out *out, struct pgc_error *err)
{
    static const struct pgc_stream_cb cb = {begin_thread, on_record, end_thread};
    struct summary S;
    memset(&S, 0, sizeof(S));
    S.opt = opt;
    S.out = out;
    S.err = err;
    for (size_t i = 0; i < nfiles; i++)
        S.records_total += files[i].records_total;
    int rc = 0;
    if (opt->summary_json)
        PGC_LIT(out, "{\"processes\":[");
    for (size_t i = 0; i < nfiles && !rc; i++) {
        struct pgc_file *f = &files[i];
        if (pgc_file_unpark(f, err)) {
            rc = -1;
            break;
        }
        S.f = f;
        S.rows = calloc(f->ngroups + 1, sizeof(*S.rows));
        S.proc = calloc(f->ngroups + 1, sizeof(*S.proc));
        S.proc_cpu = S.proc_events = 0;
        for (uint32_t g = 0; S.proc && g < f->ngroups; g++)
            S.proc[g].name = f->groups[g].name;
        if (!S.rows || !S.proc) {
            free(S.rows);
            free(S.proc);
            rc = -ENOMEM;
            break;
        }
        S.nthreads_out = 0;
        if (opt->summary_json) {
            PGC_SEP(out, i, "\n{\"pid\":");
            pgc_out_u64(out, f->pid);
            PGC_LIT(out, ",\"ppid\":");
            pgc_out_u64(out, f->ppid);
            PGC_LIT(out, ",\"program\":");
            pgc_out_json_str(out, f->program, strlen(f->program));
            PGC_LIT(out, ",\"file\":");
            pgc_out_json_str(out, f->path, strlen(f->path));
            PGC_LIT(out, ",\"mode\":\"");
            pgc_out_str(out, f->mode == PGF_MODE_TRACE ? "trace" : "stats");
            PGC_LIT(out, "\",\"complete\":");
            pgc_out_str(out, f->not_closed ? "false" : "true");
            PGC_LIT(out, ",\"records_dropped\":");
            pgc_out_u64(out, f->hdr.records_dropped);
            PGC_LIT(out, ",\"cpu_time\":\"");
            pgc_out_str(out, cpu_time_word(f));
            PGC_LIT(out, "\",\"tsc_scope\":\"");
            pgc_out_str(out, tsc_scope_word(f));
            PGC_LIT(out, "\"");
            PGC_LIT(out, ",\"threads\":[");
        } else {
            char b[700], path[256], prog[256];
            snprintf(b, sizeof(b), "%s%s: %s, pid %u (parent %u), %s mode%s", i ? "\n" : "",
                     pgc_text_safe(path, sizeof(path), f->path),
                     pgc_text_safe(prog, sizeof(prog), f->program), f->pid, f->ppid,
                     f->mode == PGF_MODE_TRACE ? "trace" : "stats",
                     f->not_closed ? ", NOT CLOSED (cut by a crash or kill)" : "");
            pgc_out_str(out, b);
            if (f->hdr.records_dropped) {
                snprintf(b, sizeof(b), ", %" PRIu64 " records dropped", f->hdr.records_dropped);
                pgc_out_str(out, b);
            }
            PGC_LIT(out, "\n");
            snprintf(b, sizeof(b), "CPU time per group: %s; stopwatches across CPUs: %s; "
                     "jank and max: CPU time per event\n", cpu_time_text(f), tsc_scope_text(f));
            pgc_out_str(out, b);
        }
        S.ntot = pgr_totals(f->r, &S.tot, &S.tot_torn);
        if (!S.ntot)
            S.tot = NULL; /* an older file: the tables are the sums of its events */
        S.kept_events = 0;
        rc = pgc_file_stream(f, &cb, &S, err);
        if (!rc && S.tot)
            rc = totals_threads(&S);
        /* the process as a whole (all its threads) */
        /* what the file's damage cost, known once it is read (chunks_corrupt, clipped) */
        if (opt->summary_json) {
            PGC_LIT(out, "],\"chunks_corrupt\":");
            pgc_out_u64(out, f->counts.chunks_corrupt);
            PGC_LIT(out, ",\"records_clipped\":");
            pgc_out_u64(out, f->counts.clipped);
            PGC_LIT(out, ",\"records_clipped_first_offset\":");
            pgc_out_u64(out, f->counts.clipped_offset);
            struct pgc_overhead ov;
            pgc_overhead_of(f, &ov);
            PGC_LIT(out, ",\"overhead\":");
            pgc_out_overhead_json(out, &ov);
            unfinished_json(out, f);
            PGC_LIT(out, ",\"totals\":\"");
            pgc_out_str(out, S.tot ? "whole run" : "events kept");
            PGC_LIT(out, "\",\"events_kept\":");
            pgc_out_u64(out, S.kept_events);
            PGC_LIT(out, ",\"threads_folded\":");
            pgc_out_u64(out, f->hdr.threads_folded);
            PGC_LIT(out, ",\"totals_lost\":");
            pgc_out_u64(out, f->hdr.totals_lost + S.tot_torn);
            PGC_LIT(out, ",");
            json_totals(&S, S.proc, f->ngroups, S.proc_cpu, S.proc_events);
            PGC_LIT(out, "}");
        } else if (!rc) {
            if (S.nthreads_out > 1) {
                char title[600], prog[256];
                snprintf(title, sizeof(title), "%s (pid %u), all %d threads",
                         pgc_text_safe(prog, sizeof(prog), f->program), f->pid,
                         S.nthreads_out);
                text_table(&S, title, S.proc, f->ngroups, S.proc_cpu, S.proc_events);
            }
            char b[400];
            if (S.tot) {
                coverage(&S, b, sizeof b - 1);
                strcat(b, "\n");
                pgc_out_str(out, b);
            }
            if (f->hdr.totals_lost + S.tot_torn) {
                snprintf(b, sizeof(b), "totals short: %" PRIu64 " commit(s) found no totals slot "
                         "(raise PERFGROUP_TOTALS)\n", f->hdr.totals_lost + S.tot_torn);
                pgc_out_str(out, b);
            }
            struct pgc_overhead ov;
            pgc_overhead_of(f, &ov);
            if (ov.any) {
                char t[320];
                pgc_overhead_text(t, sizeof(t), &ov);
                snprintf(b, sizeof(b), "runtime overhead: %s\n", t);
                pgc_out_str(out, b);
            }
            unfinished_text(out, f);
            if (f->counts.chunks_corrupt) {
                snprintf(b, sizeof(b), "damaged: %" PRIu64 " sealed chunk(s) failed their "
                         "CRC-32C: skipped, their records not counted above\n", f->counts.chunks_corrupt);
                pgc_out_str(out, b);
            }
            if (f->counts.clipped) {
                snprintf(b, sizeof(b), "damaged: %" PRIu64 " record time(s) beyond the file's "
                         "clocks clipped (first at byte %" PRIu64 ")\n", f->counts.clipped,
                         f->counts.clipped_offset);
                pgc_out_str(out, b);
            }
        }
        free(S.rows);
        free(S.proc);
        S.rows = NULL;
        S.proc = NULL;
        pgc_file_repark(f);
    }
    if (!rc) {
        if (opt->summary_json) {
            PGC_LIT(out, "],\n\"overall\":{");
            json_totals(&S, S.all, S.nall, S.all_cpu, S.all_events);
            PGC_LIT(out, "}}\n");
        } else {
            text_table(&S, "overall", S.all, S.nall, S.all_cpu, S.all_events);
        }
    }
    pgc_progress(opt, S.records_total, S.records_total);
    for (size_t i = 0; i < S.nall; i++)
        free((char *)S.all[i].name);
    free(S.all);
    pgc_hash_free(&S.all_map);
    if (rc == -ENOMEM || rc > 0) {
        if (!err->set) {
            err->set = 1;
            snprintf(err->msg, sizeof(err->msg), "out of memory");
        }
        return -1;
    }
    if (rc)
        return -1;
    pgc_out_flush(out);
    return out->err ? -out->err : 0;
}
