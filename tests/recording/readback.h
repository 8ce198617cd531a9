/* SPDX-License-Identifier: MIT */
/*
 * readback.h — read a recording with pgreader and summarise it for the tests: counts per
 * record kind, and per thread the run of PGF_REC_INTERVAL start_tsc values (tests write
 * 0, 1, 2 ... there) and the chunk-header accounting of format.h.
 */
#ifndef PERFGROUP_TESTS_READBACK_H
#define PERFGROUP_TESTS_READBACK_H

#include <stdint.h>

#include "pgreader.h"

#define RB_MAX_THREADS 1024

struct rb_thread {
    uint32_t index;
    uint64_t intervals;         /* PGF_REC_INTERVAL records read */
    uint64_t first, last;       /* their first and last start_tsc */
    int gap;                    /* start_tsc did not go up by exactly 1 somewhere */
    uint64_t records;           /* records read in this thread's chunks */
    uint64_t committed_total;   /* newest chunk: records_before + record_count */
    uint64_t dropped_before;    /* newest chunk */
    uint64_t chunk_records;     /* sum of record_count over its chunks */
    uint64_t newest_seq;
    int thread_end;             /* a PGF_REC_THREAD_END was read */
    uint64_t events, markers, dropped_recs;
};

struct readback {
    struct pgf_file_header hdr;
    int error;                  /* the reader reported an error */
    char message[256];
    uint64_t error_offset;
    unsigned warnings;
    uint64_t kinds[32];         /* records per kind */
    unsigned nthreads;
    struct rb_thread threads[RB_MAX_THREADS];
    uint32_t process_pid;
    uint64_t def_chunks, data_chunks;
};

/* Returns 0; r->error says whether the reader failed. */
int readback(const char *path, struct readback *r);
struct rb_thread *rb_thread(struct readback *r, uint32_t index);

#endif
