/* SPDX-License-Identifier: MIT */
/*
 * traceself.c — a trace-mode interval's self time (docs/converter.md, "Self time in trace
 * mode"): its length less the lengths of the acquiring intervals nested directly in it — an
 * interval that acquired nothing (a re-entry) is looked through, it passes what was nested in
 * it down — the rule the runtime follows for its frames (docs/accounting.md "Self time").
 * Records arrive at their exit, innermost first, so per depth one sum waits for the interval
 * open there.
 */
#include "pgconv.h"

void pgc_trace_self_reset(struct pgc_trace_self *ts)
{
    for (uint32_t d = 0; d < ts->top; d++)
        ts->inner[d] = 0;
    ts->top = 0;
}

int64_t pgc_trace_self_end(struct pgc_trace_self *ts, uint32_t depth, int acquired, int64_t len_ns)
{
    if (depth >= PGC_TRACE_DEPTHS)
        depth = PGC_TRACE_DEPTHS - 1;
    if (len_ns < 0)
        len_ns = 0;
    int64_t inner = ts->inner[depth];
    /* inner[d] is 0 for every d >= top. Sums deeper than this interval belong to intervals
     * that never ended inside it (frames a longjmp left and the runtime dropped): what they
     * held stays in this one's self, as the runtime keeps a dropped frame's time in the
     * frame below it. */
    for (uint32_t d = depth; d < ts->top; d++)
        ts->inner[d] = 0;
    ts->top = depth;
    int64_t pass = acquired ? len_ns : inner;
    if (depth > 0) /* saturating: a damaged file's lengths may add up past 2^63 */
        ts->inner[depth - 1] = pass > INT64_MAX - ts->inner[depth - 1] ? INT64_MAX
                                                                       : ts->inner[depth - 1] + pass;
    if (!acquired)
        return -1;
    return inner < len_ns ? len_ns - inner : 0;
}
