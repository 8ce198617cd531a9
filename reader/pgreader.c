/* SPDX-License-Identifier: MIT */
/*
 * pgreader.c — validating, streaming reader of perfgroup recordings (see pgreader.h).
 *
 * Nothing read from the file is trusted: the header's sizes are range-checked, each chunk
 * header is checked against the chunk size, each msgpack length against the bytes left in
 * the record's chunk, each count against the bytes that could hold it. Reads use pread into
 * one chunk-sized buffer, so memory is one chunk + the chunk index + the decoded arrays of
 * the current record.
 */
#define _GNU_SOURCE
#include "pgreader.h"
#include "perfgroup/crc32c.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Orders the reads of successive preads of a live chunk header (an acquire fence; the
 * system calls order them on x86 anyway). TSan models no fence, and the reads it could see
 * are the kernel's: there it is left out. */
#if defined(__SANITIZE_THREAD__)
#define READ_FENCE() ((void)0)
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define READ_FENCE() ((void)0)
#endif
#endif
#ifndef READ_FENCE
#define READ_FENCE() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#endif

#define MAX_WARNINGS 32
#define MAX_DEPTH 16

struct pgr_reader {
    int fd;
    uint64_t file_size;
    struct pgf_file_header hdr;
    struct pgr_chunk_info *chunks;   /* used chunks, reading order */
    size_t nchunks;
    int has_error;
    struct pgr_error error;
    struct pgr_error warnings[MAX_WARNINGS];
    size_t nwarnings;
    int warned_kind[256];

    /* current chunk */
    size_t next_chunk;               /* index into chunks of the next one to load */
    const struct pgr_chunk_info *cur;
    uint8_t *buf;                    /* chunk_size bytes */
    uint64_t buf_off;                /* file offset of buf[0] */
    uint32_t pos, end;               /* in buf */
    uint32_t parsed;                 /* records parsed in the current chunk */
    int cut;                         /* the current chunk is cut by the end of the file */
    int loaded;
    uint32_t from;                   /* committed bytes of the current chunk skipped (resume) */
    uint64_t skipped;                /* chunks recycled by the writer while we read them */
    uint64_t corrupt;                /* sealed chunks whose CRC-32C did not match: skipped */
    struct pgf_open_slot *open;      /* the open events' slots that were whole (format.h) */
    size_t nopen;
    struct pgf_totals_slot *totals;  /* the whole-run totals slots that were whole (format.h) */
    size_t ntotals;
    uint64_t totals_torn;            /* slots rewritten under every try (a live file) */
    int warned_skipped, warned_corrupt;
    pgr_resume_fn resume;
    void *resume_ctx;
    /* a recording still being written, up to PGR_SNAPSHOT_MAX of chunks: every chunk copied
     * in one read at open (snap), then each chunk's seq read again (snap_seq); read_at serves
     * the chunk area from the copy (see take_snapshot) */
    uint8_t *snap;
    uint64_t snap_len;
    uint64_t *snap_seq;

    /* arrays of the current record */
    struct pgr_str *args; size_t args_cap;
    uint32_t *ids; size_t ids_cap;
    struct pgr_event_group *groups; size_t groups_cap;
};

static void fail(pgr_reader *r, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(pgr_reader *r, uint64_t off, const char *fmt, ...) {
    if (r->has_error)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error.message, sizeof r->error.message, fmt, ap);
    va_end(ap);
    r->error.offset = off;
    r->has_error = 1;
}

