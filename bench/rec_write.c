/* SPDX-License-Identifier: MIT */
/*
 * bench/rec_write.c — the recorder's writer alone (runtime/record.h, static runtime), in ns
 * per record, and what one chunk switch costs.
 *
 *   floor        a non-inlined call between two inline rdtsc (as in bench/hooks.c)
 *   hand         floor + the interval record's 29 bytes written by hand
 *   msgpack      floor + record.h's perfgroup__rec_interval: the same bytes through
 *                msgpack-c's packer (msgpack_pack_array, _uint8, _fix_uint32/8/64) with a
 *                write callback the compiler sees through
 *   switch_64k   msgpack, 64 KiB chunks, in a 4 MiB file that wraps: a chunk switch (with
 *                recycling) every ~2260 records
 *   switch_4k    msgpack, 4 KiB chunks, same file: a switch every ~138 records
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
#include "perfgroup.h"
#include "record.h"

static volatile uint64_t sink;
#if defined(__clang__)
#define NOIPA_ /* clang has no noipa; noinline and the asm barrier suffice */
#else
#define NOIPA_ __attribute__((noipa))
#endif
__attribute__((noinline)) NOIPA_ static void leaf(void) { __asm__ __volatile__("" ::: "memory"); }

static inline void store32be(uint8_t *p, uint32_t v) {
    v = __builtin_bswap32(v);
    memcpy(p, &v, 4);
}
static inline void store64be(uint8_t *p, uint64_t v) {
    v = __builtin_bswap64(v);
    memcpy(p, &v, 8);
}

/* The same 29 bytes written by hand; same space check and publication as record.h's
 * perfgroup__rec_interval (which uses msgpack-c's packer). */
static inline __attribute__((always_inline)) void
interval_hand(struct perfgroup_rec_thread *w, uint32_t fid, uint8_t mask, uint8_t depth,
                 uint64_t start, uint64_t dur) {
    uint8_t *p = w->pos;
    uintptr_t end = (uintptr_t)__atomic_load_n(&w->end, __ATOMIC_RELAXED);
    while (__builtin_expect((uintptr_t)p + PGF_INTERVAL_SIZE > end, 0)) {
        if (perfgroup__rec_reserve(w, PGF_INTERVAL_SIZE))
            return;
        p = w->pos;
        end = (uintptr_t)__atomic_load_n(&w->end, __ATOMIC_RELAXED);
    }
    p[0] = 0x96;
    p[1] = PGF_REC_INTERVAL;
    p[2] = 0xce;
    store32be(p + 3, fid);
    p[7] = 0xcc;
    p[8] = mask;
    p[9] = 0xcc;
    p[10] = depth;
    p[11] = 0xcf;
    store64be(p + 12, start);
    p[20] = 0xcf;
    store64be(p + 21, dur);
    p += PGF_INTERVAL_SIZE;
    w->pos = p;
    struct pgf_chunk_header *c = w->chunk;
    c->record_count++;
    c->last_tsc = start + dur;
    __atomic_store_n(&c->committed, (uint32_t)(p - w->data), __ATOMIC_RELEASE);
}

enum { FLOOR, HAND, MSGPACK, SW64, SW4, NCONF };
static const char *names[NCONF] = {"floor", "hand", "msgpack", "switch_64k", "switch_4k"};
static char path[512];

static double run(int conf, long n) {
    uint32_t chunk = conf == SW4 ? 4096 : 65536;
    struct perfgroup_rec_thread *w = NULL;
    if (conf != FLOOR) {
        if (perfgroup_record_open(path, PERFGROUP_RECORD_TRACE, 4u << 20, chunk) != 0) {
            fprintf(stderr, "cannot open %s\n", path);
            exit(1);
        }
        w = perfgroup__rec_thread_start(1, 1, "bench");
        for (long i = 0; i < (8l << 20) / 29; i++) /* untimed: wrap once, pages resident */
            perfgroup__rec_interval(w, 1, 1, 0, 0, 0);
    }
    uint64_t acc = 0;
    double t0 = bench_now_ns();
    switch (conf) {
    case FLOOR:
        for (long i = 0; i < n; i++) {
            uint64_t a = __rdtsc();
            leaf();
            acc += __rdtsc() - a;
        }
        break;
    case HAND:
        for (long i = 0; i < n; i++) {
            uint64_t a = __rdtsc();
            leaf();
            uint64_t b = __rdtsc();
            interval_hand(w, 7, 1, 3, a, b - a);
        }
        break;
    default: /* MSGPACK (record.h), SW64, SW4 */
        for (long i = 0; i < n; i++) {
            uint64_t a = __rdtsc();
            leaf();
            uint64_t b = __rdtsc();
            perfgroup__rec_interval(w, 7, 1, 3, a, b - a);
        }
        break;
    }
    double t = bench_now_ns() - t0;
    if (w) {
        perfgroup__rec_thread_end(w, 0);
        perfgroup_record_close();
        unlink(path);
    }
    sink += acc;
    return t / (double)n;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 2000000;
    int reps = argc > 2 ? atoi(argv[2]) : 11;
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
    printf("(N=%ld records x %d interleaved repetitions, medians of thread CPU time)\n", n,
           reps);
    return 0;
}
