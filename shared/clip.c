/* SPDX-License-Identifier: MIT */
/*
 * clip.c — the clipping policy of every reading: each record's times brought within what the
 * file's own clocks can vouch for, counted in pgc_file.counts (see below). input.c calls it
 * for every record it streams.
 */
#include "reading.h"

/* ---- Plausibility against the file's own clocks --------------------------------------
 *
 * A record's times come from the clock the header names; the file itself says when that
 * clock could have been read: not before the recording started (header start_tsc), and not
 * after its chunk was sealed (a FULL chunk's last_tsc: sealing settles it from its records,
 * format version 2) or, for a chunk still being written, after the latest clock the file
 * holds anywhere (header end_tsc at a clean close, every chunk's first and last clock). A
 * time beyond its chunk's ceiling (+ 10 ms of slack) is clipped to the ceiling and counted:
 * one flipped bit in a duration, or a crafted 2^62-tick interval, then spans at most what the
 * recording spans, and the outputs that grow with time (samples, counter rows) stay bounded
 * by the file's clocks. A time before the start is moved to the start without being counted:
 * a fork child's frames and events inherited from its parent began before its recording did.
 * A PGF_REC_CLOCK whose monotonic time contradicts the header's clock by more than 1 s + 5 %
 * is ignored (it would remap every later time) and an event's CPU is at most its wall time;
 * both counted with the clipped times. A file not closed may be read while it grows (perfgroup
 * top, metrics, a conversion of a running program): only sealed chunks have a ceiling there
 * (a crashed writer's last chunks have no checksum to trust either; the output bound holds). */
uint64_t pgc_clip_hz(const struct pgc_file *f)
{
    uint64_t hz = f->hdr.clock == PGF_CLOCK_MONOTONIC || !f->tsc_hz ? 1000000000u : f->tsc_hz;
    return hz < 1000000u ? 1000000u : hz > 1000000000000u ? 1000000000000u : hz;
}

void pgc_clip_init(struct pgc_file *f, int following)
{
    uint64_t hi = f->hdr.end_tsc > f->start_tsc ? f->hdr.end_tsc : f->start_tsc;
    int clocks = f->hdr.end_tsc != 0;
    for (size_t i = 0; i < pgr_chunk_count(f->r); i++) {
        const struct pgr_chunk_info *c = pgr_chunk(f->r, i);
        clocks |= c->first_tsc || c->last_tsc;
        if (c->first_tsc > hi)
            hi = c->first_tsc;
        if (c->last_tsc > hi)
            hi = c->last_tsc;
    }
    f->clip_lo = f->start_tsc;
    f->clip_slack = pgc_clip_hz(f) / 100;
    /* a file with no clock in its header or chunk headers (a hand-made one) has no ceiling:
     * the outputs' own budget (docs/converter.md, "Bounds") is what limits it */
    f->clip_hi = !clocks || hi > UINT64_MAX - f->clip_slack ? UINT64_MAX : hi + f->clip_slack;
    f->following = following;
    f->clip_cursor = 0;
    f->clip_seq = 0;
    f->clip_ceiling = f->clip_hi;
}

/* The ceiling of the chunk holding r: the reader streams chunks in pgr_chunk order. */
static uint64_t clip_ceiling(struct pgc_file *f, const struct pgr_record *r)
{
    if (r->chunk_seq == f->clip_seq && f->clip_seq)
        return f->clip_ceiling;
    size_t n = pgr_chunk_count(f->r);
    while (f->clip_cursor < n && pgr_chunk(f->r, f->clip_cursor)->seq != r->chunk_seq)
        f->clip_cursor++;
    if (f->clip_cursor == n) { /* not in order (cannot happen): search from the start */
        for (f->clip_cursor = 0; f->clip_cursor < n; f->clip_cursor++)
            if (pgr_chunk(f->r, f->clip_cursor)->seq == r->chunk_seq)
                break;
    }
    uint64_t ceil = f->following ? UINT64_MAX : f->clip_hi;
    if (f->clip_cursor < n) {
        const struct pgr_chunk_info *c = pgr_chunk(f->r, f->clip_cursor);
        if (c->state == PGF_CSTATE_FULL && f->hdr.version >= 2 && c->last_tsc &&
            c->last_tsc >= f->clip_lo)
            ceil = c->last_tsc > UINT64_MAX - f->clip_slack ? UINT64_MAX : c->last_tsc + f->clip_slack;
        if (!f->following && ceil > f->clip_hi)
            ceil = f->clip_hi;
    }
    f->clip_seq = r->chunk_seq;
    f->clip_ceiling = ceil;
    return ceil;
}

