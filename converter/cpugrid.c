/* SPDX-License-Identifier: MIT */
/*
 * cpugrid.c — per-group CPU on the sample grid, shared by the Gecko counters and the Chrome
 * "C" events, so both outputs show the same numbers.
 *
 * A row at time (k+1)·interval holds the CPU a group used in tick k, [k·interval,
 * (k+1)·interval). A group's CPU in an event is spread over the event's span (all the
 * recording says of when inside the event it ran), so a group busy for a whole event reads
 * as its CPU/wall ratio there, not as a spike at the event's end. A tick holds at most one
 * interval of the thread's CPU (the excess of a CPU clock running ahead of the wall clock
 * goes on into the next tick, so every nanosecond is still there). An idle stretch has a zero
 * row one tick after the last row with CPU and one where the CPU resumes: rows with CPU
 * always span exactly one tick, and the front-end, which joins rows with lines, draws idle
 * as flat zero rather than as a ramp.
 *
 * State per group: the open tick (INT64_MIN: none) and its CPU, and the tick of the latest
 * row (INT64_MIN: none). Events of one thread arrive in time order; a tick earlier than the
 * open one (damaged input) is added to the open one.
 *
 * Bounded whatever the input claims: a group writes at most max_rows rows (the per-thread
 * sample budget), every grid of an output together at most *budget (PGC_ROWS_BASE +
 * PGC_ROWS_PER_BYTE * input bytes), and every loop below writes a row per turn or ends, so an event span or a
 * CPU time of 2^62 ns costs max_rows rows, not 2^42 turns. CPU past the budget is counted in
 * `dropped`, never shown.
 */
#include <stdlib.h>

#include "pgconv.h"

int pgc_grid_init(struct pgc_grid *g, uint32_t ngroups, int64_t iv, uint64_t max_rows,
                         pgc_grid_emit emit, void *ctx)
{
    g->iv = iv;
    g->max_rows = max_rows ? max_rows : 100000000;
    g->dropped = 0;
    g->budget = NULL;
    g->emit = emit;
    g->ctx = ctx;
    g->n = ngroups;
    g->bucket = malloc((ngroups + 1) * sizeof(*g->bucket));
    g->cpu = calloc(ngroups + 1, sizeof(*g->cpu));
    g->emitted = malloc((ngroups + 1) * sizeof(*g->emitted));
    g->rows = calloc(ngroups + 1, sizeof(*g->rows));
    if (!g->bucket || !g->cpu || !g->emitted || !g->rows)
        return -1;
    for (uint32_t i = 0; i <= ngroups; i++)
        g->bucket[i] = g->emitted[i] = INT64_MIN;
    return 0;
}

void pgc_grid_free(struct pgc_grid *g)
{
    free(g->bucket);
    free(g->cpu);
    free(g->emitted);
    free(g->rows);
    g->bucket = g->emitted = NULL;
    g->cpu = g->rows = NULL;
}

/* A group out of rows: what it has open is dropped (counted) and it takes nothing more. */
static int full(const struct pgc_grid *g, uint32_t gi)
{
    return g->rows[gi] >= g->max_rows || (g->budget && !*g->budget);
}

static void emit(struct pgc_grid *g, uint32_t gi, int64_t tick, uint64_t count)
{
    if (full(g, gi))
        return;
    g->emit(g->ctx, gi, tick * g->iv, count);
    g->emitted[gi] = tick;
    g->rows[gi]++;
    if (g->budget)
        --*g->budget;
    if (full(g, gi) && g->bucket[gi] != INT64_MIN) {
        g->dropped += g->cpu[gi];
        g->cpu[gi] = 0;
        g->bucket[gi] = INT64_MIN;
    }
}

/* Closes the open tick and any carry before tick k (INT64_MAX: the thread's end). */
static void close_before(struct pgc_grid *g, uint32_t gi, int64_t k)
{
    uint64_t iv = (uint64_t)g->iv;
    while (g->bucket[gi] != INT64_MIN && g->bucket[gi] < k) {
        uint64_t c = g->cpu[gi] < iv ? g->cpu[gi] : iv;
        g->cpu[gi] -= c;
        emit(g, gi, g->bucket[gi] + 1, c); /* the last row a group may write drops the rest */
        if (g->bucket[gi] == INT64_MIN)
            break;
        if (g->cpu[gi] == 0)
            g->bucket[gi] = INT64_MIN;
        else
            g->bucket[gi]++;
    }
}

static void tick_add(struct pgc_grid *g, uint32_t gi, int64_t k, uint64_t cpu)
{
    if (full(g, gi)) {
        g->dropped += cpu;
        return;
    }
    if (g->bucket[gi] != INT64_MIN && k <= g->bucket[gi]) { /* the open tick (or earlier) */
        g->cpu[gi] += cpu;
        return;
    }
    close_before(g, gi, k);
    if (g->bucket[gi] == INT64_MIN) {
        /* an idle stretch: a zero one tick after the last row with CPU and one where the CPU
         * resumes, so the graph (lines between rows) is flat at zero in between, not a ramp */
        if (g->emitted[gi] != INT64_MIN && g->emitted[gi] + 1 < k)
            emit(g, gi, g->emitted[gi] + 1, 0);
        if (g->emitted[gi] != k)
            emit(g, gi, k, 0);
        if (full(g, gi)) {
            g->dropped += cpu;
            return;
        }
        g->bucket[gi] = k;
    }
    g->cpu[gi] += cpu;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

void pgc_grid_add(struct pgc_grid *g, uint32_t gi, int64_t b, int64_t e, uint64_t cpu)
{
    if (gi > g->n)
        return;
    int64_t iv = g->iv, k0 = floor_div(b, iv), k1 = e > b ? floor_div(e - 1, iv) : k0;
    if (g->bucket[gi] != INT64_MIN && k0 < g->bucket[gi]) {
        /* begins before the open tick (damaged input: events of a thread are in time order):
         * what lies before it goes into it, so that every turn below writes a row */
        if (k1 <= g->bucket[gi]) {
            tick_add(g, gi, g->bucket[gi], cpu);
            return;
        }
        k0 = g->bucket[gi];
        b = k0 * iv;
    }
    uint64_t left = cpu;
    for (int64_t k = k0; k <= k1 && left; k++) {
        if (full(g, gi)) { /* a span longer than the budget: the rest is not shown */
            g->dropped += left;
            return;
        }
        uint64_t part = left;
        if (k < k1) {
            int64_t lo = k * iv > b ? k * iv : b, hi = (k + 1) * iv < e ? (k + 1) * iv : e;
            double p = (double)cpu * (double)(hi - lo) / (double)(e - b);
            part = p > 0 ? (p < (double)left ? (uint64_t)p : left) : 0;
        }
        tick_add(g, gi, k, part);
        left -= part;
    }
}

int64_t pgc_grid_finish(struct pgc_grid *g)
{
    int64_t last = INT64_MIN;
    for (uint32_t i = 0; i <= g->n; i++) {
        close_before(g, i, INT64_MAX);
        if (g->emitted[i] != INT64_MIN)
            emit(g, i, g->emitted[i] + 1, 0); /* back to zero after the last row */
        if (g->emitted[i] != INT64_MIN && g->emitted[i] * g->iv > last)
            last = g->emitted[i] * g->iv;
    }
    return last;
}
