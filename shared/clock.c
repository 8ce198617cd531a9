/* SPDX-License-Identifier: MIT */
/*
 * clock.c — a thread's tsc -> ns-since-process-start mapping (struct pgc_clock), following
 * its PGF_REC_CLOCK records; times and durations clamped so that no arithmetic on them
 * overflows.
 */
#include "pgshared.h"

/* Times are kept within +-2^61 ns (73 years) and durations within 2^61 ns, so any sum or
 * difference of two of them fits in int64_t: a damaged timestamp gives a wrong time, never
 * undefined arithmetic. */
#define NS_LIMIT ((double)(1ll << 61))

static int64_t clamp_ns(double v)
{
    if (v != v)
        return 0;
    if (v > NS_LIMIT)
        return 1ll << 61;
    if (v < -NS_LIMIT)
        return -(1ll << 61);
    return (int64_t)v;
}

/* ---- Clock --------------------------------------------------------------------------- */
void pgc_clock_init(struct pgc_clock *c, const struct pgc_file *f)
{
    c->ref_tsc = f->start_tsc;
    c->ref_ns = 0;
    if (f->hdr.clock == PGF_CLOCK_MONOTONIC || f->tsc_hz == 0)
        c->ns_per_tick = 1.0;
    else
        c->ns_per_tick = 1e9 / (double)f->tsc_hz;
}

void pgc_clock_update(struct pgc_clock *c, const struct pgc_file *f,
                      const struct pgr_record *r)
{
    if (r->kind != PGF_REC_CLOCK || r->u.clock.monotonic_ns == 0 || f->hdr.clock == PGF_CLOCK_MONOTONIC)
        return;
    c->ref_tsc = r->u.clock.tsc;
    c->ref_ns = clamp_ns((double)r->u.clock.monotonic_ns - (double)f->start_monotonic_ns);
}

int64_t pgc_clock_ns(const struct pgc_clock *c, uint64_t tsc)
{
    double d = (double)(int64_t)(tsc - c->ref_tsc) * c->ns_per_tick;
    return clamp_ns((double)c->ref_ns + d);
}

int64_t pgc_ticks_ns(const struct pgc_clock *c, uint64_t ticks)
{
    return clamp_ns((double)ticks * c->ns_per_tick);
}