static void clip_count(struct pgc_file *f, const struct pgr_record *r)
{
    if (!f->counts.clipped++)
        f->counts.clipped_offset = r->offset;
}

/* [*b, *e] into [lo, ceil]: 1 if the end had to come down (damage), 0 otherwise */
static int clip_span(const struct pgc_file *f, uint64_t ceil, uint64_t *b, uint64_t *e)
{
    int hurt = 0;
    if (*e < *b)
        *e = *b;
    if (*b < f->clip_lo)
        *b = f->clip_lo;
    if (*e < f->clip_lo)
        *e = f->clip_lo;
    if (*e > ceil) {
        *e = ceil;
        hurt = 1;
    }
    if (*b > *e)
        *b = *e;
    return hurt;
}

void pgc_clip_record(struct pgc_file *f, struct pgr_record *r)
{
    uint64_t ceil, b, e;
    switch (r->kind) {
    case PGF_REC_INTERVAL:
        ceil = clip_ceiling(f, r);
        b = r->u.interval.start_tsc;
        e = r->u.interval.duration > UINT64_MAX - b ? UINT64_MAX : b + r->u.interval.duration;
        if (clip_span(f, ceil, &b, &e))
            clip_count(f, r);
        r->u.interval.start_tsc = b;
        r->u.interval.duration = e - b;
        break;
    case PGF_REC_EVENT: {
        ceil = clip_ceiling(f, r);
        b = r->u.event.begin_tsc, e = r->u.event.end_tsc;
        int hurt = clip_span(f, ceil, &b, &e);
        r->u.event.begin_tsc = b, r->u.event.end_tsc = e;
        /* CPU within wall: 1 % + 100 us of rounding allowed, then clamped and counted */
        uint64_t hz = pgc_clip_hz(f);
        double wall = (double)(e - b) * 1e9 / (double)hz;
        if ((double)r->u.event.cpu_ns > wall) {
            if ((double)r->u.event.cpu_ns > wall * 1.01 + 100000.0)
                hurt = 1;
            r->u.event.cpu_ns = wall > 0 ? (uint64_t)wall : 0;
        }
        if (hurt)
            clip_count(f, r);
        break;
    }
    case PGF_REC_MARKER:
        ceil = clip_ceiling(f, r);
        b = r->u.marker.start_tsc, e = r->u.marker.end_tsc;
        if (clip_span(f, ceil, &b, &e))
            clip_count(f, r);
        r->u.marker.start_tsc = b, r->u.marker.end_tsc = e;
        break;
    case PGF_REC_THREAD_END:
        ceil = clip_ceiling(f, r);
        b = e = r->u.thread_end.end_tsc;
        if (clip_span(f, ceil, &b, &e))
            clip_count(f, r);
        r->u.thread_end.end_tsc = e;
        break;
    case PGF_REC_CLOCK:
        ceil = clip_ceiling(f, r);
        b = e = r->u.clock.tsc;
        if (clip_span(f, ceil, &b, &e))
            clip_count(f, r);
        if (e != r->u.clock.tsc) /* outside the file's clocks: no mapping from it */
            r->u.clock.monotonic_ns = 0;
        r->u.clock.tsc = e;
        if (f->hdr.clock != PGF_CLOCK_MONOTONIC && f->tsc_hz && r->u.clock.monotonic_ns) {
            double since = (double)(e - f->clip_lo) * 1e9 / (double)f->tsc_hz;
            double want = (double)f->start_monotonic_ns + since;
            double off = (double)r->u.clock.monotonic_ns - want;
            if (off < 0)
                off = -off;
            if (off > 1e9 + 0.05 * since) {
                r->u.clock.monotonic_ns = 0; /* pgc_clock_update ignores it */
                clip_count(f, r);
            }
        }
        break;
    default:
        break;
    }
}

uint64_t pgc_thread_complete_from(const struct pgc_file *f, uint32_t ti)
{
    if (ti >= f->nthreads)
        return 0;
    /* reading order (pgr_chunk): DEFS chunks, then the others by (thread, seq), so the
     * thread's first is its oldest; found by bisection, whatever a file's thread count */
    uint32_t want = f->threads[ti].index;
    size_t lo = 0, hi = pgr_chunk_count(f->r);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct pgr_chunk_info *c = pgr_chunk(f->r, mid);
        if (c->kind == PGF_CHUNK_DEFS || c->thread < want)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t n = pgr_chunk_count(f->r); lo < n; lo++) {
        const struct pgr_chunk_info *c = pgr_chunk(f->r, lo);
        if (c->thread != want)
            break;
        if (c->kind == PGF_CHUNK_DATA)
            return c->records_before ? (c->first_tsc ? c->first_tsc : 1) : 0;
    }
    return 0;
}
