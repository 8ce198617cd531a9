/* SPDX-License-Identifier: MIT */
/*
 * bench/rec_write.c — the recorder's writer alone (runtime/record.h, static runtime), in ns
 * per record, and what one chunk switch costs.
 *
 *   floor        a non-inlined call between two inline rdtsc (as in bench/hooks.c)
 *   hand         floor + the exit hook's writer: the 29 bytes by hand, the first 8 from
 *                the function's entry (record.h perfgroup__rec_interval_put_head)
 *   msgpack      floor + record.h's perfgroup__rec_interval: the same bytes through
 *                msgpack-c's packer (msgpack_pack_array, _uint8, _fix_uint32/8/64) with a
 *                write callback the compiler sees through
 *   switch_64k   msgpack, 64 KiB chunks, in a 4 MiB file that wraps: a chunk switch (with
 *                recycling) every ~2260 records
 *   switch_4k    msgpack, 4 KiB chunks, same file: a switch every ~138 records
 *
 *   seal_64k     sealing alone (format version 2): pgf_chunk_crc over a full 64 KiB chunk of
 *                interval records, once per 2258 records (what a 64 KiB chunk holds), in ns
 *                per record: the share of the writer's cost that sealing adds
 *   event_K      a commit's recording (issue 32), in ns per event: the EVENT record of an
 *                event of K groups (1 or 8; record.h perfgroup__rec_event, their order
 *                sorted), after the floor's call
 *   event_K_tot  the same plus what a commit adds to keep the whole-run totals: its groups'
 *                and the top group's cumulative totals copied into their slots of the file
 *                (perfgroup__rec_totals, a seqlock write of 160 bytes each); the difference
 *                is the totals' cost per commit
 *
 * hand and msgpack run in a 4 MiB file with 64 KiB chunks that wraps (pages resident).
 * A chunk switch costs (switch_4k - switch_64k) / (1/138 - 1/2260) ns.
 * Usage: rec_write [N] [reps]
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "bench.h"
#include "clock.h"
#include "perfgroup/crc32c.h"
#include "perfgroup.h"
#include "record.h"

/* The exit hook's writer (record.h's perfgroup__rec_interval_put_head: the head word from
 * the function entry, then byte and bswapped stores), with the same space check and
 * publication as perfgroup__rec_interval (which uses msgpack-c's packer). */
static inline __attribute__((always_inline)) void
interval_hand(struct perfgroup_rec_thread *w, uint64_t head, uint8_t mask, uint8_t depth,
              uint64_t start, uint64_t dur) {
    while (__builtin_expect(!perfgroup__rec_interval_room(w), 0))
        if (perfgroup__rec_reserve(w, PGF_INTERVAL_SIZE))
            return;
    perfgroup__rec_interval_put_head(w, head, mask, depth, start, dur);
}

enum { FLOOR, HAND, MSGPACK, SW64, SW4, SEAL, EV1, EV1_TOT, EV8, EV8_TOT, NCONF };
static const char *names[NCONF] = {"floor", "hand", "msgpack", "switch_64k", "switch_4k",
                                   "seal_64k", "event_1", "event_1_tot", "event_8",
                                   "event_8_tot"};

/* n/10 commits' recording of events of k groups (event_K), with the totals (tot) or not */
static double commits(struct perfgroup_rec_thread *w, long n, unsigned k, int tot) {
    static struct pgf_totals top, g[8];
    struct perfgroup_rec_group_share sh[8];
    long m = n / 10;
    double t0 = bench_now_ns();
    for (long i = 0; i < m; i++) {
        uint64_t a = __rdtsc();
        bench_leaf();
        uint64_t b = __rdtsc();
        top.events++, top.cpu_ns += 600, top.wall_ns += b - a;
        for (unsigned j = 0; j < k; j++) {
            sh[j] = (struct perfgroup_rec_group_share){1 + j, (b - a) >> j, 500u >> j, 1, 250u >> j, j};
            g[j].events++, g[j].cpu_ns += 500u >> j, g[j].activations++;
        }
        perfgroup__rec_event(w, 1, a, b, 600, 0, sh, k);
        if (tot) {
            perfgroup__rec_totals(w, 0, &top);
            for (unsigned j = 0; j < k; j++)
                perfgroup__rec_totals(w, 1 + j, &g[j]);
        }
    }
    return (bench_now_ns() - t0) * (double)n / (double)m; /* divided by n: per event */
}
#define PER_64K ((65536u - 64u) / 29u) /* interval records in a 64 KiB chunk */

