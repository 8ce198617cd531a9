/* SPDX-License-Identifier: MIT */
/*
 * pgreader.c — validating, streaming reader of perfgroup recordings (see pgreader.h).
 *
 * Nothing read from the file is trusted: the header's sizes are range-checked, each chunk
 * header is checked against the chunk size, each msgpack length against the bytes left in
 * the record's chunk, each count against the bytes that could hold it. Reads use pread into
 * one chunk-sized buffer, so memory is one chunk + the chunk index + the decoded arrays of
 * the current record. This file opens and closes (snapshot, chunk scan) and answers the
 * accessors; reader_int.h maps the others.
 */
#define _GNU_SOURCE
#include "reader_int.h"

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
        long g1 = pgr__read_at(r, snap, (size_t)len, h->chunks_offset);
        READ_FENCE();
        long g2 = g1 < 0 ? -1 : pgr__read_at(r, again, (size_t)g1, h->chunks_offset);
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
    uint64_t at = pgr__chunk_start(r, i);
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
    if (pgr__chunk_start(r, (uint32_t)k) < (uint64_t)d)
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
        uint64_t at = pgr__chunk_start(r, i);
        struct pgf_chunk_header c;
        if (at + sizeof c > r->file_size) {
            beyond = 1;
            break;
        }
        int whole = pgr__read_chunk_header(r, i, &c);
        if (whole < 0)
            return;
        if (c.magic == 0 || (!whole && c.magic == PGF_CHUNK_MAGIC))
            continue; /* free, reserved, or being taken or recycled right now */
        if (r->snap && c.magic == PGF_CHUNK_MAGIC && r->snap_seq[i] != c.seq) {
            r->skipped++; /* recycled while the snapshot was taken */
            continue;
        }
        if (c.magic != PGF_CHUNK_MAGIC) {
            pgr__fail(r, at, "bad chunk magic");
            return;
        }
        if (c.kind == PGF_CHUNK_OPEN) {
            if (pgr__read_open_slots(r, at) < 0)
                return;
            continue; /* no records: the slots only */
        }
        if (c.kind != PGF_CHUNK_DATA && c.kind != PGF_CHUNK_DEFS) {
            pgr__fail(r, at + 4, "bad chunk kind %u", c.kind);
            return;
        }
        if (c.state != PGF_CSTATE_WRITING && c.state != PGF_CSTATE_FULL) {
            pgr__fail(r, at + 6, "bad chunk state %u", c.state);
            return;
        }
        if (c.seq == 0) {
            pgr__fail(r, at + 8, "bad chunk seq 0");
            return;
        }
        uint32_t first = pgr__first_record(r, &c);
        if (first < PGF_CHUNK_HEADER_SIZE || first > h->chunk_size) {
            pgr__fail(r, at + 20, "bad first_record %u", first);
            return;
        }
        if (c.committed > h->chunk_size - first) {
            pgr__fail(r, at + 24, "committed %u exceeds chunk", c.committed);
            return;
        }
        if (r->nchunks == cap) {
            size_t ncap = cap ? 2 * cap : 64;
            struct pgr_chunk_info *nc = realloc(r->chunks, ncap * sizeof *nc);
            if (!nc) {
                pgr__fail(r, 0, "out of memory for %zu chunks", ncap);
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
        pgr__warn(r, r->file_size, "chunk beyond end of file ignored");
    if (!r->nchunks)
        return; /* no index at all (NULL): nothing to sort */
    qsort(r->chunks, r->nchunks, sizeof *r->chunks, seq_order);
    for (size_t i = 1; i < r->nchunks; i++)
        if (r->chunks[i].seq == r->chunks[i - 1].seq) {
            pgr__fail(r, pgr__chunk_start(r, r->chunks[i].index) + 8, "duplicate chunk seq %llu",
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
    pgr__fail(r, 0, "cannot open: %s", strerror(e));
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
        pgr__fail(r, 0, "cannot open: %s", strerror(EBADF));
        return r;
    }
    struct stat st;
    if (fstat(r->fd, &st) != 0) {
        pgr__fail(r, 0, "cannot read: %s", strerror(errno));
        return r;
    }
    if (!S_ISREG(st.st_mode)) {
        pgr__fail(r, 0, "not a regular file (%s): a recording is read from a file",
             S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory" : "a device or socket");
        return r;
    }
    r->file_size = (uint64_t)st.st_size;
    struct pgf_file_header *h = &r->hdr;
    if (r->file_size < sizeof *h) {
        pgr__fail(r, 0, "file too short for a header (%llu bytes)", (unsigned long long)r->file_size);
        memset(h, 0, sizeof *h);
        return r;
    }
    if (pgr__read_at(r, h, sizeof *h, 0) != (long)sizeof *h) {
        pgr__fail(r, 0, "file too short for a header");
        return r;
    }
    if (memcmp(h->magic, PGF_MAGIC, PGF_MAGIC_LEN) != 0) {
        pgr__fail(r, 0, "bad magic (not a perfgroup recording)");
        return r;
    }
    if (h->version < PERFGROUP_FORMAT_VERSION_MIN || h->version > PERFGROUP_FORMAT_VERSION) {
        pgr__fail(r, 8, "unsupported format version %u (this reader knows %u..%u)", h->version,
             PERFGROUP_FORMAT_VERSION_MIN, PERFGROUP_FORMAT_VERSION);
        return r;
    }
    if (h->header_size != PGF_HEADER_SIZE) {
        pgr__fail(r, 12, "bad header_size %u", h->header_size);
        return r;
    }
    if (h->chunk_size < 4096 || h->chunk_size > (1u << 24) ||
        (h->chunk_size & (h->chunk_size - 1))) {
        pgr__fail(r, 16, "bad chunk_size %u (power of 2, 4096..16777216)", h->chunk_size);
        return r;
    }
    if (h->chunk_count == 0 || h->chunk_count > (1u << 24)) {
        pgr__fail(r, 20, "bad chunk_count %u", h->chunk_count);
        return r;
    }
    if (h->chunks_offset != h->header_size) {
        pgr__fail(r, 24, "bad chunks_offset %llu", (unsigned long long)h->chunks_offset);
        return r;
    }
    h->program[sizeof h->program - 1] = 0;
    if (h->state != PGF_STATE_CLOSED)
        pgr__warn(r, 48, "recording not closed (crash, kill or still running)");
    uint64_t want = h->chunks_offset + (uint64_t)h->chunk_count * h->chunk_size;
    if (r->file_size < want)
        pgr__warn(r, r->file_size, "file cut short: %llu of %llu bytes",
             (unsigned long long)r->file_size, (unsigned long long)want);
    take_snapshot(r);
    scan_chunks(r);
    if (!r->has_error)
        pgr__read_totals(r);
    if (!r->has_error) {
        r->buf = malloc(h->chunk_size);
        if (!r->buf)
            pgr__fail(r, 0, "out of memory for a chunk of %u bytes", h->chunk_size);
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
