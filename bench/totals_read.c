/* SPDX-License-Identifier: MIT */
/*
 * bench/totals_read.c — reading a live recording's whole-run totals (reader/pgreader.c,
 * read_totals): ms per pgr_open_fd of a file whose totals region has SLOTS slots in use,
 * while a writer thread commits an event every ~PERIOD ns (each commit rewrites BUSY slots
 * as the runtime does, runtime/rec_totals.c: seq odd, the copy, seq even with release), and
 * whether any read left a slot out (torn) or saw a busy slot's events go back.
 *
 * The file is synthetic (a version-3 header, 2 empty 4 KiB chunks, the region), in DIR. It
 * prints one line per read method run: median and max ms per open, torn slots, went back.
 *
 * Usage: totals_read [DIR] [reads] [slots] [busy] [period_ns]
 *        defaults: /tmp 200 16384 4 1000
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "perfgroup/format.h"
#include "pgreader.h"

static struct pgf_totals_slot *slots;
static uint32_t busy;
static long period_ns;
static volatile int stop;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *writer(void *arg) {
    (void)arg;
    uint64_t next = now_ns();
    for (uint64_t ev = 1; !stop; ev++) {
        while (now_ns() < next) /* an event's work */
            ;
        next += (uint64_t)period_ns;
        for (uint32_t i = 0; i < busy; i++) {
            struct pgf_totals_slot *s = &slots[i];
            uint32_t q = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
            __atomic_store_n(&s->seq, q + 1, __ATOMIC_RELAXED);
            __atomic_thread_fence(__ATOMIC_RELEASE);
            s->t.events = ev;
            s->t.activations = ev;
            s->t.cpu_ns += 700;
            s->t.wall_ns += 800;
            __atomic_store_n(&s->seq, q + 2, __ATOMIC_RELEASE);
        }
    }
    return NULL;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    int reads = argc > 2 ? atoi(argv[2]) : 200;
    uint32_t n = argc > 3 ? (uint32_t)atoi(argv[3]) : 16384;
    busy = argc > 4 ? (uint32_t)atoi(argv[4]) : 4;
    period_ns = argc > 5 ? atol(argv[5]) : 1000;
    if (reads < 1 || n < 1 || busy > n) {
        fprintf(stderr, "usage: totals_read [DIR] [reads] [slots] [busy] [period_ns]\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/pg-totals-read-%d.pgm", dir, (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    uint64_t tot_off = PGF_HEADER_SIZE + 2 * 4096;
    size_t size = tot_off + (size_t)n * sizeof(struct pgf_totals_slot);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
        perror(path);
        return 1;
    }
    uint8_t *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    struct pgf_file_header *h = (void *)map;
    memcpy(h->magic, PGF_MAGIC, PGF_MAGIC_LEN);
    h->version = PERFGROUP_FORMAT_VERSION;
    h->header_size = PGF_HEADER_SIZE;
    h->chunk_size = 4096;
    h->chunk_count = 2;
    h->chunks_offset = PGF_HEADER_SIZE;
    h->clock = PGF_CLOCK_MONOTONIC;
    h->mode = PGF_MODE_STATS;
    h->state = PGF_STATE_RECORDING;
    h->tsc_hz = 1000000000u;
    h->next_seq = 1;
    h->totals_offset = tot_off;
    h->totals_slot_size = sizeof(struct pgf_totals_slot);
    h->totals_count = n;
    h->totals_used = n;
    slots = (void *)(map + tot_off);
    for (uint32_t i = 0; i < n; i++) {
        slots[i].thread = 1 + i / 64;
        slots[i].group = 1 + i % 64;
        slots[i].flags = PGF_TOTALS_F_USED;
        slots[i].t.events = slots[i].t.activations = 1;
        slots[i].t.min_event_ns = slots[i].t.max_event_ns = 1;
    }
    pthread_t w;
    if (busy && pthread_create(&w, NULL, writer, NULL) != 0)
        return 1;
    double *ms = malloc((size_t)reads * sizeof *ms);
    uint64_t *last = calloc(busy ? busy : 1, sizeof *last);
    uint64_t torn = 0, back = 0, errors = 0;
    for (int k = 0; k < reads; k++) {
        uint64_t t0 = now_ns();
        pgr_reader *r = pgr_open(path);
        const struct pgf_totals_slot *ts;
        uint64_t tn = 0;
        size_t got = r && !pgr_error(r) ? pgr_totals(r, &ts, &tn) : 0;
        ms[k] = (double)(now_ns() - t0) / 1e6;
        if (!r || pgr_error(r))
            errors++;
        torn += tn;
        for (size_t i = 0; i < got; i++) {
            uint32_t b = (ts[i].thread - 1) * 64 + (ts[i].group - 1);
            if (b < busy) {
                if (ts[i].t.events < last[b])
                    back++;
                last[b] = ts[i].t.events;
            }
        }
        if (got + tn != n)
            errors++;
        pgr_close(r);
    }
    stop = 1;
    if (busy)
        pthread_join(w, NULL);
    qsort(ms, (size_t)reads, sizeof *ms, cmp_d);
    printf("slots %u busy %u period %ld ns: %d reads, median %.2f ms max %.2f ms per open; "
           "torn %llu, went back %llu, errors %llu\n",
           n, busy, period_ns, reads, ms[reads / 2], ms[reads - 1], (unsigned long long)torn,
           (unsigned long long)back, (unsigned long long)errors);
    unlink(path);
    free(ms);
    free(last);
    return torn || back || errors;
}

#ifdef TOTALS_READ_NO_PVR
/* bench_totals_read_nopvr (linked with -Wl,--wrap=process_vm_readv): the reader as a seccomp
 * profile that refuses process_vm_readv leaves it, reading by preads alone */
#include <errno.h>
#include <sys/uio.h>
ssize_t __wrap_process_vm_readv(pid_t pid, const struct iovec *l, unsigned long nl,
                                const struct iovec *r, unsigned long nr, unsigned long flags);
ssize_t __wrap_process_vm_readv(pid_t pid, const struct iovec *l, unsigned long nl,
                                const struct iovec *r, unsigned long nr, unsigned long flags) {
    (void)pid, (void)l, (void)nl, (void)r, (void)nr, (void)flags;
    errno = EPERM;
    return -1;
}
#endif
