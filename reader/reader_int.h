/* SPDX-License-Identifier: MIT */
/*
 * reader_int.h — what the reader's files share (pgreader.h is the public side): the reader's
 * state, and the calls between its files, bottom-up:
 *   io.c       errors and warnings, reads (pread, or the snapshot of a live file), chunk headers
 *   totals.c   the whole-run totals and the open events' slots          (over io.c)
 *   records.c  the msgpack cursor, record decoding, pgr_next             (over io.c)
 *   pgreader.c open (snapshot, chunk scan), close, the accessors          (over io.c, totals.c)
 */
#ifndef PGR_READER_INT_H
#define PGR_READER_INT_H

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
#include <sys/uio.h>
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

#define PGR_INTERNAL __attribute__((visibility("hidden")))

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

/* ---- io.c ------------------------------------------------------------------------------ */
/* the sticky error (the first wins) and the warnings (at most MAX_WARNINGS) */
PGR_INTERNAL void pgr__fail(pgr_reader *r, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
PGR_INTERNAL void pgr__warn(pgr_reader *r, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Read exactly len bytes at off, or fewer only at the end of the file. Returns bytes read,
 * -1 on error (sticky error set). */
PGR_INTERNAL long pgr__read_at(pgr_reader *r, void *dst, size_t len, uint64_t off);
PGR_INTERNAL uint64_t pgr__chunk_start(const pgr_reader *r, uint32_t index);
PGR_INTERNAL int pgr__read_chunk_header(pgr_reader *r, uint32_t index, struct pgf_chunk_header *h);
PGR_INTERNAL uint32_t pgr__first_record(const pgr_reader *r, const struct pgf_chunk_header *c);

/* ---- totals.c -------------------------------------------------------------------------- */
PGR_INTERNAL int pgr__read_open_slots(pgr_reader *r, uint64_t at);
PGR_INTERNAL void pgr__read_totals(pgr_reader *r);

#endif /* PGR_READER_INT_H */
