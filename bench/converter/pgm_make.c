/* SPDX-License-Identifier: MIT */
/*
 * pgm_make.c — writes a large recording with the real recorder (runtime/rec_*.c, through
 * runtime/record.h) for the converter benchmark: 4 threads, each iteration one event with 3
 * groups and, in trace mode, 8 nested intervals under one outermost interval (25 µs of
 * synthetic time per iteration, on the recorder's clock), until the file holds SIZE_MB of
 * records. The buffer is sized so nothing is recycled.
 *
 *   pgm_make OUT.pgm SIZE_MB stats|trace [BUFFER_MB]
 *
 * With BUFFER_MB smaller than SIZE_MB the recorder recycles its oldest chunks (the converter's
 * recycling test uses this).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfgroup.h"
#include "clock.h"
#include "record.h"

#define THREADS 4

static uint64_t per_thread_bytes;
static int trace;
static uint32_t ev_name;
static uint64_t base_tsc;

static void *run(void *arg)
{
    uint32_t idx = (uint32_t)(uintptr_t)arg;
    char name[16];
    snprintf(name, sizeof(name), "bench-%u", idx);
    struct perfgroup_rec_thread *w = perfgroup__rec_thread_start(idx + 1, 50000 + idx, name);
    uint64_t bytes = 0, t = base_tsc;
    /* 25 us of the recorder's clock per iteration */
    const uint64_t step = perfgroup__clock_hz() / 40000 ? perfgroup__clock_hz() / 40000 : 25000;
    while (bytes < per_thread_bytes) {
        const uint64_t u = step / 100; /* everything fits in one step */
        if (trace) {
            for (uint32_t k = 0; k < 8; k++)
                perfgroup__rec_interval(w, 2 + (k & 3), 1, 1, t + u + k * 11 * u, 8 * u);
            perfgroup__rec_interval(w, 1, 1, 0, t, 93 * u);
            bytes += 9 * PGF_INTERVAL_SIZE;
        }
        struct perfgroup_rec_group_share g[3] = {
            {1, 93 * u, 22000, 1, 13000, 0}, {2, 44 * u, 9000, 4, 3000, 2}, {3, 22 * u, 6000, 4, 6000, 3}};
        perfgroup__rec_event(w, ev_name, t, t + 96 * u, 23000, 0, g, 3);
        bytes += 72;
        t += step;
    }
    perfgroup__rec_thread_end(w, t);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: pgm_make OUT.pgm SIZE_MB stats|trace [BUFFER_MB]\n");
        return 1;
    }
    uint64_t mb = strtoull(argv[2], NULL, 10);
    trace = strcmp(argv[3], "trace") == 0;
    per_thread_bytes = mb * 1000000ull / THREADS;
    uint64_t buffer = mb * 1000000ull * 11 / 10 + (4u << 20);
    if (argc == 5)
        buffer = strtoull(argv[4], NULL, 10) << 20;
    if (perfgroup_record_open(argv[1], trace ? PERFGROUP_RECORD_TRACE : PERFGROUP_RECORD_STATS,
                              buffer, 65536) != 0) {
        fprintf(stderr, "pgm_make: cannot open %s\n", argv[1]);
        return 1;
    }
    static const uint32_t g1[] = {1}, g2[] = {2}, g3[] = {3}, g23[] = {2, 3};
    perfgroup__rec_group(1, "loop", PERFGROUP_KIND_ATTRIBUTE, 1);
    perfgroup__rec_group(2, "parser", PERFGROUP_KIND_ATTRIBUTE, 1);
    perfgroup__rec_group(3, "render", PERFGROUP_KIND_ATTRIBUTE, 1);
    perfgroup__rec_function(1, "_Z8mainloopv", "loop.cc", 10, "", g1, 1);
    perfgroup__rec_function(2, "_ZN6Parser5parseEPKc", "parser.cc", 20, "", g2, 1);
    perfgroup__rec_function(3, "_ZN8Renderer5paintEv", "render.cc", 30, "", g3, 1);
    perfgroup__rec_function(4, "helper", "util.c", 40, "", g23, 2);
    perfgroup__rec_function(5, "_ZN6Parser4lexEv", "parser.cc", 50, "", g2, 1);
    ev_name = perfgroup__rec_string("iteration");
    base_tsc = pg_clock_now(); /* the recorder's own clock, so times start at the start */
    pthread_t th[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, run, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    return perfgroup_record_close() == 0 ? 0 : 1;
}
