/* SPDX-License-Identifier: MIT */
/*
 * runtime/rec_totals.c — the file's whole-run totals (format.h, struct pgf_totals_slot):
 * one slot per thread and group, rewritten as a seqlock at every commit of the thread, so
 * the file keeps them whatever chunks are recycled; when the slots run out, the ended
 * threads' slots are folded into their group's "ended threads" row.
 */
#define _GNU_SOURCE
#include "rec_state.h"

/* ---- whole-run totals (format.h, struct pgf_totals_slot) ------------------------------- */

/* The seqlock writer's fence between the odd seq and the slot's stores. The slots' readers
 * are other processes (the converter, top, metrics), which TSan does not see, and TSan models
 * no fence (GCC warns, -Wtsan): there, a compiler barrier keeps the order (TSan builds are
 * x86-64 test builds, where stores are not reordered with stores). */
#if defined(__SANITIZE_THREAD__)
#define TOT_FENCE() __atomic_signal_fence(__ATOMIC_SEQ_CST)
#else
#define TOT_FENCE() __atomic_thread_fence(__ATOMIC_RELEASE)
#endif

/* Rewrite slot s as a seqlock: seq odd, the stores, seq even (release): a reader that sees
 * the same even seq before and after its copy has the slot whole. */
#define TOT_WRITE(s, body)                                                                    \
    do {                                                                                      \
        uint32_t seq_ = (s)->seq;                                                             \
        __atomic_store_n(&(s)->seq, seq_ | 1u, __ATOMIC_RELAXED);                             \
        TOT_FENCE();                                                                          \
        body;                                                                                 \
        __atomic_store_n(&(s)->seq, (seq_ | 1u) + 1u, __ATOMIC_RELEASE);                      \
    } while (0)

/* d += s by PG_TOTALS_FOLD's rule, and the largest wall time in one event */
static void totals_fold(struct pgf_totals *d, const struct pgf_totals *s) {
    if (s->events && s->max_wall_ns > d->max_wall_ns)
        d->max_wall_ns = s->max_wall_ns;
    PG_TOTALS_FOLD(d, s);
}

/* Room ran out: every ended thread's slot is folded into its group's "ended threads" row
 * (thread 0) and freed. recorder.mu held. */
static void totals_fold_locked(void) {
    uint32_t threads = 0;
    for (uint32_t i = 0; i < recorder.tot_used; i++) {
        struct pgf_totals_slot *s = &recorder.tot[i];
        if ((s->flags & (PGF_TOTALS_F_ENDED | PGF_TOTALS_F_FOLDED)) != PGF_TOTALS_F_ENDED)
            continue;
        uint32_t gid = s->group;
        threads += gid == 0;
        if (gid >= recorder.ended_cap) {
            uint32_t nc = recorder.ended_cap ? recorder.ended_cap : 1024;
            while (nc <= gid)
                nc *= 2;
            uint32_t *n = perfgroup__map(nc * sizeof *n);
            if (!n)
                continue;
            if (recorder.ended_row) {
                memcpy(n, recorder.ended_row, recorder.ended_cap * sizeof *n);
                munmap(recorder.ended_row, recorder.ended_cap * sizeof *n);
            }
            recorder.ended_row = n, recorder.ended_cap = nc;
        }
        if (!recorder.ended_row[gid]) { /* the group's first: this slot becomes the row */
            TOT_WRITE(s, { s->thread = 0; s->flags = PGF_TOTALS_F_USED | PGF_TOTALS_F_FOLDED | PGF_TOTALS_F_SELF; });
            recorder.ended_row[gid] = i + 1;
            continue;
        }
        struct pgf_totals_slot *row = &recorder.tot[recorder.ended_row[gid] - 1];
        TOT_WRITE(row, totals_fold(&row->t, &s->t));
        TOT_WRITE(s, { s->thread = s->group = s->flags = 0; memset(&s->t, 0, sizeof s->t); });
        recorder.tot_free[recorder.tot_nfree++] = i;
    }
    __atomic_fetch_add(&recorder.hdr->threads_folded, threads, __ATOMIC_RELAXED);
}

/* A slot for thread `thread`, group `gid`: a free one, else a new one (its blocks
 * allocated a 64 KiB stretch at a time: a full disk is a lost total, never a SIGBUS), else
 * the ended threads folded first. -1: none. recorder.mu held. */
