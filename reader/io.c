/* SPDX-License-Identifier: MIT */
/*
 * io.c — the reader's errors and warnings, its reads (pread, or the snapshot
 * of a live file taken at open: pgreader.c), chunk headers. See reader_int.h.
 */
#define _GNU_SOURCE
#include "reader_int.h"

PGR_INTERNAL void pgr__fail(pgr_reader *r, uint64_t off, const char *fmt, ...) {
    if (r->has_error)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error.message, sizeof r->error.message, fmt, ap);
    va_end(ap);
    r->error.offset = off;
    r->has_error = 1;
}

PGR_INTERNAL void pgr__warn(pgr_reader *r, uint64_t off, const char *fmt, ...) {
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
PGR_INTERNAL long pgr__read_at(pgr_reader *r, void *dst, size_t len, uint64_t off) {
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
            pgr__fail(r, off, "cannot read: %s", strerror(errno));
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (long)got;
}


PGR_INTERNAL uint64_t pgr__chunk_start(const pgr_reader *r, uint32_t index) {
    return r->hdr.chunks_offset + (uint64_t)index * r->hdr.chunk_size;
}

/* The chunk header at index i, read as a seqlock: seq, then the header, then magic and seq
 * again, each read ordered after the one before (the system calls order them; the fences
 * say so). A writer clears magic before it touches a header (take, recycle) and sets it
 * last with a new seq (format.h), so a header whose magic is set before and after and whose
 * seq did not change is one incarnation's, whole. A file nobody writes reads the same every
 * time. 1 = *h is consistent with magic set, 0 = not (magic 0 or other: see h->magic; or
 * the chunk is being taken or recycled now), -1 = read error. */
PGR_INTERNAL int pgr__read_chunk_header(pgr_reader *r, uint32_t index, struct pgf_chunk_header *h) {
    uint64_t at = pgr__chunk_start(r, index), s1;
    struct { uint32_t magic; uint16_t kind, state; uint64_t seq; } again;
    if (pgr__read_at(r, &s1, sizeof s1, at + 8) != (long)sizeof s1)
        goto short_read;
    READ_FENCE();
    if (pgr__read_at(r, h, sizeof *h, at) != (long)sizeof *h)
        goto short_read;
    READ_FENCE();
    if (pgr__read_at(r, &again, sizeof again, at) != (long)sizeof again)
        goto short_read;
    return h->magic == PGF_CHUNK_MAGIC && again.magic == PGF_CHUNK_MAGIC && h->seq == s1 &&
           again.seq == s1;
short_read:
    pgr__fail(r, at, "cannot read: chunk header past end of file");
    return -1;
}


/* Offset of a chunk's first record: in version 1 the header field at 20, from version 2 on
 * always PGF_CHUNK_HEADER_SIZE (the field is the chunk's CRC-32C). */
PGR_INTERNAL uint32_t pgr__first_record(const pgr_reader *r, const struct pgf_chunk_header *c) {
    return r->hdr.version == 1 ? c->crc32c : PGF_CHUNK_HEADER_SIZE;
}