static void warn(pgr_reader *r, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void warn(pgr_reader *r, uint64_t off, const char *fmt, ...) {
    if (r->nwarnings == MAX_WARNINGS)
        return;
    struct pgr_error *w = &r->warnings[r->nwarnings++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->message, sizeof w->message, fmt, ap);
    va_end(ap);
    w->offset = off;
}

/* Read exactly len bytes at off, or fewer only at the end of the file. Returns bytes read,
 * -1 on error (sticky error set). */
static long read_at(pgr_reader *r, void *dst, size_t len, uint64_t off) {
    size_t got = 0;
    uint64_t base = r->hdr.chunks_offset;
    if (r->snap && off >= base && off - base < r->snap_len) {
        uint64_t n = r->snap_len - (off - base) < len ? r->snap_len - (off - base) : len;
        memcpy(dst, r->snap + (off - base), (size_t)n);
        return (long)n;
    }
    while (got < len) {
        ssize_t n = pread(r->fd, (char *)dst + got, len - got, (off_t)(off + got));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            fail(r, off, "cannot read: %s", strerror(errno));
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (long)got;
}

static int chunk_order(const void *a, const void *b) {
    const struct pgr_chunk_info *x = a, *y = b;
    int xd = x->kind == PGF_CHUNK_DEFS, yd = y->kind == PGF_CHUNK_DEFS;
    if (xd != yd)
        return yd - xd; /* DEFS first */
    if (!xd && x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int seq_order(const void *a, const void *b) {
    const struct pgr_chunk_info *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static uint64_t chunk_start(const pgr_reader *r, uint32_t index) {
    return r->hdr.chunks_offset + (uint64_t)index * r->hdr.chunk_size;
}

/* The chunk header at index i, read as a seqlock: seq, then the header, then magic and seq
 * again, each read ordered after the one before (the system calls order them; the fences
 * say so). A writer clears magic before it touches a header (take, recycle) and sets it
 * last with a new seq (format.h), so a header whose magic is set before and after and whose
 * seq did not change is one incarnation's, whole. A file nobody writes reads the same every
 * time. 1 = *h is consistent with magic set, 0 = not (magic 0 or other: see h->magic; or
 * the chunk is being taken or recycled now), -1 = read error. */
static int read_chunk_header(pgr_reader *r, uint32_t index, struct pgf_chunk_header *h) {
    uint64_t at = chunk_start(r, index), s1;
    struct { uint32_t magic; uint16_t kind, state; uint64_t seq; } again;
    if (read_at(r, &s1, sizeof s1, at + 8) != (long)sizeof s1)
        goto short_read;
    READ_FENCE();
    if (read_at(r, h, sizeof *h, at) != (long)sizeof *h)
        goto short_read;
    READ_FENCE();
    if (read_at(r, &again, sizeof again, at) != (long)sizeof again)
        goto short_read;
    return h->magic == PGF_CHUNK_MAGIC && again.magic == PGF_CHUNK_MAGIC && h->seq == s1 &&
           again.seq == s1;
short_read:
    fail(r, at, "cannot read: chunk header past end of file");
    return -1;
}

/* The open events' chunk (format.h, PGF_CHUNK_OPEN): the slots that are whole (even seq) and
 * in their place (slot i holds thread i + 1). A second such chunk
 * is refused (a writer makes one per file). */
static int read_open_slots(pgr_reader *r, uint64_t at) {
    if (r->open) {
        fail(r, at + 4, "a second open-events chunk");
        return -1;
    }
    size_t n = (r->hdr.chunk_size - PGF_CHUNK_HEADER_SIZE) / sizeof(struct pgf_open_slot);
    struct pgf_open_slot *all = malloc(n * sizeof *all); /* one read: chunk_size <= 16 MiB */
    r->open = calloc(n ? n : 1, sizeof *r->open);
    if (!all || !r->open) {
        free(all);
        fail(r, at, "out of memory");
        return -1;
    }
    long got = read_at(r, all, n * sizeof *all, at + PGF_CHUNK_HEADER_SIZE);
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

/* A live file's slots read as a seqlock's reader reads them: the seq, the copy, the seq
 * again, through a read-only mapping of the region — tens of ns between the two loads. A
 * thread that commits an event every microsecond rewrites its slots as often, and two preads
 * of the region, microseconds apart, almost never saw such a slot's seq unchanged (the
 * slot was left out and the live totals went back: recording.totals). Slots not read
 * whole after 4096 tries stay !ok; 0 if the region cannot be mapped (the caller preads). */

/* The bytes of a totals slot this reader knows (format.h: a reader reads what it knows, a
 * later writer's slot may be larger; an older writer's 192 bytes had zeros past 176). */
static size_t slot_known(uint32_t sz) {
    return sz < sizeof(struct pgf_totals_slot) ? sz : sizeof(struct pgf_totals_slot);
}
static int read_totals_mapped(pgr_reader *r, uint32_t n, uint32_t sz, uint8_t *ok,
                              uint32_t *left)
{
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        return 0;
    uint64_t off = r->hdr.totals_offset & ~(uint64_t)(page - 1);
    size_t len = (size_t)(r->hdr.totals_offset - off) + (size_t)n * sz;
    const uint8_t *map = mmap(NULL, len, PROT_READ, MAP_SHARED, r->fd, (off_t)off);
    if (map == MAP_FAILED)
        return 0;
    const uint8_t *base = map + (r->hdr.totals_offset - off);
    for (uint32_t i = 0; i < n; i++) {
        const struct pgf_totals_slot *x = (const void *)(base + (size_t)i * sz);
        for (int tries = 0; tries < 4096 && !ok[i]; tries++) {
            uint32_t s1 = __atomic_load_n(&x->seq, __ATOMIC_ACQUIRE);
            if (s1 & 1)
                continue;
            memcpy(&r->totals[i], x, slot_known(sz));
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            if (__atomic_load_n(&x->seq, __ATOMIC_RELAXED) != s1)
                continue;
            ok[i] = 1 + ((r->totals[i].flags & PGF_TOTALS_F_USED) != 0);
            (*left)--;
        }
    }
    munmap((void *)map, len);
    return 1;
}

/* The whole-run totals region (format.h, version 3). A closed file: read whole, then read
 * again; a slot whose seq is odd or changed between the two is torn (a writer killed in
 * it), left out and counted. A live file: mapped and read slot by slot as a seqlock
 * (read_totals_mapped), else with preads as a closed one but up to 8 times. Slots in use
 * are kept, in file order. A region past the end of the file (cut) is read as far as it
 * goes. */
static void read_totals(pgr_reader *r) {
    const struct pgf_file_header *h = &r->hdr;
    if (h->version < 3 || h->totals_offset == 0)
        return;
    uint64_t want = h->chunks_offset + (uint64_t)h->chunk_count * h->chunk_size;
    /* a damaged header: the totals are not believed, the events are still read */
    if (h->totals_offset != want) {
        warn(r, 440, "bad totals_offset %llu (the chunks end at %llu): totals ignored",
             (unsigned long long)h->totals_offset, (unsigned long long)want);
        return;
    }
    uint32_t sz = h->totals_slot_size;
    if (sz < PGF_TOTALS_SLOT_MIN || sz > 4096 || (sz & 7)) {
        warn(r, 448, "bad totals_slot_size %u: totals ignored", sz);
        return;
    }
    if (h->totals_count > (1u << 22) || h->totals_used > h->totals_count) {
        warn(r, 452, "bad totals_count %u / totals_used %u: totals ignored", h->totals_count,
             h->totals_used);
        return;
    }
    uint32_t n = h->totals_used;
    if (h->state != PGF_STATE_CLOSED) { /* live: slots taken since the header was read */
        uint32_t used;
        if (read_at(r, &used, sizeof used, 456) == (long)sizeof used && used > n &&
            used <= h->totals_count)
            n = used;
    }
    if (r->file_size <= h->totals_offset)
        n = 0;
    else if ((r->file_size - h->totals_offset) / sz < n)
        n = (uint32_t)((r->file_size - h->totals_offset) / sz);
    if (!n)
        return;
    uint8_t *a = malloc((size_t)n * sz), *b = malloc((size_t)n * sz);
    r->totals = calloc(n, sizeof *r->totals);
    if (!a || !b || !r->totals) {
        free(a), free(b);
        fail(r, 0, "out of memory for %u totals slots", n);
        return;
    }
    size_t len = (size_t)n * sz;
    uint8_t *ok = calloc(n, 1);
    if (!ok) {
        free(a), free(b);
        fail(r, 0, "out of memory for %u totals slots", n);
        return;
    }
    uint32_t left = n;
    /* mapped: what it could not read whole stays torn */
    int mapped = h->state != PGF_STATE_CLOSED && read_totals_mapped(r, n, sz, ok, &left);
    for (int tries = 0; !mapped && tries < 8 && left; tries++) {
        if (read_at(r, a, len, h->totals_offset) != (long)len)
            break;
        READ_FENCE();
        if (read_at(r, b, len, h->totals_offset) != (long)len)
            break;
        for (uint32_t i = 0; i < n; i++) {
            if (ok[i])
                continue;
            const struct pgf_totals_slot *x = (const void *)(a + (size_t)i * sz);
            const struct pgf_totals_slot *y = (const void *)(b + (size_t)i * sz);
            if ((x->seq & 1) || x->seq != y->seq)
                continue;
            ok[i] = 1 + ((x->flags & PGF_TOTALS_F_USED) != 0);
            memcpy(&r->totals[i], x, slot_known(sz));
            left--;
        }
        if (h->state == PGF_STATE_CLOSED)
            break; /* nobody writes it: a torn slot stays torn (a writer killed in it) */
    }
    r->totals_torn = left;
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (ok[i] == 2)
            r->totals[k++] = r->totals[i];
    r->ntotals = k;
    free(ok);
    free(a);
    free(b);
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

/* Offset of a chunk's first record: in version 1 the header field at 20, from version 2 on
 * always PGF_CHUNK_HEADER_SIZE (the field is the chunk's CRC-32C). */
static uint32_t first_record(const pgr_reader *r, const struct pgf_chunk_header *c) {
    return r->hdr.version == 1 ? c->crc32c : PGF_CHUNK_HEADER_SIZE;
}

/* A recording still being written recycles its data chunks as fast as the program fills
 * them: a small buffer (1 MiB of 4 KiB chunks) under a busy program goes round in about a
 * millisecond, faster than a chunk-by-chunk read (three reads of each header and one of its
 * records) gets through it: every chunk found at the scan had been recycled by the time its
 * records were read, and a conversion of the live file showed nothing. So a live file of at
 * most PGR_SNAPSHOT_MAX (8 MiB) of chunks is copied whole in one read first (the kernel copies
 * it in ascending order: a chunk's header before its records), then once more, for each
 * chunk's magic and seq (up to four tries, see below): a chunk whose seq did not change kept its records across the copy (a
 * writer clears magic before it touches a chunk it takes again, and sets a new seq), any
 * other is skipped and counted as recycled. What the reader gets is the buffer as it was
 * during that one read, which takes a fraction of a millisecond. */
/* 8 MiB: a buffer that small can go round in milliseconds; a bigger one takes longer to go
 * round than the chunk-by-chunk read, and copying it twice (and touching the copies) costs
 * more than it saves (a killed 64 MiB recording read twice over, 128 MiB of copies) */
#define PGR_SNAPSHOT_MAX (8u << 20)
static void take_snapshot(pgr_reader *r) {
    const struct pgf_file_header *h = &r->hdr;
    if (h->state == PGF_STATE_CLOSED || r->file_size <= h->chunks_offset)
        return;
    uint64_t len = r->file_size - h->chunks_offset;
    uint64_t want = (uint64_t)h->chunk_count * h->chunk_size;
    if (len > want)
        len = want;
    if (len > PGR_SNAPSHOT_MAX)
        return;
    uint32_t n = (uint32_t)(len / h->chunk_size) + 1;
    uint8_t *snap = malloc(len ? len : 1);
    uint64_t *seq = calloc(n, sizeof *seq);
    if (!snap || !seq) { /* no memory: read chunk by chunk as before */
        free(snap);
        free(seq);
        return;
    }
    uint8_t *again = malloc(len ? len : 1);
    /* touch both copies first: a page fault per 4 KiB page of a fresh buffer during the read
     * made one read of 1 MiB take 3 ms here instead of 0.05 ms */
    memset(snap, 0, (size_t)len);
    if (again)
        memset(again, 0, (size_t)len);
    /* A reader preempted between its two reads finds most chunks recycled: up to 4 tries,
     * until 3/4 of the chunks in use kept their seq across the two (else the last try) */
    long got = -1;
    for (int attempt = 0; attempt < 4 && again; attempt++) {
        long g1 = read_at(r, snap, (size_t)len, h->chunks_offset);
        READ_FENCE();
        long g2 = g1 < 0 ? -1 : read_at(r, again, (size_t)g1, h->chunks_offset);
        if (g2 < 0) {
            got = -1;
            break;
        }
        uint32_t used = 0, kept = 0;
        memset(seq, 0, n * sizeof *seq);
        for (uint32_t i = 0; i < n && (uint64_t)(i + 1) * h->chunk_size <= (uint64_t)g2; i++) {
            struct pgf_chunk_header c1, c2;
            memcpy(&c1, snap + (uint64_t)i * h->chunk_size, sizeof c1);
            memcpy(&c2, again + (uint64_t)i * h->chunk_size, sizeof c2);
            seq[i] = c2.magic == PGF_CHUNK_MAGIC ? c2.seq : 0;
            used += c1.magic == PGF_CHUNK_MAGIC;
            kept += c1.magic == PGF_CHUNK_MAGIC && c2.magic == PGF_CHUNK_MAGIC && c1.seq == c2.seq;
        }
        got = g2;
        if (kept * 4 >= used * 3)
            break;
    }
    if (got < 0) {
        free(again);
        free(snap);
        free(seq);
        return;
    }
    free(again);
    r->snap = snap;
    r->snap_len = (uint64_t)got;
    r->snap_seq = seq;
}

/* The first chunk at or after index i whose header is not in a hole of the file: a chunk
 * header in a hole reads as zeros (magic 0: never used). The runtime's files are sparse (a
 * chunk's pages are allocated when it is first taken), and a crafted one can claim 2^24
 * chunks over a few allocated KiB: reading every header of it took seconds. With SEEK_DATA
 * the scan costs what the file really holds. *data_end caches the end of the data region
 * found (SEEK_HOLE), so a run of used chunks costs one lseek pair. A file system without
 * SEEK_DATA says the whole file is data: every header is read, as before. */
static uint32_t next_data_chunk(pgr_reader *r, uint32_t i, uint64_t *data_end) {
    const struct pgf_file_header *h = &r->hdr;
    uint64_t at = chunk_start(r, i);
    if (at < *data_end || r->snap)
        return i;
    off_t d = lseek(r->fd, (off_t)at, SEEK_DATA);
    if (d < 0 && errno == ENXIO)
        return h->chunk_count; /* only holes from here */
    if (d < 0) {
        *data_end = UINT64_MAX; /* no SEEK_DATA here: every header is read, no lseek more */
        return i;
    }
    off_t e = lseek(r->fd, d, SEEK_HOLE);
    *data_end = e > d ? (uint64_t)e : r->file_size;
    if ((uint64_t)d <= at)
        return i;
    /* the chunk holding offset d, unless d is its first byte's: that chunk's header */
    uint64_t k = ((uint64_t)d - h->chunks_offset) / h->chunk_size;
    if (k >= h->chunk_count)
        return h->chunk_count;
    if (chunk_start(r, (uint32_t)k) < (uint64_t)d)
        k++;
    return k < h->chunk_count ? (uint32_t)k : h->chunk_count;
}

static void scan_chunks(pgr_reader *r) {
    const struct pgf_file_header *h = &r->hdr;
    /* never trust chunk_count for memory: the index grows with the chunks found in use */
    size_t cap = 0;
    uint64_t data_end = 0;
    int beyond = 0;
    for (uint32_t i = 0; i < h->chunk_count && !r->has_error; i++) {
        if ((i = next_data_chunk(r, i, &data_end)) >= h->chunk_count)
            break;
        uint64_t at = chunk_start(r, i);
        struct pgf_chunk_header c;
        if (at + sizeof c > r->file_size) {
            beyond = 1;
            break;
        }
        int whole = read_chunk_header(r, i, &c);
        if (whole < 0)
            return;
        if (c.magic == 0 || (!whole && c.magic == PGF_CHUNK_MAGIC))
            continue; /* free, reserved, or being taken or recycled right now */
        if (r->snap && c.magic == PGF_CHUNK_MAGIC && r->snap_seq[i] != c.seq) {
            r->skipped++; /* recycled while the snapshot was taken */
            continue;
        }
        if (c.magic != PGF_CHUNK_MAGIC) {
            fail(r, at, "bad chunk magic");
            return;
        }
        if (c.kind == PGF_CHUNK_OPEN) {
            if (read_open_slots(r, at) < 0)
                return;
            continue; /* no records: the slots only */
        }
        if (c.kind != PGF_CHUNK_DATA && c.kind != PGF_CHUNK_DEFS) {
            fail(r, at + 4, "bad chunk kind %u", c.kind);
            return;
        }
        if (c.state != PGF_CSTATE_WRITING && c.state != PGF_CSTATE_FULL) {
            fail(r, at + 6, "bad chunk state %u", c.state);
            return;
        }
        if (c.seq == 0) {
            fail(r, at + 8, "bad chunk seq 0");
            return;
        }
        uint32_t first = first_record(r, &c);
        if (first < PGF_CHUNK_HEADER_SIZE || first > h->chunk_size) {
            fail(r, at + 20, "bad first_record %u", first);
            return;
        }
        if (c.committed > h->chunk_size - first) {
            fail(r, at + 24, "committed %u exceeds chunk", c.committed);
            return;
        }
        if (r->nchunks == cap) {
            size_t ncap = cap ? 2 * cap : 64;
            struct pgr_chunk_info *nc = realloc(r->chunks, ncap * sizeof *nc);
            if (!nc) {
                fail(r, 0, "out of memory for %zu chunks", ncap);
                return;
            }
            r->chunks = nc;
            cap = ncap;
        }
        struct pgr_chunk_info *ci = &r->chunks[r->nchunks++];
        ci->index = i;
        ci->kind = c.kind;
        ci->state = c.state;
        ci->seq = c.seq;
        ci->thread = c.thread;
        ci->first_record = first;
        ci->committed = c.committed;
        ci->record_count = c.record_count;
        ci->dropped_before = c.dropped_before;
        ci->records_before = c.records_before;
        ci->first_tsc = c.first_tsc;
        ci->last_tsc = c.last_tsc;
    }
    if (r->has_error)
        return;
    if (beyond)
        warn(r, r->file_size, "chunk beyond end of file ignored");
    if (!r->nchunks)
        return; /* no index at all (NULL): nothing to sort */
    qsort(r->chunks, r->nchunks, sizeof *r->chunks, seq_order);
    for (size_t i = 1; i < r->nchunks; i++)
        if (r->chunks[i].seq == r->chunks[i - 1].seq) {
            fail(r, chunk_start(r, r->chunks[i].index) + 8, "duplicate chunk seq %llu",
                 (unsigned long long)r->chunks[i].seq);
            return;
        }
    qsort(r->chunks, r->nchunks, sizeof *r->chunks, chunk_order);
}

pgr_reader *pgr_open(const char *path) {
    /* O_NONBLOCK: a FIFO must not block the open; it is refused below like a device */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd >= 0)
        return pgr_open_fd(fd);
    int e = errno;
    pgr_reader *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->fd = -1;
    fail(r, 0, "cannot open: %s", strerror(e));
    return r;
}

pgr_reader *pgr_open_fd(int fd) {
    pgr_reader *r = calloc(1, sizeof *r);
    if (!r) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    r->fd = fd;
    if (r->fd < 0) {
        fail(r, 0, "cannot open: %s", strerror(EBADF));
        return r;
    }
    struct stat st;
    if (fstat(r->fd, &st) != 0) {
        fail(r, 0, "cannot read: %s", strerror(errno));
        return r;
    }
    if (!S_ISREG(st.st_mode)) {
        fail(r, 0, "not a regular file (%s): a recording is read from a file",
             S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory" : "a device or socket");
        return r;
    }
    r->file_size = (uint64_t)st.st_size;
    struct pgf_file_header *h = &r->hdr;
    if (r->file_size < sizeof *h) {
        fail(r, 0, "file too short for a header (%llu bytes)", (unsigned long long)r->file_size);
        memset(h, 0, sizeof *h);
        return r;
    }
    if (read_at(r, h, sizeof *h, 0) != (long)sizeof *h) {
        fail(r, 0, "file too short for a header");
        return r;
    }
    if (memcmp(h->magic, PGF_MAGIC, PGF_MAGIC_LEN) != 0) {
        fail(r, 0, "bad magic (not a perfgroup recording)");
        return r;
    }
    if (h->version < PERFGROUP_FORMAT_VERSION_MIN || h->version > PERFGROUP_FORMAT_VERSION) {
        fail(r, 8, "unsupported format version %u (this reader knows %u..%u)", h->version,
             PERFGROUP_FORMAT_VERSION_MIN, PERFGROUP_FORMAT_VERSION);
        return r;
    }
    if (h->header_size != PGF_HEADER_SIZE) {
        fail(r, 12, "bad header_size %u", h->header_size);
        return r;
    }
    if (h->chunk_size < 4096 || h->chunk_size > (1u << 24) ||
        (h->chunk_size & (h->chunk_size - 1))) {
        fail(r, 16, "bad chunk_size %u (power of 2, 4096..16777216)", h->chunk_size);
        return r;
    }
    if (h->chunk_count == 0 || h->chunk_count > (1u << 24)) {
        fail(r, 20, "bad chunk_count %u", h->chunk_count);
        return r;
    }
    if (h->chunks_offset != h->header_size) {
        fail(r, 24, "bad chunks_offset %llu", (unsigned long long)h->chunks_offset);
        return r;
    }
    h->program[sizeof h->program - 1] = 0;
    if (h->state != PGF_STATE_CLOSED)
        warn(r, 48, "recording not closed (crash, kill or still running)");
    uint64_t want = h->chunks_offset + (uint64_t)h->chunk_count * h->chunk_size;
    if (r->file_size < want)
        warn(r, r->file_size, "file cut short: %llu of %llu bytes",
             (unsigned long long)r->file_size, (unsigned long long)want);
    take_snapshot(r);
    scan_chunks(r);
    if (!r->has_error)
        read_totals(r);
    if (!r->has_error) {
        r->buf = malloc(h->chunk_size);
        if (!r->buf)
            fail(r, 0, "out of memory for a chunk of %u bytes", h->chunk_size);
    }
    return r;
}

void pgr_close(pgr_reader *r) {
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    free(r->chunks);
    free(r->open);
    free(r->totals);
    free(r->snap);
    free(r->snap_seq);
    free(r->buf);
    free(r->args);
    free(r->ids);
    free(r->groups);
    free(r);
}

const struct pgf_file_header *pgr_header(const pgr_reader *r) { return &r->hdr; }
size_t pgr_chunk_count(const pgr_reader *r) { return r->nchunks; }
const struct pgr_chunk_info *pgr_chunk(const pgr_reader *r, size_t i) {
    return i < r->nchunks ? &r->chunks[i] : NULL;
}
const struct pgr_error *pgr_error(const pgr_reader *r) { return r->has_error ? &r->error : NULL; }
size_t pgr_warning_count(const pgr_reader *r) { return r->nwarnings; }
const struct pgr_error *pgr_warning(const pgr_reader *r, size_t i) {
    return i < r->nwarnings ? &r->warnings[i] : NULL;
}

uint64_t pgr_chunks_skipped(const pgr_reader *r) { return r->skipped; }
uint64_t pgr_chunks_corrupt(const pgr_reader *r) { return r->corrupt; }

void pgr_set_resume(pgr_reader *r, pgr_resume_fn fn, void *ctx) {
    r->resume = fn;
    r->resume_ctx = ctx;
}

const char *pgr_kind_name(unsigned kind) {
    switch (kind) {
    case PGF_REC_PROCESS: return "process";
    case PGF_REC_GROUP: return "group";
    case PGF_REC_SITE: return "site";
    case PGF_REC_THREAD: return "thread";
    case PGF_REC_STRING: return "string";
    case PGF_REC_CLOCK: return "clock";
    case PGF_REC_EVENT: return "event";
    case PGF_REC_INTERVAL: return "interval";
    case PGF_REC_MARKER: return "marker";
    case PGF_REC_DROPPED: return "dropped";
    case PGF_REC_OVERHEAD: return "overhead";
    case PGF_REC_THREAD_END: return "thread_end";
    default: return NULL;
    }
}

/* ---- msgpack cursor over buf[pos, end) ---------------------------------------------- */

/* A truncated value: in a chunk cut by the end of the file that is the expected end of the
 * data (returns -2, no error); anywhere else it is an error. */
#define TRUNC (-2)

struct cur {
    pgr_reader *r;
    uint32_t p;           /* in r->buf */
    uint32_t rec_start;
    const char *rec_name; /* for messages */
};

static uint64_t off_of(const struct cur *c, uint32_t p) { return c->r->buf_off + p; }

static int need(struct cur *c, uint32_t n) {
    if (c->r->end - c->p < n)
        return TRUNC;
    return 0;
}

static uint64_t be(const uint8_t *b, unsigned n) {
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = v << 8 | b[i];
    return v;
}

/* Reads an integer of any width. *neg = 1 for a negative value (v is then its int64). */
static int mp_int_any(struct cur *c, uint64_t *v, int *neg, const char *field) {
    if (need(c, 1))
        return TRUNC;
    const uint8_t *b = c->r->buf + c->p;
    uint8_t t = b[0];
    unsigned w = 0;
    int sign = 0;
    *neg = 0;
    if (t <= 0x7f) {
        *v = t;
        c->p += 1;
        return 0;
    }
    if (t >= 0xe0) {
        *v = (uint64_t)(int64_t)(int8_t)t;
        *neg = 1;
        c->p += 1;
        return 0;
    }
    switch (t) {
    case 0xcc: w = 1; break;
    case 0xcd: w = 2; break;
    case 0xce: w = 4; break;
    case 0xcf: w = 8; break;
    case 0xd0: w = 1; sign = 1; break;
    case 0xd1: w = 2; sign = 1; break;
    case 0xd2: w = 4; sign = 1; break;
    case 0xd3: w = 8; sign = 1; break;
    default:
        fail(c->r, off_of(c, c->p), "%s: expected integer for %s", c->rec_name, field);
        return -1;
    }
    if (need(c, 1 + w))
        return TRUNC;
    uint64_t x = be(b + 1, w);
    if (sign) {
        int64_t s;
        switch (w) {
        case 1: s = (int8_t)x; break;
        case 2: s = (int16_t)x; break;
        case 4: s = (int32_t)x; break;
        default: s = (int64_t)x; break;
        }
        x = (uint64_t)s;
        *neg = s < 0;
    }
    *v = x;
    c->p += 1 + w;
    return 0;
}

static int mp_uint(struct cur *c, uint64_t *v, uint64_t max, const char *field) {
    uint32_t at = c->p;
    int neg, e = mp_int_any(c, v, &neg, field);
    if (e)
        return e;
    if (neg || *v > max) {
        fail(c->r, off_of(c, at), "%s: value %lld out of range for %s", c->rec_name,
             (long long)*v, field);
        return -1;
    }
    return 0;
}

static int mp_u32(struct cur *c, uint32_t *v, const char *field) {
    uint64_t x;
    int e = mp_uint(c, &x, UINT32_MAX, field);
    *v = (uint32_t)x;
    return e;
}

static int mp_u8(struct cur *c, uint8_t *v, const char *field) {
    uint64_t x;
    int e = mp_uint(c, &x, UINT8_MAX, field);
    *v = (uint8_t)x;
    return e;
}

static int mp_u64(struct cur *c, uint64_t *v, const char *field) {
    return mp_uint(c, v, UINT64_MAX, field);
}

static int mp_i64(struct cur *c, int64_t *v, const char *field) {
    uint32_t at = c->p;
    uint64_t x;
    int neg, e = mp_int_any(c, &x, &neg, field);
    if (e)
        return e;
    if (!neg && x > INT64_MAX) {
        fail(c->r, off_of(c, at), "%s: value %llu out of range for %s", c->rec_name,
             (unsigned long long)x, field);
        return -1;
    }
    *v = (int64_t)x;
    return 0;
}

static int mp_bool_or_int(struct cur *c, int *v, const char *field) {
    if (need(c, 1))
        return TRUNC;
    uint8_t t = c->r->buf[c->p];
    if (t == 0xc2 || t == 0xc3) {
        *v = t == 0xc3;
        c->p++;
        return 0;
    }
    uint64_t x;
    int e = mp_uint(c, &x, 1, field);
    *v = (int)x;
    return e;
}

static int mp_str(struct cur *c, struct pgr_str *s, const char *field) {
    if (need(c, 1))
        return TRUNC;
    const uint8_t *b = c->r->buf + c->p;
    uint32_t h, len;
    if ((b[0] & 0xe0) == 0xa0) {
        h = 1;
        len = b[0] & 0x1f;
    } else if (b[0] == 0xd9 || b[0] == 0xda || b[0] == 0xdb) {
        unsigned w = b[0] == 0xd9 ? 1 : b[0] == 0xda ? 2 : 4;
        if (need(c, 1 + w))
            return TRUNC;
        h = 1 + w;
        len = (uint32_t)be(b + 1, w);
    } else {
        fail(c->r, off_of(c, c->p), "%s: expected string for %s", c->rec_name, field);
        return -1;
    }
    if (need(c, h) || c->r->end - c->p - h < len)
        return TRUNC;
    s->ptr = (const char *)b + h;
    s->len = len;
    c->p += h + len;
    return 0;
}

static int mp_array(struct cur *c, uint32_t *n, const char *field) {
    if (need(c, 1))
        return TRUNC;
    const uint8_t *b = c->r->buf + c->p;
    if ((b[0] & 0xf0) == 0x90) {
        *n = b[0] & 0x0f;
        c->p += 1;
    } else if (b[0] == 0xdc || b[0] == 0xdd) {
        unsigned w = b[0] == 0xdc ? 2 : 4;
        if (need(c, 1 + w))
            return TRUNC;
        *n = (uint32_t)be(b + 1, w);
        c->p += 1 + w;
    } else {
        fail(c->r, off_of(c, c->p), "%s: expected array for %s", c->rec_name, field);
        return -1;
    }
    /* every element takes at least one byte: a count larger than what is left is a lie */
    if (*n > c->r->end - c->p)
        return TRUNC;
    return 0;
}

/* Skip one value of any type. */
static int mp_skip(struct cur *c, int depth) {
    if (depth > MAX_DEPTH) {
        fail(c->r, off_of(c, c->p), "msgpack nesting too deep");
        return -1;
    }
    if (need(c, 1))
        return TRUNC;
    const uint8_t *b = c->r->buf + c->p;
    uint8_t t = b[0];
    uint64_t len = 0, items = 0;
    unsigned hdr = 1;
    if (t <= 0x7f || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3) {
        len = 0;
    } else if ((t & 0xe0) == 0xa0) {
        len = t & 0x1f;
    } else if ((t & 0xf0) == 0x90) {
        items = t & 0x0f;
    } else if ((t & 0xf0) == 0x80) {
        items = 2u * (t & 0x0f);
    } else {
        switch (t) {
        case 0xcc: case 0xd0: len = 1; break;
        case 0xcd: case 0xd1: len = 2; break;
        case 0xca: case 0xce: case 0xd2: len = 4; break;
        case 0xcb: case 0xcf: case 0xd3: len = 8; break;
        case 0xd4: len = 2; break;
        case 0xd5: len = 3; break;
        case 0xd6: len = 5; break;
        case 0xd7: len = 9; break;
        case 0xd8: len = 17; break;
        case 0xc4: case 0xd9: hdr = 2; break;
        case 0xc5: case 0xda: hdr = 3; break;
        case 0xc6: case 0xdb: hdr = 5; break;
        case 0xc7: hdr = 3; break;
        case 0xc8: hdr = 4; break;
        case 0xc9: hdr = 6; break;
        case 0xdc: case 0xde: hdr = 3; break;
        case 0xdd: case 0xdf: hdr = 5; break;
        default:
            fail(c->r, off_of(c, c->p), "bad msgpack type byte 0x%02x", t);
            return -1;
        }
        if (need(c, hdr))
            return TRUNC;
        if (hdr > 1) {
            unsigned w = (t == 0xc7) ? 1 : (t == 0xc8) ? 2 : (t == 0xc9) ? 4 : hdr - 1;
            uint64_t n = be(b + 1, w);
            if (t == 0xdc || t == 0xdd)
                items = n;
            else if (t == 0xde || t == 0xdf)
                items = 2 * n;
            else
                len = n; /* ext: hdr already counts the type byte */
        }
    }
    if (need(c, hdr) || c->r->end - c->p - hdr < len)
        return TRUNC;
    c->p += hdr + (uint32_t)len;
    if (items > c->r->end - c->p)
        return TRUNC;
    for (uint64_t i = 0; i < items; i++) {
        int e = mp_skip(c, depth + 1);
        if (e)
            return e;
    }
    return 0;
}

static int grow(pgr_reader *r, void **p, size_t *cap, size_t n, size_t elem) {
    if (n <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 16;
    while (nc < n)
        nc *= 2;
    void *q = realloc(*p, nc * elem);
    if (!q) {
        fail(r, 0, "out of memory");
        return -1;
    }
    *p = q;
    *cap = nc;
    return 0;
}

/* ---- records ------------------------------------------------------------------------- */

#define TRY(x) do { int e_ = (x); if (e_) return e_; } while (0)

static int decode_fields(struct cur *c, struct pgr_record *rec, uint32_t n, uint32_t *used) {
    pgr_reader *r = c->r;
    static const uint8_t min_fields[32] = {
        [PGF_REC_PROCESS] = 11, [PGF_REC_GROUP] = 5, [PGF_REC_SITE] = 6,
        [PGF_REC_THREAD] = 4, [PGF_REC_STRING] = 3, [PGF_REC_CLOCK] = 5,
        [PGF_REC_EVENT] = 7, [PGF_REC_INTERVAL] = 6, [PGF_REC_MARKER] = 5,
        [PGF_REC_DROPPED] = 4, [PGF_REC_OVERHEAD] = 5, [PGF_REC_THREAD_END] = 2,
    };
    unsigned k = rec->kind;
    if (n < min_fields[k]) {
        fail(r, off_of(c, c->rec_start), "%s: %u fields, needs at least %u", c->rec_name, n,
             min_fields[k]);
        return -1;
    }
    *used = min_fields[k];
    switch (k) {
    case PGF_REC_PROCESS: {
        __typeof__(rec->u.process) *x = &rec->u.process;
        TRY(mp_u32(c, &x->pid, "pid"));
        TRY(mp_u32(c, &x->ppid, "ppid"));
        TRY(mp_str(c, &x->program, "program"));
        uint32_t na;
        TRY(mp_array(c, &na, "args"));
        if (grow(r, (void **)&r->args, &r->args_cap, na, sizeof *r->args))
            return -1;
        for (uint32_t i = 0; i < na; i++)
            TRY(mp_str(c, &r->args[i], "args"));
        x->args = r->args;
        x->nargs = na;
        TRY(mp_i64(c, &x->start_realtime_ns, "start_realtime_ns"));
        TRY(mp_i64(c, &x->start_monotonic_ns, "start_monotonic_ns"));
        TRY(mp_u64(c, &x->start_tsc, "start_tsc"));
        TRY(mp_u64(c, &x->tsc_hz, "tsc_hz"));
        TRY(mp_u32(c, &x->mode, "mode"));
        TRY(mp_str(c, &x->runtime_version, "runtime_version"));
        return 0;
    }
    case PGF_REC_GROUP: {
        __typeof__(rec->u.group) *x = &rec->u.group;
        TRY(mp_u32(c, &x->group_id, "group_id"));
        TRY(mp_str(c, &x->name, "name"));
        TRY(mp_u32(c, &x->group_kind, "group_kind"));
        return mp_bool_or_int(c, &x->active, "active");
    }
    case PGF_REC_SITE: {
        __typeof__(rec->u.site) *x = &rec->u.site;
        TRY(mp_u32(c, &x->function_id, "function_id"));
        TRY(mp_str(c, &x->function, "function"));
        TRY(mp_str(c, &x->file, "file"));
        TRY(mp_u32(c, &x->line, "line"));
        uint32_t ng;
        TRY(mp_array(c, &ng, "group_ids"));
        if (grow(r, (void **)&r->ids, &r->ids_cap, ng, sizeof *r->ids))
            return -1;
        for (uint32_t i = 0; i < ng; i++)
            TRY(mp_u32(c, &r->ids[i], "group_ids"));
        x->group_ids = r->ids;
        x->ngroups = ng;
        if (n > 6) { /* version 3 */
            TRY(mp_str(c, &x->module, "module"));
            *used = 7;
        }
        return 0;
    }
    case PGF_REC_THREAD:
        TRY(mp_u32(c, &rec->u.thread.thread_index, "thread_index"));
        TRY(mp_u32(c, &rec->u.thread.tid, "tid"));
        return mp_str(c, &rec->u.thread.name, "name");
    case PGF_REC_STRING:
        TRY(mp_u32(c, &rec->u.string.string_id, "string_id"));
        return mp_str(c, &rec->u.string.text, "text");
    case PGF_REC_CLOCK:
        TRY(mp_u64(c, &rec->u.clock.tsc, "tsc"));
        TRY(mp_i64(c, &rec->u.clock.realtime_ns, "realtime_ns"));
        TRY(mp_i64(c, &rec->u.clock.monotonic_ns, "monotonic_ns"));
        return mp_u64(c, &rec->u.clock.thread_cpu_ns, "thread_cpu_ns");
    case PGF_REC_EVENT: {
        __typeof__(rec->u.event) *x = &rec->u.event;
        TRY(mp_u32(c, &x->name_string_id, "name_string_id"));
        TRY(mp_u64(c, &x->begin_tsc, "begin_tsc"));
        TRY(mp_u64(c, &x->end_tsc, "end_tsc"));
        TRY(mp_u64(c, &x->cpu_ns, "cpu_ns"));
        TRY(mp_u32(c, &x->flags, "flags"));
        uint32_t ng;
        TRY(mp_array(c, &ng, "groups"));
        if (grow(r, (void **)&r->groups, &r->groups_cap, ng, sizeof *r->groups))
            return -1;
        for (uint32_t i = 0; i < ng; i++) {
            struct pgr_event_group *g = &r->groups[i];
            uint32_t m;
            uint32_t at = c->p;
            TRY(mp_array(c, &m, "groups[i]"));
            if (m < 4) {
                fail(r, off_of(c, at), "%s: %u fields, needs at least 4 in groups[%u]",
                     c->rec_name, m, i);
                return -1;
            }
            TRY(mp_u32(c, &g->group_id, "group_id"));
            TRY(mp_u64(c, &g->cycles, "cycles"));
            TRY(mp_u64(c, &g->cpu_ns, "cpu_ns"));
            TRY(mp_u64(c, &g->activations, "activations"));
            for (uint32_t j = 4; j < m; j++)
                TRY(mp_skip(c, 2));
        }
        x->groups = r->groups;
        x->ngroups = ng;
        if (n > 7) { /* version 3: groups the record could not list */
            *used = 8;
            return mp_u32(c, &x->groups_more, "groups_more");
        }
        return 0;
    }
    case PGF_REC_INTERVAL: {
        __typeof__(rec->u.interval) *x = &rec->u.interval;
        TRY(mp_u32(c, &x->function_id, "function_id"));
        TRY(mp_u8(c, &x->group_mask, "group_mask"));
        TRY(mp_u8(c, &x->depth, "depth"));
        TRY(mp_u64(c, &x->start_tsc, "start_tsc"));
        return mp_u64(c, &x->duration, "duration");
    }
    case PGF_REC_MARKER: {
        __typeof__(rec->u.marker) *x = &rec->u.marker;
        TRY(mp_u32(c, &x->name_string_id, "name_string_id"));
        TRY(mp_str(c, &x->text, "text"));
        TRY(mp_u64(c, &x->start_tsc, "start_tsc"));
        return mp_u64(c, &x->end_tsc, "end_tsc");
    }
    case PGF_REC_DROPPED:
        TRY(mp_u64(c, &rec->u.dropped.records, "records"));
        TRY(mp_u64(c, &rec->u.dropped.bytes, "bytes"));
        return mp_u64(c, &rec->u.dropped.chunks, "chunks");
    case PGF_REC_OVERHEAD:
        TRY(mp_u64(c, &rec->u.overhead.commit_ns, "commit_ns"));
        TRY(mp_u64(c, &rec->u.overhead.commits, "commits"));
        TRY(mp_u64(c, &rec->u.overhead.slow_paths, "slow_paths"));
        TRY(mp_u64(c, &rec->u.overhead.resyncs, "resyncs"));
        if (n > 5) {
            *used = 6;
            return mp_u64(c, &rec->u.overhead.dropped, "dropped");
        }
        return 0;
    case PGF_REC_THREAD_END:
        return mp_u64(c, &rec->u.thread_end.end_tsc, "end_tsc");
    }
    return -1; /* not reached: kinds are checked by the caller */
}

static int is_def_kind(unsigned k) { return k >= PGF_REC_PROCESS && k <= PGF_REC_STRING; }
static int is_data_kind(unsigned k) { return k >= PGF_REC_CLOCK && k <= PGF_REC_THREAD_END; }

/* Parse one record at r->pos. 1 = rec filled, 0 = skipped (unknown kind), TRUNC = the
 * data ends inside it, -1 = error. */
static int parse_record(pgr_reader *r, struct pgr_record *rec) {
    struct cur c = { r, r->pos, r->pos, "record" };
    uint8_t t = r->buf[c.p];
    if (!((t & 0xf0) == 0x90 || t == 0xdc || t == 0xdd)) {
        fail(r, off_of(&c, c.p), "record is not a msgpack array");
        return -1;
    }
    uint32_t n;
    TRY(mp_array(&c, &n, "record"));
    if (n == 0) {
        fail(r, off_of(&c, c.rec_start), "empty record");
        return -1;
    }
    uint64_t kind;
    TRY(mp_uint(&c, &kind, 127, "kind"));
    memset(rec, 0, sizeof *rec);
    rec->kind = (enum pgf_record_kind)kind;
    rec->offset = off_of(&c, c.rec_start);
    rec->chunk_seq = r->cur->seq;
    rec->thread = r->cur->thread;
    const char *name = pgr_kind_name((unsigned)kind);
    int defs = r->cur->kind == PGF_CHUNK_DEFS;
    if (!name) {
        for (uint32_t i = 1; i < n; i++)
            TRY(mp_skip(&c, 1));
        if (!r->warned_kind[kind]) {
            r->warned_kind[kind] = 1;
            warn(r, rec->offset, "unknown record kind %u skipped", (unsigned)kind);
        }
        r->pos = c.p;
        return 0;
    }
    if (defs ? !is_def_kind((unsigned)kind) : !is_data_kind((unsigned)kind)) {
        fail(r, rec->offset, "record kind %u (%s) not allowed in a %s chunk", (unsigned)kind,
             name, defs ? "DEFS" : "DATA");
        return -1;
    }
    c.rec_name = name;
    uint32_t used;
    TRY(decode_fields(&c, rec, n, &used));
    for (uint32_t i = used; i < n; i++) /* fields of a later version */
        TRY(mp_skip(&c, 1));
    r->pos = c.p;
    return 1;
}

static void finish_chunk(pgr_reader *r) {
    const struct pgr_chunk_info *ci = r->cur;
    uint64_t at = chunk_start(r, ci->index) + 28;
    if (r->cut || r->from)
        return; /* the count cannot be checked against a cut or partly read chunk */
    /* The records themselves parsed whole: a wrong count (a record nested by a signal
     * handler into the one being written on the same thread) is worth a warning, not the
     * file. A killed writer's WRITING chunk may count one record it did not publish. */
    if (ci->state == PGF_CSTATE_FULL ? ci->record_count != r->parsed
                                     : (ci->record_count < r->parsed ||
                                        ci->record_count > r->parsed + 1))
        warn(r, at, "record_count %u but %u records", ci->record_count, r->parsed);
}

/* A chunk of a recording still being written may be recycled between the scan and the copy
 * of its records, or while they are copied: check it is the same incarnation (magic, seq)
 * before and after the copy; if not, its records are gone: skip it and count it. A chunk
 * still being written is read up to what is committed now. 1 = loaded, 0 = skipped. */
static int load_chunk(pgr_reader *r) {
    struct pgr_chunk_info *ci = &r->chunks[r->next_chunk++];
    struct pgf_chunk_header h;
    int same = read_chunk_header(r, ci->index, &h);
    if (same < 0)
        return -1;
    if (!same || h.seq != ci->seq || h.kind != ci->kind || h.thread != ci->thread ||
        first_record(r, &h) != ci->first_record || h.committed < ci->committed ||
        h.committed > r->hdr.chunk_size - ci->first_record) {
        r->skipped++;
        return 0;
    }
    ci->state = h.state;            /* a WRITING chunk may have been sealed since the scan */
    ci->committed = h.committed;
    ci->record_count = h.record_count;
    ci->last_tsc = h.last_tsc;
    uint32_t from = 0;
    if (r->resume && ci->kind == PGF_CHUNK_DATA) {
        from = r->resume(r->resume_ctx, ci);
        if (from >= ci->committed)
            return 0;               /* everything in it was read before */
    }
    uint64_t start = chunk_start(r, ci->index) + ci->first_record + from;
    uint32_t len = ci->committed - from;
    r->cut = 0;
    if (start + len > r->file_size) {
        len = start >= r->file_size ? 0 : (uint32_t)(r->file_size - start);
        r->cut = 1;
    }
    long got = read_at(r, r->buf, len, start);
    if (got < 0)
        return -1;
    if ((uint32_t)got < len) {
        len = (uint32_t)got;
        r->cut = 1;
    }
    if (!r->cut) {
        struct pgf_chunk_header after;
        READ_FENCE();
        int still = read_chunk_header(r, ci->index, &after);
        if (still < 0)
            return -1;
        if (!still || after.seq != ci->seq) {
            r->skipped++;
            return 0;
        }
    }
    /* version 2: a sealed chunk read whole must match its CRC-32C, else it is skipped and
     * counted (a flipped bit is never believed); WRITING chunks have none yet */
    if (r->hdr.version >= 2 && h.state == PGF_CSTATE_FULL && !from && !r->cut &&
        pgf_chunk_crc(&h, r->buf) != h.crc32c) {
        if (r->corrupt++ < 8)
            warn(r, chunk_start(r, ci->index), "chunk %u (seq %llu, %s): CRC-32C mismatch, "
                 "skipped", ci->index, (unsigned long long)ci->seq,
                 ci->kind == PGF_CHUNK_DEFS ? "definitions" : "data");
        return 0;
    }
    r->cur = ci;
    r->buf_off = start;
    r->from = from;
    r->pos = 0;
    r->end = len;
    r->parsed = 0;
    r->loaded = 1;
    return 1;
}

int pgr_next(pgr_reader *r, struct pgr_record *rec) {
    for (;;) {
        if (r->has_error)
            return -1;
        if (!r->loaded) {
            if (r->next_chunk >= r->nchunks) {
                if (r->corrupt > 8 && !r->warned_corrupt) {
                    r->warned_corrupt = 1;
                    warn(r, 0, "%llu chunk(s) in all failed their CRC-32C: skipped",
                         (unsigned long long)r->corrupt);
                }
                if (r->skipped && !r->warned_skipped) {
                    r->warned_skipped = 1;
                    warn(r, 0, "%llu chunk(s) recycled by the writer while being read: skipped",
                         (unsigned long long)r->skipped);
                }
                return 0;
            }
            int l = load_chunk(r);
            if (l < 0)
                return -1;
            if (l == 0)
                continue;
        }
        if (r->pos >= r->end) {
            finish_chunk(r);
            r->loaded = 0;
            continue;
        }
        int e = parse_record(r, rec);
        if (e == TRUNC) {
            if (!r->cut) {
                fail(r, r->buf_off + r->pos, "truncated record");
                return -1;
            }
            warn(r, r->buf_off + r->pos, "chunk cut by end of file: last record incomplete");
            r->loaded = 0;
            continue;
        }
        if (e < 0)
            return -1;
        r->parsed++;
        if (e == 1)
            return 1;
    }
}
