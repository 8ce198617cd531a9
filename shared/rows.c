/* SPDX-License-Identifier: MIT */
/*
 * rows.c — one group's totals as the about:performance table counts them (struct pgc_row):
 * adding rows, a row from a file's whole-run totals slot, and one event's groups into rows.
 * The summary (converter/summary.c) and the live views (live/live.c) count with this code.
 */
#include "pgshared.h"

void pgc_row_add(struct pgc_row *d, const struct pgc_row *s)
{
    d->cpu_ns += s->cpu_ns;
    d->wall_ns += s->wall_ns;
    d->blocked_ns += s->blocked_ns;
    d->activations += s->activations;
    d->events += s->events;
    if (s->longest_ns > d->longest_ns)
        d->longest_ns = s->longest_ns;
    if (s->longest_wall_ns > d->longest_wall_ns)
        d->longest_wall_ns = s->longest_wall_ns;
    for (int k = 0; k < PGC_JANK_BUCKETS; k++)
        d->jank[k] += s->jank[k];
    d->task_cpu_ns += s->task_cpu_ns;
    d->tasks += s->tasks;
    d->self_ns += s->self_ns;
    d->self_unknown += s->self_unknown;
}

void pgc_row_from_totals(struct pgc_row *d, const struct pgf_totals_slot *slot)
{
    const struct pgf_totals *t = &slot->t;
    d->cpu_ns = t->cpu_ns;
    d->wall_ns = t->wall_ns;
    d->blocked_ns = t->blocked_ns;
    d->activations = t->activations;
    d->events = t->events;
    d->longest_ns = t->max_event_ns;
    d->longest_wall_ns = t->max_wall_ns;
    for (int k = 0; k < PGC_JANK_BUCKETS; k++)
        d->jank[k] = t->jank[k];
    d->task_cpu_ns = t->task_cpu_ns;
    d->tasks = t->tasks;
    int known = (slot->flags & PGF_TOTALS_F_SELF) != 0;
    d->self_ns = known ? t->self_ns : 0;
    d->self_unknown = !known;
}

/* One event's groups into rows (one per group of f): shared with the live view (live.c). */
void pgc_rows_add_event(struct pgc_row *rows, const struct pgc_file *f,
                        const struct pgc_clock *clk, const struct pgr_record *r)
{
    for (uint32_t i = 0; i < r->u.event.ngroups; i++) {
        const struct pgr_event_group *eg = &r->u.event.groups[i];
        uint32_t gi = pgc_group_index(f, eg->group_id);
        if (gi == UINT32_MAX)
            continue;
        struct pgc_row *w = &rows[gi];
        uint64_t wall = (uint64_t)pgc_ticks_ns(clk, eg->cycles);
        w->cpu_ns += eg->cpu_ns;
        w->wall_ns += wall;
        w->blocked_ns += wall > eg->cpu_ns ? wall - eg->cpu_ns : 0;
        w->activations += eg->activations;
        w->events++;
        w->self_unknown++; /* an event record carries no self time */
        if (eg->cpu_ns > w->longest_ns)
            w->longest_ns = eg->cpu_ns;
        if (wall > w->longest_wall_ns)
            w->longest_wall_ns = wall;
        for (int k = 0; k < PGC_JANK_BUCKETS; k++)
            if (eg->cpu_ns > (1000000ull << k))
                w->jank[k]++;
    }
}

