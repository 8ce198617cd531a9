/* SPDX-License-Identifier: MIT */
/*
 * totals.c — the whole-run totals and the open events' slots of a recording
 * (format.h), read whole whatever a live writer or a neighbour does. See reader_int.h.
 */
#define _GNU_SOURCE
#include "reader_int.h"


/* The open events' chunk (format.h, PGF_CHUNK_OPEN): the slots that are whole (even seq) and
 * in their place (slot i holds thread i + 1). A second such chunk
 * is refused (a writer makes one per file). */
PGR_INTERNAL int pgr__read_open_slots(pgr_reader *r, uint64_t at) {
    if (r->open) {
        pgr__fail(r, at + 4, "a second open-events chunk");
        return -1;
    }
    size_t n = (r->hdr.chunk_size - PGF_CHUNK_HEADER_SIZE) / sizeof(struct pgf_open_slot);
    struct pgf_open_slot *all = malloc(n * sizeof *all); /* one read: chunk_size <= 16 MiB */
    r->open = calloc(n ? n : 1, sizeof *r->open);
    if (!all || !r->open) {
        free(all);
        pgr__fail(r, at, "out of memory");
        return -1;
    }
    long got = pgr__read_at(r, all, n * sizeof *all, at + PGF_CHUNK_HEADER_SIZE);
    size_t whole = got > 0 ? (size_t)got / sizeof *all : 0; /* a cut file: the chunk-beyond
                                                             * warning says so */
    for (size_t i = 0; i < whole; i++)
        if (!(all[i].seq & 1) && all[i].thread == i + 1) { /* else: empty, or half
                                                            * rewritten when its writer died */
            struct pgf_open_slot *s = &r->open[r->nopen++];
            *s = all[i];
            if (s->ngroups > PGF_OPEN_GROUPS) /* damaged: what the array can hold */
                s->ngroups = PGF_OPEN_GROUPS;
            if (s->nrunning > s->ngroups)
                s->nrunning = s->ngroups;
        }
    free(all);
    return 0;
}

#define TOT_SEG 256u /* totals slots a pread (48 KiB) */

/* Can this process read its own memory with process_vm_readv (a seccomp profile or an old
 * kernel may refuse it)? Asked once. */
static int can_read_self(void) {
    static int known; /* 0 not asked, 1 yes, 2 no */
    int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (!k) {
        uint32_t from = 1, to = 0;
        struct iovec l = {&to, sizeof to}, rm = {&from, sizeof from};
        k = process_vm_readv(getpid(), &l, 1, &rm, 1, 0) == (ssize_t)sizeof to && to == 1 ? 1 : 2;
        __atomic_store_n(&known, k, __ATOMIC_RELAXED);
    }
    return k == 1;
}

/* A live file's slots not yet read whole (ok[i] 0), read as a seqlock's reader reads them:
 * the seq, the copy, the seq again, within one system call — not the microseconds between
 * two preads: a thread that commits an event every microsecond rewrites its slots as often,
 * and preads almost never saw such a slot's seq unchanged (the slot was left out and the live
 * totals went back: recording.totals). The copies are one process_vm_readv from a read-only
 * mapping of the region that this reader never touches itself: a neighbour that truncates
 * the file under it makes the call fail with EFAULT (or stop short), where a load from the
 * mapping would take SIGBUS. Up to PVR_SLOTS slots a call; slots not read whole after 4096
 * tries, or PVR_BUDGET slot reads in all, stay !ok; the file shrank under the read: those not read stay !ok, a warning says
 * so. The region cannot be mapped: nothing more is read. */
/* The bytes of a totals slot this reader knows (format.h: a reader reads what it knows, a
 * later writer's slot may be larger; an older writer's 192 bytes had zeros past 176). */
static size_t slot_known(uint32_t sz) {
    return sz < sizeof(struct pgf_totals_slot) ? sz : sizeof(struct pgf_totals_slot);
}

