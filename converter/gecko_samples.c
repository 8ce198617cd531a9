/* SPDX-License-Identifier: MIT */
/*
 * gecko_samples.c — a Gecko thread's samples, to its spill file: trace mode on a regular grid
 * (pending runs closed by the outermost interval), stats mode one sample per interval of a
 * group's CPU, spread over the event.
 */
#include <string.h>

#include "gecko.h"

void pgc_write_sample(struct gthread *t, uint32_t stack, int64_t ns, int64_t cpu_delta_ns)
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

/* ---- Trace-mode samples -------------------------------------------------------------- */
uint32_t pgc_trace_level(struct gthread *t, uint32_t site, uint32_t mask)
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
            cat = pgc_group_category(t, cur);
            stack = pgc_intern_stack(t, stack, pgc_label_frame(t, t->f->groups[cur].name, cat));
            break;
        }
        if (s && l->mask == 0 && stack == UNKNOWN && s->ngroups)
            cat = pgc_group_category(t, s->groups[0]); /* a re-entry seen without its first entry */
        stack = pgc_intern_stack(t, stack, pgc_function_frame(t, l->site, cat));
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
        pgc_write_sample(t, t->idle_stack, t->next_tick, -1);
    if (t->capped)
        t->next_tick = until;
}

void pgc_trace_flush(struct gthread *t)
{
    for (uint32_t i = 0; i < t->nruns; i++) {
        struct run *r = &t->runs[i];
        idle_until(t, r->t0);
        uint32_t st = levels_stack(t, t->pool + r->off, r->nlev);
        for (uint32_t k = 0; k < r->n && !t->capped; k++)
            pgc_write_sample(t, st, r->t0 + (int64_t)k * t->prof->iv, -1);
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

int pgc_trace_interval(struct gthread *t, uint32_t lid, uint32_t depth, int64_t s, int64_t e)
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
        pgc_trace_flush(t);
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

/* The records of writers with self time (format.h) give each group's self time in the event
 * and the group it ran under: every group listed has them. */
static int event_has_nesting(const struct pgr_record *r)
{
    for (uint32_t i = 0; i < r->u.event.ngroups; i++)
        if (!r->u.event.groups[i].has_self)
            return 0;
    return r->u.event.ngroups != 0;
}

/* The stack of listed group i under the event's frame: its parents' chain as measured
 * (docs/accounting.md "Self time"), each once (memo), at most MAX_NEST deep (a damaged
 * file's cycle ends there). stk[i] == UNKNOWN: not interned yet. */
#define MAX_NEST 64
static uint32_t nested_stack(struct gthread *t, const struct pgr_record *r, uint32_t i,
                             uint32_t ev_stack, uint32_t *stk, int depth)
{
    const struct pgr_event_group *g = &r->u.event.groups[i];
    if (stk[i] != UNKNOWN)
        return stk[i];
    uint32_t below = ev_stack;
    if (g->parent && depth < MAX_NEST) {
        uint32_t pid = g->parent - 1;
        uint32_t j = 0;
        while (j < r->u.event.ngroups && r->u.event.groups[j].group_id != pid)
            j++;
        uint32_t pgi = pgc_group_index(t->f, pid);
        if (j < r->u.event.ngroups && j < MAX_EVENT_GROUPS)
            below = nested_stack(t, r, j, ev_stack, stk, depth + 1);
        else if (pgi < t->f->ngroups && t->f->groups[pgi].kind != 0) /* live at the end: not listed */
            below = pgc_intern_stack(t, ev_stack, pgc_label_frame(t, t->f->groups[pgi].name,
                                                                  pgc_group_category(t, pgi)));
    }
    uint32_t gi = pgc_group_index(t->f, g->group_id);
    if (gi >= t->f->ngroups || t->f->groups[gi].kind == 0)
        return below; /* the top group is the event's frame */
    return stk[i] = pgc_intern_stack(t, below, pgc_label_frame(t, t->f->groups[gi].name,
                                                                pgc_group_category(t, gi)));
}

/*
 * One stats-mode event: samples spread over its span, one per interval of CPU. Records with
 * self time: each group's samples are its self time, its node under the group it ran in
 * (nested as measured), so a node's self is the group's self time and its total the group's
 * own plus its nested groups'. Older records (no self time): the groups' charged time scaled
 * down to fit the event when nested groups sum above it — flat, one node per group under the
 * event (docs/converter.md).
 */
void pgc_stats_event(struct gthread *t, const struct pgr_record *r, int64_t b, int64_t e,
                     uint32_t name_frame_loc)
{
    int64_t iv = t->prof->iv;
    uint32_t ng = t->f->ngroups;
    uint64_t sum = 0, cpu = r->u.event.cpu_ns;
    uint32_t ev_stack = UNKNOWN; /* interned only when a sample needs it */
    int nested = event_has_nesting(r);
    /* the thread's top group is the whole event: the event frame stands for it */
    for (uint32_t i = 0; i < r->u.event.ngroups; i++) {
        uint32_t gi = pgc_group_index(t->f, r->u.event.groups[i].group_id);
        if (gi < ng && t->f->groups[gi].kind != 0)
            sum += nested ? r->u.event.groups[i].self_ns : r->u.event.groups[i].cpu_ns;
    }
    double scale = sum > cpu && sum ? (double)cpu / (double)sum : 1.0; /* nested groups */
    uint64_t k_total = 0;
    uint32_t counts[MAX_EVENT_GROUPS + 1];
    uint32_t idx[MAX_EVENT_GROUPS + 1], at_i[MAX_EVENT_GROUPS + 1];
    uint32_t nk = 0;
    for (uint32_t i = 0; i < r->u.event.ngroups && nk < MAX_EVENT_GROUPS; i++) {
        uint32_t gi = pgc_group_index(t->f, r->u.event.groups[i].group_id);
        if (gi >= ng || t->f->groups[gi].kind == 0)
            continue;
        const struct pgr_event_group *g = &r->u.event.groups[i];
        t->acc[gi] += to_u64((double)(nested ? g->self_ns : g->cpu_ns) * scale);
        uint64_t k = t->acc[gi] / (uint64_t)iv;
        t->acc[gi] -= k * (uint64_t)iv;
        if (k > 1000000)
            k = 1000000;
        counts[nk] = (uint32_t)k;
        at_i[nk] = i;
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
    at_i[nk] = UNKNOWN;
    idx[nk++] = UNKNOWN;
    k_total += krest;
    if (!k_total) {
        t->cpu_done += cpu;
        return;
    }
    uint32_t stk[MAX_EVENT_GROUPS];
    if (nested)
        for (uint32_t i = 0; i < r->u.event.ngroups && i < MAX_EVENT_GROUPS; i++)
            stk[i] = UNKNOWN;
    int64_t span = e > b ? e - b : 0;
    uint64_t j = 0;
    for (uint32_t i = 0; i < nk; i++) {
        uint32_t st;
        if (!counts[i])
            continue;
        if (ev_stack == UNKNOWN)
            ev_stack = pgc_intern_stack(t, UNKNOWN, pgc_intern_frame(t, name_frame_loc, CAT_EVENT, 0));
        if (idx[i] == UNKNOWN)
            st = pgc_intern_stack(t, ev_stack, pgc_label_frame(t, "(outside groups)", CAT_IDLE));
        else if (nested && at_i[i] < MAX_EVENT_GROUPS)
            st = nested_stack(t, r, at_i[i], ev_stack, stk, 0);
        else
            st = pgc_intern_stack(t, ev_stack,
                              pgc_label_frame(t, t->f->groups[idx[i]].name, pgc_group_category(t, idx[i])));
        for (uint32_t k = 0; k < counts[i] && !t->capped; k++, j++) {
            int64_t at = b + (int64_t)((double)span * ((double)j + 0.5) / (double)k_total);
            pgc_write_sample(t, st, at, stats_cpu_delta(t, cpu, b, span, at));
        }
    }
    t->cpu_done += cpu;
}