static int64_t totals_take_locked(uint32_t thread, uint32_t gid) {
    if (!recorder.tot)
        return -1;
    if (!recorder.tot_nfree && recorder.tot_used == recorder.tot_count)
        totals_fold_locked();
    uint32_t i;
    if (recorder.tot_nfree) {
        i = recorder.tot_free[--recorder.tot_nfree];
    } else if (recorder.tot_used < recorder.tot_count) {
        i = recorder.tot_used;
        uint64_t end = recorder.hdr->totals_offset + (uint64_t)(i + 1) * sizeof *recorder.tot;
        if (end > recorder.tot_alloc_end) {
            uint64_t limit = recorder.hdr->totals_offset + (uint64_t)recorder.tot_count * sizeof *recorder.tot;
            uint64_t to = (end + (64u << 10) - 1) & ~(uint64_t)((64u << 10) - 1);
            if (to > limit)
                to = limit;
            int rc = posix_fallocate(recorder.fd, (off_t)recorder.tot_alloc_end, (off_t)(to - recorder.tot_alloc_end));
            if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL)
                return -1;
            recorder.tot_alloc_end = to;
        }
        recorder.tot_used++;
        __atomic_store_n(&recorder.hdr->totals_used, recorder.tot_used, __ATOMIC_RELAXED);
    } else {
        return -1;
    }
    struct pgf_totals_slot *s = &recorder.tot[i];
    TOT_WRITE(s, {
        memset(&s->t, 0, sizeof s->t);
        s->thread = thread;
        s->group = gid;
        s->flags = PGF_TOTALS_F_USED | PGF_TOTALS_F_SELF; /* this writer measures self time */
    });
    return i;
}

/* w's slot of group gid in the current file, taken now (its first commit of the group in
 * the file: out of line, so that the every-commit path below saves no register for it).
 * NULL: none (no file, no room, or the recorder busy on this thread: a signal handler). */
static __attribute__((noinline, cold)) struct pgf_totals_slot *totals_slot_take(struct writer *w,
                                                                                uint32_t gid) {
    if (perfgroup__rec_lock())
        return NULL;
    struct pgf_totals_slot *s = NULL;
    if (!recorder.hdr && recorder.child_pending)
        perfgroup__rec_child_open_locked();
    if (!recorder.hdr || !recorder.tot)
        goto out;
    if (w->tot_gen != recorder.gen) { /* a new file: no slot yet */
        if (w->tmap)
            memset(w->tmap, 0, w->tmap_cap * sizeof *w->tmap);
        w->tot_gen = recorder.gen;
        w->tot_base = recorder.tot;
    }
    if (gid >= w->tmap_cap) {
        uint32_t nc = w->tmap_cap ? w->tmap_cap : 1024;
        while (nc <= gid)
            nc *= 2;
        uint32_t *n = perfgroup__map(nc * sizeof *n);
        if (!n)
            goto out;
        if (w->tmap) {
            memcpy(n, w->tmap, w->tmap_cap * sizeof *n);
            munmap(w->tmap, w->tmap_cap * sizeof *n);
        }
        w->tmap = n, w->tmap_cap = nc;
    }
    int64_t i = totals_take_locked(w->index, gid);
    if (i < 0) {
        __atomic_fetch_add(&recorder.hdr->totals_lost, 1, __ATOMIC_RELAXED);
        goto out;
    }
    w->tmap[gid] = (uint32_t)i + 1;
    s = &recorder.tot[i];
out:
    perfgroup__rec_unlock();
    return s;
}

void perfgroup__rec_totals(struct perfgroup_rec_thread *hw, uint32_t group_id,
                           const struct pgf_totals *t) {
    struct writer *w = (struct writer *)hw;
    if (!w || w->dead)
        return;
    struct pgf_totals_slot *s =
        w->tot_gen == __atomic_load_n(&recorder.gen, __ATOMIC_RELAXED) && group_id < w->tmap_cap &&
                w->tmap[group_id]
            ? &w->tot_base[w->tmap[group_id] - 1]
            : totals_slot_take(w, group_id);
    if (s)
        TOT_WRITE(s, memcpy(&s->t, t, sizeof s->t));
}

/* The thread ended: its slots are final (and may be folded when room runs out). recorder.mu held. */
PG_HIDDEN void perfgroup__rec_totals_end_locked(struct writer *w) {
    if (!recorder.tot || w->tot_gen != recorder.gen)
        return;
    for (uint32_t gid = 0; gid < w->tmap_cap; gid++)
        if (w->tmap[gid]) {
            struct pgf_totals_slot *s = &recorder.tot[w->tmap[gid] - 1];
            TOT_WRITE(s, s->flags |= PGF_TOTALS_F_ENDED);
        }
}