#define PVR_SLOTS 340    /* 3 iovecs a slot, IOV_MAX 1024 */
#define PVR_BUDGET 32768 /* slot reads in all: ~0.25 s at ~7 us each (a 2-vCPU VM) */
static void read_totals_live(pgr_reader *r, uint32_t n, uint32_t sz, uint8_t *ok,
                             uint32_t *left)
{
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        return;
    uint64_t off = r->hdr.totals_offset & ~(uint64_t)(page - 1);
    size_t len = (size_t)(r->hdr.totals_offset - off) + (size_t)n * sz;
    uint8_t *map = mmap(NULL, len, PROT_READ, MAP_SHARED, r->fd, (off_t)off);
    if (map == MAP_FAILED)
        return;
    const uint8_t *base = map + (r->hdr.totals_offset - off);
    struct iovec loc[3 * PVR_SLOTS], rem[3 * PVR_SLOTS];
    uint32_t s1[PVR_SLOTS], s2[PVR_SLOTS], idx[PVR_SLOTS];
    pid_t self = getpid();
    int cut = 0;
    /* bounded work: 4,096 tries of each slot left, at most PVR_BUDGET slot reads in all (a
     * writer killed in its copy leaves a slot odd for good; a crafted file, all of them) */
    uint32_t budget = PVR_BUDGET;
    for (int tries = 0; tries < 4096 && *left && !cut && budget; tries++) {
        for (uint32_t i = 0; i < n && !cut && budget;) {
            int k = 0;
            for (; i < n && k < PVR_SLOTS && (uint32_t)k < budget; i++) {
                if (ok[i])
                    continue;
                void *slot = (void *)(base + (size_t)i * sz);
                idx[k] = i;
                loc[3 * k] = (struct iovec){&s1[k], sizeof s1[k]};
                loc[3 * k + 1] = (struct iovec){&r->totals[i], slot_known(sz)};
                loc[3 * k + 2] = (struct iovec){&s2[k], sizeof s2[k]};
                rem[3 * k] = (struct iovec){slot, sizeof s1[k]};
                rem[3 * k + 1] = (struct iovec){slot, slot_known(sz)};
                rem[3 * k + 2] = (struct iovec){slot, sizeof s2[k]};
                k++;
            }
            if (!k)
                break;
            budget -= (uint32_t)k;
            ssize_t got = process_vm_readv(self, loc, (unsigned long)(3 * k), rem,
                                           (unsigned long)(3 * k), 0);
            const size_t each = 2 * sizeof s1[0] + slot_known(sz);
            int whole = got < 0 ? 0 : (int)((size_t)got / each);
            if (whole < k)
                cut = 1; /* the file shrank under us (EFAULT), or an error: stop here */
            for (int j = 0; j < whole; j++) {
                uint32_t x = idx[j];
                if ((s1[j] & 1) || s2[j] != s1[j] || r->totals[x].seq != s1[j])
                    continue;
                ok[x] = 1 + ((r->totals[x].flags & PGF_TOTALS_F_USED) != 0);
                (*left)--;
            }
        }
    }
    munmap(map, len);
    if (cut)
        pgr__warn(r, r->hdr.totals_offset, "the file shrank while its totals were read (truncated "
             "by another process?): %u of %u slots not read", *left, n);
}

/* The whole-run totals region (format.h, version 3). A closed file: read whole, then read
 * again; a slot whose seq is odd or changed between the two is torn (a writer killed in
 * it), left out and counted. A live file: read whole three times, then the slots that
 * changed meanwhile one by one as a seqlock (read_totals_live), else more whole reads, up
 * to 8. Only preads and process_vm_readv touch the file: a neighbour that truncates it
 * while it is read costs slots (a warning says so), never a SIGBUS. Slots in use are kept,
 * in file order. A region past the end of the file (cut) is read as far as it goes. */
