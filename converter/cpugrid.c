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

int pgc_grid_init(struct pgc_grid *grid, uint32_t ngroups, int64_t iv, uint64_t max_rows,
                  pgc_grid_emit emit, void *ctx)
{
    grid->iv = iv;
    grid->max_rows = max_rows ? max_rows : 100000000;
    grid->dropped = 0;
    grid->budget = NULL;
    grid->emit = emit;
    grid->ctx = ctx;
    grid->n = ngroups;
    grid->bucket = malloc((ngroups + 1) * sizeof(*grid->bucket));
    grid->cpu = calloc(ngroups + 1, sizeof(*grid->cpu));
    grid->emitted = malloc((ngroups + 1) * sizeof(*grid->emitted));
    grid->rows = calloc(ngroups + 1, sizeof(*grid->rows));
    if (!grid->bucket || !grid->cpu || !grid->emitted || !grid->rows)
        return -1;
    for (uint32_t i = 0; i <= ngroups; i++)
        grid->bucket[i] = grid->emitted[i] = INT64_MIN;
    return 0;
}

void pgc_grid_free(struct pgc_grid *grid)
{
    free(grid->bucket);
    free(grid->cpu);
    free(grid->emitted);
    free(grid->rows);
    grid->bucket = grid->emitted = NULL;
    grid->cpu = grid->rows = NULL;
}

/* A group out of rows: what it has open is dropped (counted) and it takes nothing more. */
static int full(const struct pgc_grid *grid, uint32_t gi)
{
    return grid->rows[gi] >= grid->max_rows || (grid->budget && !*grid->budget);
}

static void emit(struct pgc_grid *grid, uint32_t gi, int64_t tick, uint64_t count)
{
    if (full(grid, gi))
        return;
    grid->emit(grid->ctx, gi, tick * grid->iv, count);
    grid->emitted[gi] = tick;
    grid->rows[gi]++;
    if (grid->budget)
        --*grid->budget;
    if (full(grid, gi) && grid->bucket[gi] != INT64_MIN) {
        grid->dropped += grid->cpu[gi];
        grid->cpu[gi] = 0;
        grid->bucket[gi] = INT64_MIN;
    }
}

/* Closes the open tick and any carry before tick k (INT64_MAX: the thread's end). */
static void close_before(struct pgc_grid *grid, uint32_t gi, int64_t k)
{
    uint64_t iv = (uint64_t)grid->iv;
    while (grid->bucket[gi] != INT64_MIN && grid->bucket[gi] < k) {
        uint64_t c = grid->cpu[gi] < iv ? grid->cpu[gi] : iv;
        grid->cpu[gi] -= c;
        emit(grid, gi, grid->bucket[gi] + 1, c); /* the last row a group may write drops the rest */
        if (grid->bucket[gi] == INT64_MIN)
            break;
        if (grid->cpu[gi] == 0)
            grid->bucket[gi] = INT64_MIN;
        else
            grid->bucket[gi]++;
    }
}

static void tick_add(struct pgc_grid *grid, uint32_t gi, int64_t k, uint64_t cpu)
{
    if (full(grid, gi)) {
        grid->dropped += cpu;
        return;
    }
    if (grid->bucket[gi] != INT64_MIN && k <= grid->bucket[gi]) { /* the open tick (or earlier) */
        grid->cpu[gi] += cpu;
        return;
    }
    close_before(grid, gi, k);
    if (grid->bucket[gi] == INT64_MIN) {
        /* an idle stretch: a zero one tick after the last row with CPU and one where the CPU
         * resumes, so the graph (lines between rows) is flat at zero in between, not a ramp */
        if (grid->emitted[gi] != INT64_MIN && grid->emitted[gi] + 1 < k)
            emit(grid, gi, grid->emitted[gi] + 1, 0);
        if (grid->emitted[gi] != k)
            emit(grid, gi, k, 0);
        if (full(grid, gi)) {
            grid->dropped += cpu;
            return;
        }
        grid->bucket[gi] = k;
    }
    grid->cpu[gi] += cpu;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

void pgc_grid_add(struct pgc_grid *grid, uint32_t gi, int64_t b, int64_t e, uint64_t cpu)
{
    if (gi > grid->n)
        return;
    int64_t iv = grid->iv, k0 = floor_div(b, iv), k1 = e > b ? floor_div(e - 1, iv) : k0;
    if (grid->bucket[gi] != INT64_MIN && k0 < grid->bucket[gi]) {
        /* begins before the open tick (damaged input: events of a thread are in time order):
         * what lies before it goes into it, so that every turn below writes a row */
        if (k1 <= grid->bucket[gi]) {
            tick_add(grid, gi, grid->bucket[gi], cpu);
            return;
        }
        k0 = grid->bucket[gi];
        b = k0 * iv;
    }
    uint64_t left = cpu;
    for (int64_t k = k0; k <= k1 && left; k++) {
        if (full(grid, gi)) { /* a span longer than the budget: the rest is not shown */
            grid->dropped += left;
            return;
        }
        uint64_t part = left;
        if (k < k1) {
            int64_t lo = k * iv > b ? k * iv : b, hi = (k + 1) * iv < e ? (k + 1) * iv : e;
            double p = (double)cpu * (double)(hi - lo) / (double)(e - b);
            part = p > 0 ? (p < (double)left ? (uint64_t)p : left) : 0;
        }
        tick_add(grid, gi, k, part);
        left -= part;
    }
}

int64_t pgc_grid_finish(struct pgc_grid *grid)
{
    int64_t last = INT64_MIN;
    for (uint32_t i = 0; i <= grid->n; i++) {
        close_before(grid, i, INT64_MAX);
        if (grid->emitted[i] != INT64_MIN)
            emit(grid, i, grid->emitted[i] + 1, 0); /* back to zero after the last row */
        if (grid->emitted[i] != INT64_MIN && grid->emitted[i] * grid->iv > last)
            last = grid->emitted[i] * grid->iv;
    }
    return last;
}
