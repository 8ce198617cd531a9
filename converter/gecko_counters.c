/* SPDX-License-Identifier: MIT */
/*
 * gecko_counters.c — the per-group CPU counters: each thread's grid rows (cpugrid.c) to the
 * process's spill file, then, at the process's end, the heaviest groups' rows merged by time.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gecko.h"

static void counter_spill(struct gthread *t, int64_t ns, uint32_t group, uint64_t count)
{
    FILE *s = t->prof->cspill;
    struct crec rec = {ns, group, 0, count};
    if (s && fwrite(&rec, sizeof(rec), 1, s) != 1 && !t->prof->out->err)
        t->prof->out->err = errno ? errno : EIO;
}

/* Per-group CPU counters: the rows of cpugrid.c, per thread to a spill file merged by time
 * at the process's end. */
void pgc_counter_row(void *ctx, uint32_t gi, int64_t ns, uint64_t count)
{
    counter_spill(ctx, ns, gi, count);
}

/* ---- Counters ------------------------------------------------------------------------ */

/* The merge's min-heap of thread segments (indexes into head) by their next row's time,
 * ties by index: a pop is O(log threads), not a scan of them all (10,000 threads: 7 s of
 * scans before, issue 34). */
static int crec_before(const struct crec *head, uint32_t a, uint32_t b)
{
    return head[a].ns < head[b].ns || (head[a].ns == head[b].ns && a < b);
}

static void cheap_down(uint32_t *h, uint32_t n, uint32_t i, const struct crec *head)
{
    for (;;) {
        uint32_t l = 2 * i + 1, m = i;
        if (l < n && crec_before(head, h[l], h[m]))
            m = l;
        if (l + 1 < n && crec_before(head, h[l + 1], h[m]))
            m = l + 1;
        if (m == i)
            return;
        uint32_t t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

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

void pgc_counters_write(struct gecko *prof)
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
    uint32_t *heap = calloc(nc ? nc : 1, sizeof(*heap));
    if (prof->cspill && fflush(prof->cspill) && !o->err)
        o->err = errno ? errno : EIO;
    for (uint32_t k = 0; k < nchosen && head && heap && prof->cspill; k++) {
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
        uint32_t nh = 0;
        for (uint32_t i = 0; i < nc; i++) {
            prof->cseg[i].pos = prof->cseg[i].start;
            prof->cseg[i].n = prof->cseg[i].i = 0;
            if (cseg_next(prof, &prof->cseg[i], gi, &head[i]))
                heap[nh++] = i;
        }
        for (uint32_t i = nh / 2; i-- > 0;)
            cheap_down(heap, nh, i, head);
        /* rows of several threads at one time become one row (their sum): a second row at
         * the same time would be a rate over no time */
        uint64_t n = 0, sum = 0;
        int64_t last = INT64_MIN;
        for (;;) {
            uint32_t m = nh ? heap[0] : UNKNOWN;
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
            if (!cseg_next(prof, &prof->cseg[m], gi, &head[m]))
                heap[0] = heap[--nh];
            cheap_down(heap, nh, 0, head);
        }
        PGC_LIT(o, "]}}");
    }
    free(head);
    free(heap);
    PGC_LIT(o, "]");
}