PGR_INTERNAL void pgr__read_totals(pgr_reader *r) {
    const struct pgf_file_header *h = &r->hdr;
    if (h->version < 3 || h->totals_offset == 0)
        return;
    uint64_t want = h->chunks_offset + (uint64_t)h->chunk_count * h->chunk_size;
    /* a damaged header: the totals are not believed, the events are still read */
    if (h->totals_offset != want) {
        pgr__warn(r, 440, "bad totals_offset %llu (the chunks end at %llu): totals ignored",
             (unsigned long long)h->totals_offset, (unsigned long long)want);
        return;
    }
    uint32_t sz = h->totals_slot_size;
    if (sz < PGF_TOTALS_SLOT_MIN || sz > 4096 || (sz & 7)) {
        pgr__warn(r, 448, "bad totals_slot_size %u: totals ignored", sz);
        return;
    }
    if (h->totals_count > (1u << 22) || h->totals_used > h->totals_count) {
        pgr__warn(r, 452, "bad totals_count %u / totals_used %u: totals ignored", h->totals_count,
             h->totals_used);
        return;
    }
    uint32_t n = h->totals_used;
    if (h->state != PGF_STATE_CLOSED) { /* live: slots taken since the header was read */
        uint32_t used;
        if (pgr__read_at(r, &used, sizeof used, 456) == (long)sizeof used && used > n &&
            used <= h->totals_count)
            n = used;
    }
    if (r->file_size <= h->totals_offset)
        n = 0;
    else if ((r->file_size - h->totals_offset) / sz < n)
        n = (uint32_t)((r->file_size - h->totals_offset) / sz);
    if (!n)
        return;
    int live = h->state != PGF_STATE_CLOSED;
    size_t len = (size_t)TOT_SEG * sz;
    uint8_t *buf[3] = {malloc(len), malloc(len), live ? malloc(len) : NULL};
    uint8_t *ok = calloc(n, 1);
    r->totals = calloc(n, sizeof *r->totals);
    if (!buf[0] || !buf[1] || (live && !buf[2]) || !ok || !r->totals) {
        free(buf[0]), free(buf[1]), free(buf[2]), free(ok);
        pgr__fail(r, 0, "out of memory for %u totals slots", n);
        return;
    }
    uint32_t left = n;
    /* TOT_SEG slots at a time, each read whole, each read after the one before
     * (READ_FENCE): a closed file's slot is taken from the first read when the second has
     * its seq; a live file's from the middle one of three with the same even seq (its copy
     * lies between two reads of an unchanged seq). That takes the slots nobody writes now;
     * a live file's others are read one by one (read_totals_live), else by more reads of
     * their stretch, up to 8. */
    int pvr = live && can_read_self();
    int reads = !live ? 2 : pvr ? 3 : 8, need = live ? 3 : 2, shrank = 0;
    for (uint32_t s0 = 0; s0 < n && !shrank; s0 += TOT_SEG) {
        uint32_t m = n - s0 < TOT_SEG ? n - s0 : TOT_SEG, mleft = m;
        uint64_t at = h->totals_offset + (uint64_t)s0 * sz;
        for (int t = 0; t < reads && mleft; t++) {
            long got = pgr__read_at(r, buf[t % 3], (size_t)m * sz, at);
            if (got != (long)((size_t)m * sz)) {
                if (got >= 0)
                    pgr__warn(r, at + (uint64_t)got, "the file shrank while its totals were "
                         "read (truncated by another process?): %u of %u slots not read",
                         n - s0, n);
                shrank = 1;
                break;
            }
            READ_FENCE();
            if (t + 1 < need)
                continue;
            const uint8_t *first = buf[(t + 1 - need) % 3], *data = buf[(t + 2 - need) % 3],
                          *last = buf[t % 3];
            for (uint32_t j = 0; j < m; j++) {
                if (ok[s0 + j])
                    continue;
                const struct pgf_totals_slot *x = (const void *)(first + (size_t)j * sz);
                const struct pgf_totals_slot *d = (const void *)(data + (size_t)j * sz);
                const struct pgf_totals_slot *y = (const void *)(last + (size_t)j * sz);
                if ((x->seq & 1) || x->seq != d->seq || d->seq != y->seq)
                    continue;
                ok[s0 + j] = 1 + ((d->flags & PGF_TOTALS_F_USED) != 0);
                memcpy(&r->totals[s0 + j], d, slot_known(sz));
                left--, mleft--;
            }
            /* a closed file: nobody writes it, a torn slot stays torn (a writer killed in it) */
        }
    }
    if (pvr && left && !shrank)
        read_totals_live(r, n, sz, ok, &left);
    r->totals_torn = left;
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (ok[i] == 2)
            r->totals[k++] = r->totals[i];
    r->ntotals = k;
    free(ok);
    free(buf[0]), free(buf[1]), free(buf[2]);
}

size_t pgr_totals(const pgr_reader *r, const struct pgf_totals_slot **slots, uint64_t *torn) {
    *slots = r->totals;
    if (torn)
        *torn = r->totals_torn;
    return r->ntotals;
}

size_t pgr_open_events(const pgr_reader *r, const struct pgf_open_slot **slots) {
    *slots = r->open;
    return r->nopen;
}