/* n records' worth of sealing: a CRC-32C of a full 64 KiB chunk every PER_64K records */
static double seal(long n) {
    static uint8_t chunk[65536];
    static struct pgf_chunk_header h;
    if (!h.magic) { /* a chunk of interval records as the writer lays them out */
        uint64_t head = perfgroup__rec_interval_head(7);
        for (uint32_t i = 0; i < PER_64K; i++) {
            uint8_t *p = chunk + 64 + i * 29u;
            memcpy(p, &head, 8);
            for (int k = 8; k < 29; k++)
                p[k] = (uint8_t)(i * 31u + (unsigned)k);
        }
        h.magic = PGF_CHUNK_MAGIC;
        h.kind = PGF_CHUNK_DATA;
        h.seq = 1;
        h.committed = PER_64K * 29u;
        h.record_count = PER_64K;
    }
    uint32_t acc = 0;
    double t0 = bench_now_ns();
    for (long i = 0; i < n; i += PER_64K) {
        h.seq++;
        acc ^= pgf_chunk_crc(&h, chunk + 64);
    }
    double t = bench_now_ns() - t0;
    bench_sink += acc;
    return t;
}
static char path[512];

static double run(int conf, long n) {
    uint32_t chunk = conf == SW4 ? 4096 : 65536;
    struct perfgroup_rec_thread *w = NULL;
    if (conf != FLOOR && conf != SEAL) {
        if (perfgroup_record_open(path, PERFGROUP_RECORD_TRACE, 4u << 20, chunk) != 0) {
            fprintf(stderr, "cannot open %s\n", path);
            exit(1);
        }
        w = perfgroup__rec_thread_start(1, 1, "bench");
        for (long i = 0; i < (8l << 20) / 29; i++) /* untimed: wrap once, pages resident */
            perfgroup__rec_interval(w, 1, 1, 0, 0, 0);
    }
    if (conf == FLOOR)
        return bench_floor_ns(n) / (double)n;
    if (conf == SEAL)
        return seal(n) / (double)n;
    uint64_t head7 = perfgroup__rec_interval_head(7);
    double t0 = bench_now_ns(), t;
    if (conf >= EV1) {
        t = commits(w, n, conf >= EV8 ? 8 : 1, conf == EV1_TOT || conf == EV8_TOT);
    } else if (conf == HAND) {
        for (long i = 0; i < n; i++) {
            uint64_t a = __rdtsc();
            bench_leaf();
            uint64_t b = __rdtsc();
            interval_hand(w, head7, 1, 3, a, b - a);
        }
        t = bench_now_ns() - t0;
    } else { /* MSGPACK (record.h), SW64, SW4 */
        for (long i = 0; i < n; i++) {
            uint64_t a = __rdtsc();
            bench_leaf();
            uint64_t b = __rdtsc();
            perfgroup__rec_interval(w, 7, 1, 3, a, b - a);
        }
        t = bench_now_ns() - t0;
    }
    if (w) {
        perfgroup__rec_thread_end(w, 0);
        perfgroup_record_close();
        unlink(path);
    }
    return t / (double)n;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 2000000;
    int reps = argc > 2 ? atoi(argv[2]) : 11;
    perfgroup__clock_init(); /* as the runtime's constructor: the recorder needs the TSC rate */
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/bench-rec-write.%d.pgm", tmp && *tmp ? tmp : "/tmp",
             (int)getpid());
    double med[NCONF];
    bench_interleaved(NCONF, run, n, reps, med);
    printf("%-12s %9s %12s\n", "config", "ns/record", "over floor");
    for (int c = 0; c < NCONF; c++)
        printf("%-12s %9.2f %12.2f\n", names[c], med[c], med[c] - med[FLOOR]);
    double per4k = (65536.0 - 64) / 29, per4 = (4096.0 - 64 - 40) / 29;
    printf("\nhand / floor: %.3f   msgpack-c / floor: %.3f\n", med[HAND] / med[FLOOR],
           med[MSGPACK] / med[FLOOR]);
    printf("one chunk switch (recycling, CLOCK record, next chunk pre-faulted): %.0f ns\n",
           (med[SW4] - med[SW64]) / (1 / per4 - 1 / per4k));
    printf("sealing a 64 KiB chunk (CRC-32C, %s): %.0f ns = %.2f ns per record = %.1f %% of "
           "the msgpack writer's cost over the floor (64 KiB chunks: it includes the sealing)\n",
           pgf_crc32c_have_sse42() ? "SSE4.2 crc32 instruction" : "table", med[SEAL] * PER_64K,
           med[SEAL], 100.0 * med[SEAL] / (med[MSGPACK] - med[FLOOR]));
    printf("whole-run totals per commit (event_K_tot - event_K): %.2f ns with 1 group, %.2f ns "
           "with 8 (the EVENT record alone: %.2f / %.2f ns over the floor)\n",
           med[EV1_TOT] - med[EV1], med[EV8_TOT] - med[EV8], med[EV1] - med[FLOOR],
           med[EV8] - med[FLOOR]);
    printf("(N=%ld records, N/10 events x %d interleaved repetitions, medians of thread CPU "
           "time)\n", n, reps);
    return 0;
}
