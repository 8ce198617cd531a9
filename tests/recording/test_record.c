/* SPDX-License-Identifier: MIT */
/*
 * test_record.c — the recorder (runtime/rec_*.c) driven through runtime/record.h and the
 * public recording API, read back with pgreader. One test per argv[1]; every test records
 * a real file through the real mapping and reads it back from disk. The tests of processes
 * and environments are in test_record_proc.c, the shared pieces in rec_util.c.
 *
 *   counts     exact record counts when the limit is not hit (stats + trace)
 *   recycle    small limit: all definitions and the newest chunks survive, drops exact
 *   stalled    writers descheduled right after a chunk switch (their newest records in
 *              their last FULL chunk, nothing in the next yet) keep those records while
 *              another writer recycles the whole buffer around them, all of them at once
 *   threads    16 threads at once: every thread's records complete and in order
 *   kill [N]   SIGKILL a 4-thread recorder at random moments N times (default 50)
 *   fork       the child records into its own file, the parent's is unaffected
 *   exec       exec closes the file cleanly; the new image writes <name>.exec1
 *   symlink    a symlink planted at the output path is replaced, never followed
 *   perm       an unwritable path is reported once; the program runs on unrecorded
 *   api        perfgroup_record_open/close and markers; bad arguments
 *   badenv     bad PERFGROUP_MODE / _BUFFER / _CHUNK: one line on stderr, no file, runs on
 *   clock      a clock pair at each chunk start, and again at an event a second later
 *   full       more writers than chunks: the ones without a chunk drop everything, counted
 *   notmp      100 SIGKILLs in a recording's first 5 ms leave no temporary file
 *   names      threads named by pthread_setname_np (before and after their first record)
 *              and unnamed threads ("thread <tid>") have their names in the file
 *   churn [P]  100k short threads in a 1 MiB buffer: definitions take at most half of it,
 *              the newest threads' events survive; P: keep the file at path P
 *   signal     a signal handler records intervals while its thread writes cold records
 *              (events, markers, chunk switches): no deadlock, no mixed record, every
 *              handler record read back or counted as dropped
 *   heaviest   an event's groups are written heaviest first (CPU, then counter ticks, then
 *              the lower id), in events of 5 and of 300 groups; one of 300 groups in 4 KiB
 *              chunks lists the heaviest that fit and counts the rest in groups_more
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "perfgroup.h"
#include "readback.h"
#include "record.h"
#include "clock.h"
#include "rec_test.h"

/* ---- counts ----------------------------------------------------------------------------- */
static int test_counts(void) {
    char path[300];
    path_in(path, sizeof path, "counts.pgm");
    CHECK_EQ(perfgroup_record_open(path, PERFGROUP_RECORD_TRACE, 1 << 20, 4096), 0);
    CHECK_EQ(perfgroup__rec_mode, PGF_MODE_TRACE);
    define_some();
    uint32_t ev = perfgroup__rec_string("tick");
    CHECK_EQ(ev, 1);
    CHECK_EQ(perfgroup__rec_string("tick"), 1); /* interned */
    struct perfgroup_rec_thread *w = perfgroup__rec_thread_start(0, (uint32_t)getpid(), "main");
    CHECK(w != NULL);
    write_intervals(w, 0, 5000);
    for (int i = 0; i < 300; i++)
        write_event(w, ev, (uint64_t)i * 2000);
    uint64_t t = perfgroup_marker_begin();
    CHECK_EQ(perfgroup_marker("load", "page 1"), 0);
    CHECK_EQ(perfgroup_marker_end("load", "done", t), 0);
    perfgroup__rec_overhead(w, 1, 2, 3, 4, 5);
    perfgroup__rec_thread_end(w, 12345);
    CHECK_EQ(perfgroup_record_close(), 0);
    CHECK_EQ(perfgroup__rec_mode, 0);

    struct readback r;
    readback(path, &r);
    CHECK_EQ(r.error, 0);
    CHECK_EQ(r.warnings, 0);
    CHECK_EQ(r.hdr.state, PGF_STATE_CLOSED);
    CHECK(r.hdr.end_tsc != 0);
    CHECK_EQ(r.hdr.records_dropped, 0);
    CHECK_EQ(r.hdr.chunks_recycled, 0);
    CHECK_EQ(r.hdr.mode, PGF_MODE_TRACE);
    CHECK_EQ(r.kinds[PGF_REC_PROCESS], 1);
    CHECK_EQ(r.process_pid, getpid());
    CHECK_EQ(r.kinds[PGF_REC_GROUP], 3);
    CHECK_EQ(r.kinds[PGF_REC_SITE], 2);
    CHECK_EQ(r.kinds[PGF_REC_STRING], 2);  /* tick, load */
    CHECK_EQ(r.kinds[PGF_REC_THREAD], 1);  /* markers went to the same thread */
    struct rb_thread *m = rb_thread(&r, 0);
    CHECK_EQ(m->intervals, 5000);
    CHECK_EQ(m->first, 0);
    CHECK_EQ(m->last, 4999);
    CHECK_EQ(m->gap, 0);
    CHECK_EQ(m->events, 300);
    CHECK_EQ(m->markers, 2);
    CHECK_EQ(m->thread_end, 1);
    CHECK_EQ(r.kinds[PGF_REC_OVERHEAD], 1);
    CHECK_EQ(r.kinds[PGF_REC_DROPPED], 0);
    /* one CLOCK per data chunk, and the chunk accounting adds up */
    CHECK_EQ(r.kinds[PGF_REC_CLOCK], r.data_chunks);
    CHECK_EQ(m->committed_total, m->records);
    CHECK_EQ(m->chunk_records, m->records);
    return 0;
}

/* ---- recycle ------------------------------------------------------------------------------ */
static int test_recycle(void) {
    char path[300];
    path_in(path, sizeof path, "small.pgm");
    /* header + 16 chunks of 4 KiB: ~130 intervals per chunk, 20000 intervals = ~150 chunks */
    CHECK_EQ(perfgroup_record_open(path, PERFGROUP_RECORD_TRACE, 4096 + 16 * 4096, 4096), 0);
    define_some();
    for (int i = 0; i < 200; i++) { /* enough definitions for 2 DEFS chunks */
        char name[64];
        snprintf(name, sizeof name, "a-rather-long-group-name-number-%03d", i);
        perfgroup__rec_group(100 + (uint32_t)i, name, PERFGROUP_KIND_ATTRIBUTE, 1);
    }
    struct perfgroup_rec_thread *w = perfgroup__rec_thread_start(7, 1, "t7");
    const uint64_t n = 20000;
    write_intervals(w, 0, n);
    perfgroup__rec_thread_end(w, 1);
    CHECK_EQ(perfgroup_record_close(), 0);

    struct readback r;
    readback(path, &r);
    CHECK_EQ(r.error, 0);
    CHECK_EQ(r.kinds[PGF_REC_GROUP], 203);  /* every definition survived */
    CHECK_EQ(r.kinds[PGF_REC_SITE], 2);
    CHECK_EQ(r.kinds[PGF_REC_PROCESS], 1);
    CHECK(r.def_chunks >= 2);
    CHECK(r.hdr.chunks_recycled > 100);
    struct rb_thread *t = rb_thread(&r, 7);
    /* the newest records survive: a gap-free run ending with the last one written */
    CHECK_EQ(t->gap, 0);
    CHECK_EQ(t->last, n - 1);
    CHECK_EQ(t->thread_end, 1);
    CHECK(t->intervals < n);
    /* exact: what was committed minus what is here is what the header says was dropped */
    CHECK_EQ(t->dropped_before, 0);
    CHECK_EQ(t->chunk_records, t->records);
    CHECK_EQ(t->committed_total - t->records, r.hdr.records_dropped);
    /* the intervals lost are exactly the first ones */
    CHECK_EQ(t->first, n - t->intervals);
    /* a DROPPED record is in each surviving chunk after a recycling of this thread's */
    CHECK(r.kinds[PGF_REC_DROPPED] >= 1);
    /* every chunk is used (DEFS or DATA) but the one the thread had reserved as its next:
     * thread end gives that back unused; the limit is used, never exceeded */
    CHECK_EQ(r.def_chunks + r.data_chunks, r.hdr.chunk_count - 1);
    struct stat st;
    CHECK_EQ(stat(path, &st), 0);
    /* the chunks, then the whole-run totals region (format.h, version 3): sparse */
    CHECK_EQ(r.hdr.totals_offset, 4096 + 16 * 4096);
    CHECK_EQ((uint64_t)st.st_size, 4096 + 16 * 4096 +
                                   (uint64_t)r.hdr.totals_count * r.hdr.totals_slot_size);
    return 0;
}

/* ---- stalled ------------------------------------------------------------------------------ */
/* Each of STALLED writers fills its first chunk and switches to the next (the slow path a
 * thread returns from before it writes the record that did not fit), then stops, as a
 * thread descheduled there for long: its newest records are in its last FULL chunk, among
 * the oldest of the file by now. Another writer recycles the buffer many times over. Every
 * stalled writer's records must survive, not only the oldest one's (recording.kill lost
 * the second of two threads descheduled so). */
#define STALLED 3
static int test_stalled(void) {
    char path[300];
    path_in(path, sizeof path, "stalled.pgm");
    CHECK_EQ(perfgroup_record_open(path, PERFGROUP_RECORD_TRACE, 4096 + 24 * 4096, 4096), 0);
    define_some();
    uint64_t n[STALLED];
    for (uint32_t k = 0; k < STALLED; k++) {
        struct perfgroup_rec_thread *s = perfgroup__rec_thread_start(11 + k, 11 + k, "stalled");
        n[k] = 0;
        do /* the first record takes the writer's first chunk */
            perfgroup__rec_interval(s, 1, 1, 0, n[k]++, 1);
        while (perfgroup__rec_interval_room(s));
        CHECK_EQ(perfgroup__rec_reserve(s, PGF_INTERVAL_SIZE), 0); /* the switch, no record */
    }
    struct perfgroup_rec_thread *w = perfgroup__rec_thread_start(7, 7, "busy");
    write_intervals(w, 0, 20000);
    perfgroup__rec_thread_end(w, 1);
    CHECK_EQ(perfgroup_record_close(), 0);

    struct readback r;
    readback(path, &r);
    CHECK_EQ(r.error, 0);
    CHECK(r.hdr.chunks_recycled > 100);
    for (uint32_t k = 0; k < STALLED; k++) {
        struct rb_thread *t = rb_thread(&r, 11 + k);
        CHECK_EQ(t->intervals, n[k]);
        CHECK_EQ(t->last, n[k] - 1);
        CHECK_EQ(t->gap, 0);
    }
    CHECK_EQ(rb_thread(&r, 7)->last, 20000 - 1); /* the busy writer's newest survive too */
    return 0;
}

/* ---- threads ------------------------------------------------------------------------------ */
#define NTHREADS 16
#define PER_THREAD 20000

static void *thread_main(void *arg) {
    uint32_t idx = (uint32_t)(uintptr_t)arg;
    char name[16];
    snprintf(name, sizeof name, "w%u", idx);
    struct perfgroup_rec_thread *w = perfgroup__rec_thread_start(idx, idx + 1000, name);
    uint32_t ev = perfgroup__rec_string(name);
    for (uint64_t i = 0; i < PER_THREAD; i++) {
        perfgroup__rec_interval(w, 1, 1, 0, i, 1);
        if (i % 1000 == 0)
            write_event(w, ev, i);
    }
    perfgroup__rec_thread_end(w, 1);
    return NULL;
}

static int test_threads(void) {
    char path[300];
    path_in(path, sizeof path, "threads.pgm");
    CHECK_EQ(perfgroup_record_open(path, PERFGROUP_RECORD_TRACE, 64u << 20, 16384), 0);
    define_some();
    pthread_t th[NTHREADS];
    for (uintptr_t i = 0; i < NTHREADS; i++)
        CHECK_EQ(pthread_create(&th[i], NULL, thread_main, (void *)(i + 1)), 0);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    CHECK_EQ(perfgroup_record_close(), 0);
    struct readback r;
    readback(path, &r);
    CHECK_EQ(r.error, 0);
    CHECK_EQ(r.hdr.records_dropped, 0);
    CHECK_EQ(r.kinds[PGF_REC_THREAD], NTHREADS);
    CHECK_EQ(r.kinds[PGF_REC_STRING], NTHREADS);
    for (uint32_t i = 1; i <= NTHREADS; i++) {
        struct rb_thread *t = rb_thread(&r, i);
        CHECK_EQ(t->intervals, PER_THREAD);
        CHECK_EQ(t->first, 0);
        CHECK_EQ(t->last, PER_THREAD - 1);
        CHECK_EQ(t->gap, 0);
        CHECK_EQ(t->events, PER_THREAD / 1000);
        CHECK_EQ(t->thread_end, 1);
        CHECK_EQ(t->committed_total, t->records);
    }
    return 0;
}

/* ---- kill ---------------------------------------------------------------------------------- */
#define KILL_THREADS 4

struct kill_shared {
    volatile uint64_t done[KILL_THREADS]; /* intervals whose call has returned */
    volatile int started;
};

static struct kill_shared *ks;
static uint64_t kill_records, kill_recycled_runs;

static void *kill_thread(void *arg) {
    uint32_t idx = (uint32_t)(uintptr_t)arg;
    struct perfgroup_rec_thread *w = perfgroup__rec_thread_start(idx, idx, "k");
    __atomic_fetch_add(&ks->started, 1, __ATOMIC_SEQ_CST);
    for (uint64_t i = 0;; i++) {
        perfgroup__rec_interval(w, 1, 1, 0, i, 1);
        __atomic_store_n(&ks->done[idx], i + 1, __ATOMIC_RELEASE);
        if ((i & 255) == 0) /* vary the moment of the kill inside the loop */
            sched_yield();
    }
    return NULL;
}

static int kill_once(unsigned run, unsigned seed) {
    char path[300];
    snprintf(path, sizeof path, "%s/kill%u.pgm", dir, run);
    memset((void *)ks, 0, sizeof *ks);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (perfgroup_record_open(path, PERFGROUP_RECORD_TRACE, 1 << 20, 4096) != 0)
            _exit(3);
        define_some();
        pthread_t th;
        for (uintptr_t i = 0; i < KILL_THREADS; i++)
            pthread_create(&th, NULL, kill_thread, (void *)i);
        for (;;)
            pause();
    }
    while (__atomic_load_n(&ks->started, __ATOMIC_SEQ_CST) < KILL_THREADS) {
        int st;
        CHECK_EQ(waitpid(pid, &st, WNOHANG), 0); /* the child is still alive */
        usleep(100);
    }
    struct timespec d = { 0, (long)(seed % 20000) * 1000 }; /* 0..20 ms */
    nanosleep(&d, NULL);
    CHECK_EQ(kill(pid, SIGKILL), 0);
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);

    struct readback r;
    readback(path, &r);
    CHECK_EQ(r.error, 0);
    CHECK_EQ(r.hdr.state, PGF_STATE_RECORDING);
    CHECK_EQ(r.kinds[PGF_REC_GROUP], 3);
    for (uint32_t i = 0; i < KILL_THREADS; i++) {
        struct rb_thread *t = rb_thread(&r, i);
        uint64_t done = ks->done[i];
        if (done == 0 && t->intervals == 0)
            continue;
        CHECK_EQ(t->gap, 0);
        /* the newest whole record is the last returned call or the one in flight */
        if (t->last + 1 < done) /* say enough to tell recycling from a torn write */
            fprintf(stderr, "thread %u: last %lu, done %lu, %lu intervals, newest seq %lu, "
                    "%lu chunks recycled\n", i, (unsigned long)t->last, (unsigned long)done,
                    (unsigned long)t->intervals, (unsigned long)t->newest_seq,
                    (unsigned long)r.hdr.chunks_recycled);
        CHECK(t->last + 1 >= done);
        CHECK(t->last + 1 <= done + 1);
        /* surviving records are a suffix: the lost ones are accounted for */
        CHECK(t->committed_total >= t->records);
        kill_records += t->intervals;
    }
    kill_recycled_runs += r.hdr.chunks_recycled > 0;
    unlink(path);
    return 0;
}

static int test_kill(int runs) {
    ks = mmap(NULL, sizeof *ks, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(ks != MAP_FAILED);
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    fprintf(stderr, "kill: seed %u, %d runs\n", seed, runs);
    for (int i = 0; i < runs; i++) {
        seed = seed * 1103515245u + 12345u;
        kill_once((unsigned)i, seed >> 8);
    }
    fprintf(stderr, "kill: %d runs ok, %llu intervals read back, %llu runs recycled chunks\n",
            runs, (unsigned long long)kill_records, (unsigned long long)kill_recycled_runs);
    return 0;
}

/* ---- thread churn: definitions bounded ---------------------------------------------------- */
static int test_churn(const char *keep) {
    char path[300];
    path_in(path, sizeof path, "churn.pgm");
    if (keep)
        snprintf(path, sizeof path, "%s", keep);
    CHECK_EQ(perfgroup_record_open(path, PERFGROUP_RECORD_STATS, 1 << 20, 4096), 0);
    define_some();
    uint32_t name = perfgroup__rec_string("tick");
    const uint32_t n = 100000;
    for (uint32_t i = 1; i <= n; i++) { /* short threads, one after another, 3 events each */
        struct perfgroup_rec_thread *w = perfgroup__rec_thread_start(i, 1000000 + i, NULL);
        for (int e = 0; e < 3; e++)
            write_event(w, name, (uint64_t)i * 10000 + (uint64_t)e * 2000);
        perfgroup__rec_thread_end(w, (uint64_t)i * 10000 + 9000);
    }
    CHECK_EQ(perfgroup_record_close(), 0);
    struct readback r;
    readback(path, &r);
    CHECK_EQ(r.error, 0);
    fprintf(stderr, "churn: %u chunks: %llu definitions, %llu data, %llu records dropped\n",
            r.hdr.chunk_count, (unsigned long long)r.def_chunks,
            (unsigned long long)r.data_chunks, (unsigned long long)r.hdr.records_dropped);
    CHECK(r.def_chunks * 2 <= r.hdr.chunk_count);  /* half the buffer or more for data */
    CHECK(r.data_chunks * 2 >= r.hdr.chunk_count - 2);
    CHECK(r.hdr.records_dropped > 0);
    struct rb_thread *t = rb_thread(&r, n); /* the newest thread kept all it wrote */
    CHECK(t != NULL);
    CHECK_EQ(t->events, 3);
    CHECK_EQ(t->thread_end, 1);
    return 0;
}


/* ---- api ----------------------------------------------------------------------------------- */
static int test_api(void) {
    char path[300];
    path_in(path, sizeof path, "api.pgm");
    CHECK_EQ(perfgroup_record_close(), -ENOENT);
    CHECK_EQ(perfgroup_marker("x", NULL), -ENOENT);
    CHECK_EQ(perfgroup_record_open(path, 3, 0, 0), -EINVAL);
    CHECK_EQ(perfgroup_record_open(path, PERFGROUP_RECORD_STATS, 0, 3000), -EINVAL);
    CHECK_EQ(perfgroup_record_open(path, PERFGROUP_RECORD_STATS, 8192, 4096), -EINVAL);
    CHECK_EQ(perfgroup_record_open("/nonexistent-dir/x.pgm", PERFGROUP_RECORD_STATS, 0, 0),
             -ENOENT);
    CHECK_EQ(perfgroup_record_open(path, PERFGROUP_RECORD_STATS, 1 << 20, 0), 0);
    CHECK_EQ(perfgroup_record_open(path, PERFGROUP_RECORD_STATS, 1 << 20, 0), -EALREADY);
    CHECK_EQ(perfgroup__rec_mode, PGF_MODE_STATS);
    CHECK_EQ(perfgroup_marker(NULL, "x"), -EINVAL);
    CHECK_EQ(perfgroup_marker("instant", NULL), 0);
    CHECK_EQ(perfgroup_marker_end("interval", "text", perfgroup_marker_begin()), 0);
    CHECK_EQ(perfgroup_record_close(), 0);
    struct readback r;
    readback(path, &r);
    CHECK_EQ(r.error, 0);
    CHECK_EQ(r.hdr.chunk_size, 64 * 1024);
    CHECK_EQ(r.hdr.chunk_count, ((1 << 20) - 4096) / (64 * 1024));
    CHECK_EQ(r.kinds[PGF_REC_MARKER], 2);
    CHECK_EQ(r.kinds[PGF_REC_THREAD], 1); /* the lazily made marker thread */
    /* reopen after close: definitions made before are replayed */
    perfgroup__rec_group(9, "late", PERFGROUP_KIND_ATTRIBUTE, 1);
    path_in(path, sizeof path, "api2.pgm");
    CHECK_EQ(perfgroup_record_open(path, PERFGROUP_RECORD_STATS, 1 << 20, 0), 0);
    CHECK_EQ(perfgroup_marker("again", NULL), 0);
    CHECK_EQ(perfgroup_record_close(), 0);
    readback(path, &r);
    CHECK_EQ(r.error, 0);
    CHECK_EQ(r.kinds[PGF_REC_GROUP], 1);
    CHECK_EQ(r.kinds[PGF_REC_STRING], 3); /* instant, interval, again */
    CHECK_EQ(r.kinds[PGF_REC_MARKER], 1);
    return 0;
}

/* ---- clock --------------------------------------------------------------------------------- */
static int test_clock(void) {
    char path[300];
    path_in(path, sizeof path, "clock.pgm");
    perfgroup__clock_init(); /* the core's clock, as the runtime's constructor sets it up */
    CHECK_EQ(perfgroup_record_open(path, PERFGROUP_RECORD_STATS, 1 << 20, 4096), 0);
    struct perfgroup_rec_thread *w = perfgroup__rec_thread_start(0, 1, "main");
    uint32_t ev = perfgroup__rec_string("ev");
    struct perfgroup_rec_group_share sh = { 1, 10, 10, 1, 10, 0 };
    uint64_t t0 = pg_clock_now();
    perfgroup__rec_event(w, ev, t0, pg_clock_now(), 1, 0, &sh, 1);
    usleep(1100 * 1000); /* real time: more than a second of the real clock */
    uint64_t t1 = pg_clock_now();
    perfgroup__rec_event(w, ev, t1, pg_clock_now(), 1, 0, &sh, 1);
    perfgroup__rec_event(w, ev, pg_clock_now(), pg_clock_now(), 1, 0, &sh, 1);
    perfgroup__rec_thread_end(w, pg_clock_now());
    CHECK_EQ(perfgroup_record_close(), 0);

    pgr_reader *r = pgr_open(path);
    struct pgr_record rec;
    uint64_t clocks = 0, prev_tsc = 0;
    int64_t prev_rt = 0;
    while (pgr_next(r, &rec) > 0) {
        if (rec.kind != PGF_REC_CLOCK)
            continue;
        clocks++;
        CHECK(rec.u.clock.tsc > prev_tsc);
        CHECK(rec.u.clock.realtime_ns > prev_rt);
        if (clocks == 2) { /* the periodic one: after the sleep, before the second event */
            CHECK(rec.u.clock.tsc >= t1);
            CHECK(rec.u.clock.realtime_ns - prev_rt >= 1000000000);
        }
        prev_tsc = rec.u.clock.tsc;
        prev_rt = rec.u.clock.realtime_ns;
    }
    CHECK(pgr_error(r) == NULL);
    CHECK_EQ(clocks, 2); /* chunk start, then one a second later; not one per event */
    CHECK(pgr_header(r)->tsc_hz > 0);
    pgr_close(r);
    return 0;
}

/* ---- chunk clocks --------------------------------------------------------------------------- */
/* A thread in trace mode opening chunks fast: every FULL chunk's last_tsc is still the end of
 * its last interval (which does not store it: the seal does), and its CLOCK records read the
 * thread's CPU clock (a system call) in the first and then at most once a millisecond. */
static int test_chunk_clocks(void) {
    char path[300];
    path_in(path, sizeof path, "chunkclocks.pgm");
    perfgroup__clock_init();
    CHECK_EQ(perfgroup_record_open(path, PERFGROUP_RECORD_TRACE, 64u << 20, 4096), 0);
    define_some();
    struct perfgroup_rec_thread *w = perfgroup__rec_thread_start(0, 1, "main");
    CHECK(w != NULL);
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    uint64_t n = 0, switches = 0;
    const struct pgf_chunk_header *seen = NULL;
    /* 30 ms of the thread's CPU time (the readings are once a millisecond of it: wall time
     * would give fewer on a loaded machine) and 200 chunks at least (a sanitizer build
     * writes ~10 times slower) */
    do {
        for (int k = 0; k < 256; k++, n++) {
            for (volatile int spin = 0; spin < 20; spin++)
                ;
            perfgroup__rec_interval(w, 1, 1, 0, pg_clock_now(), 7 + (n & 15));
            switches += w->chunk != seen;
            seen = w->chunk;
        }
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000000000ll + (b.tv_nsec - a.tv_nsec) < 30000000 ||
             switches < 200);
    /* An OVERHEAD record has no clock of its own: it keeps the end of the interval before it
     * when both fit in the chunk (room for the interval and the OVERHEAD's 47 at most) ... */
    const size_t ov_max = 1 + 1 + 5 * 9;
#define PG_ROOM_ ((size_t)((uintptr_t)w->end - (uintptr_t)w->pos))
    while (!w->end || PG_ROOM_ < PGF_INTERVAL_SIZE + ov_max)
        perfgroup__rec_interval(w, 1, 1, 0, pg_clock_now(), 7), n++;
    uint64_t t = pg_clock_now();
    perfgroup__rec_interval(w, 1, 1, 0, t, 99);
    perfgroup__rec_overhead(w, 1, 2, 3, 4, 5);
    CHECK_EQ(w->chunk->last_tsc, t + 99);
    n++;
    /* ... and when it opens a new chunk, the old one is sealed with the interval's end and the
     * new one's clock is its opening CLOCK's */
    while (!w->end || PG_ROOM_ < PGF_INTERVAL_SIZE || PG_ROOM_ >= PGF_INTERVAL_SIZE + ov_max)
        perfgroup__rec_interval(w, 1, 1, 0, pg_clock_now(), 7), n++;
#undef PG_ROOM_
    struct pgf_chunk_header *old = w->chunk;
    t = pg_clock_now();
    perfgroup__rec_interval(w, 1, 1, 0, t, 99);
    n++;
    CHECK(w->chunk == old);
    perfgroup__rec_overhead(w, 1, 2, 3, 4, 5);
    CHECK(w->chunk != old);
    CHECK_EQ(old->state, PGF_CSTATE_FULL);
    CHECK_EQ(old->last_tsc, t + 99);
    CHECK(w->chunk->last_tsc >= w->chunk->first_tsc && w->chunk->last_tsc > t);
    perfgroup__rec_thread_end(w, pg_clock_now());
    CHECK_EQ(perfgroup_record_close(), 0);

    pgr_reader *r = pgr_open(path);
    uint64_t hz = pgr_header(r)->tsc_hz;
    CHECK(hz > 0);
    static struct { uint64_t seq, last_tsc; uint16_t state; } ch[20000];
    size_t nch = 0;
    for (size_t i = 0; i < pgr_chunk_count(r) && nch < 20000; i++) {
        const struct pgr_chunk_info *c = pgr_chunk(r, i);
        if (c->kind == PGF_CHUNK_DATA)
            ch[nch].seq = c->seq, ch[nch].last_tsc = c->last_tsc, ch[nch++].state = c->state;
    }
    CHECK(nch < 20000);
    struct pgr_record rec;
    uint64_t cur_seq = 0, end = 0, checked = 0, intervals = 0, clocks = 0, read = 0;
    uint64_t prev_read = 0;
    size_t ci = 0;
    for (int more = 1; more;) {
        more = pgr_next(r, &rec) > 0;
        if (more && rec.thread == PGF_THREAD_DEFS)
            continue;
        if ((!more || rec.chunk_seq != cur_seq) && cur_seq) {
            /* the chunk cur_seq is over: its last record ended at `end` */
            while (ci < nch && ch[ci].seq != cur_seq)
                ci++;
            CHECK(ci < nch);
            CHECK_EQ(ch[ci].state, PGF_CSTATE_FULL);
            CHECK_EQ(ch[ci].last_tsc, end);
            checked++;
        }
        if (!more)
            break;
        cur_seq = rec.chunk_seq;
        if (rec.kind == PGF_REC_INTERVAL) {
            end = rec.u.interval.start_tsc + rec.u.interval.duration;
            intervals++;
        } else if (rec.kind == PGF_REC_CLOCK) {
            end = rec.u.clock.tsc;
            if (clocks++ == 0)
                CHECK(rec.u.clock.thread_cpu_ns != 0);
            if (rec.u.clock.thread_cpu_ns) {
                if (read++)
                    CHECK(rec.u.clock.tsc - prev_read >= hz / 1000);
                prev_read = rec.u.clock.tsc;
            }
        } else if (rec.kind == PGF_REC_THREAD_END) {
            end = rec.u.thread_end.end_tsc;
        }
    }
    CHECK(pgr_error(r) == NULL);
    CHECK_EQ(pgr_warning_count(r), 0);
    fprintf(stderr, "chunk_clocks: %llu intervals, %llu chunks checked, %llu CLOCK records, "
            "%llu with a CPU reading\n", (unsigned long long)intervals,
            (unsigned long long)checked, (unsigned long long)clocks, (unsigned long long)read);
    CHECK_EQ(intervals, n);
    CHECK_EQ(checked, nch);
    CHECK(nch >= 200);
    CHECK(read >= 10);    /* ~one a millisecond over >= 30 ms (their spacing: above) */
    CHECK(clocks > read); /* and not one per chunk */
    pgr_close(r);
    return 0;
}

/* ---- full ---------------------------------------------------------------------------------- */
static int test_full(void) {
    char path[300];
    path_in(path, sizeof path, "full.pgm");
    /* header + 3 chunks: DEFS, and two data chunks that writer A holds (current + next) */
    CHECK_EQ(perfgroup_record_open(path, PERFGROUP_RECORD_TRACE, 4096 + 3 * 4096, 4096), 0);
    define_some();
    struct perfgroup_rec_thread *a = perfgroup__rec_thread_start(1, 1, "a");
    struct perfgroup_rec_thread *b = perfgroup__rec_thread_start(2, 2, "b");
    struct perfgroup_rec_thread *c = perfgroup__rec_thread_start(3, 3, "c");
    const uint64_t n = 1000;
    for (uint64_t i = 0; i < n; i++) {
        perfgroup__rec_interval(a, 1, 1, 0, i, 1);
        perfgroup__rec_interval(b, 1, 1, 0, i, 1);
        perfgroup__rec_interval(c, 1, 1, 0, i, 1);
    }
    perfgroup__rec_thread_end(b, 1);
    perfgroup__rec_thread_end(c, 1);
    perfgroup__rec_thread_end(a, 1);
    CHECK_EQ(perfgroup_record_close(), 0);
    struct readback r;
    readback(path, &r);
    CHECK_EQ(r.error, 0);
    CHECK_EQ(r.kinds[PGF_REC_THREAD], 3);  /* definitions of all three survive */
    struct rb_thread *ta = rb_thread(&r, 1);
    CHECK_EQ(ta->gap, 0);
    CHECK_EQ(ta->last, n - 1);
    CHECK_EQ(ta->thread_end, 1);
    CHECK_EQ(r.nthreads, 1);               /* b and c never had a chunk */
    /* exact: a's recycled records + b's and c's 1000 intervals and THREAD_END each */
    CHECK_EQ(r.hdr.records_dropped, (ta->committed_total - ta->records) + 2 * (n + 1));
    return 0;
}

/* ---- signal ------------------------------------------------------------------------------ */
static struct perfgroup_rec_thread *sig_w;
static volatile uint64_t sig_count;

static void on_alarm(int sig) {
    (void)sig;
    uint64_t i = sig_count;
    perfgroup__rec_interval(sig_w, 2, 1, 0, i, 1); /* function 2: the handler's */
    sig_count = i + 1;
}

static int test_signal(void) {
    char path[300];
    path_in(path, sizeof path, "signal.pgm");
    /* 4 KiB chunks: the loop below switches chunks often, under the mutex */
    CHECK_EQ(perfgroup_record_open(path, PERFGROUP_RECORD_TRACE, 64u << 20, 4096), 0);
    define_some();
    sig_w = perfgroup__rec_thread_start(0, 1, "main");
    uint32_t ev = perfgroup__rec_string("ev");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    CHECK_EQ(sigaction(SIGALRM, &sa, NULL), 0);
    struct itimerval it = { { 0, 20 }, { 0, 20 } }; /* every 20 us */
    CHECK_EQ(setitimer(ITIMER_REAL, &it, NULL), 0);
    const uint64_t n = 200000;
    for (uint64_t i = 0; i < n; i++) {
        if (i & 1)
            write_event(sig_w, ev, i);
        else
            perfgroup__rec_marker(sig_w, ev, "text", i, i);
    }
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
    uint64_t handled = sig_count;
    perfgroup__rec_thread_end(sig_w, 1);
    CHECK_EQ(perfgroup_record_close(), 0);

    struct readback r;
    readback(path, &r);
    CHECK_EQ(r.error, 0);
    CHECK_EQ(r.warnings, 0);
    struct rb_thread *t = rb_thread(&r, 0);
    CHECK_EQ(t->events, n / 2);
    CHECK_EQ(t->markers, n / 2);
    fprintf(stderr, "signal: %llu handler records, %llu read back, %llu dropped\n",
            (unsigned long long)handled, (unsigned long long)t->intervals,
            (unsigned long long)r.hdr.records_dropped);
    CHECK(handled > 100);
    /* every handler record is whole and in order, or was counted as dropped */
    CHECK_EQ(t->intervals + r.hdr.records_dropped, handled);
    CHECK(t->last < handled);
    CHECK_EQ(t->committed_total, t->records);
    return 0;
}

/* msgpack-c's encoding of an EVENT record (what the runtime wrote before its own stores). */
struct enc_buf { uint8_t *p; };
static int enc_write(void *data, const char *buf, size_t len) {
    struct enc_buf *b = data;
    memcpy(b->p, buf, len);
    b->p += len;
    return 0;
}
static uint8_t *event_msgpack_c(uint8_t *p, uint32_t name, uint64_t begin, uint64_t end,
                                uint64_t cpu, unsigned flags,
                                const struct perfgroup_rec_group_share *g, unsigned n,
                                unsigned more) {
    struct enc_buf b = {p};
    msgpack_packer pk = {&b, enc_write};
    msgpack_pack_array(&pk, more ? 8 : 7);
    msgpack_pack_uint8(&pk, PGF_REC_EVENT);
    msgpack_pack_uint32(&pk, name);
    msgpack_pack_uint64(&pk, begin);
    msgpack_pack_uint64(&pk, end);
    msgpack_pack_uint64(&pk, cpu);
    msgpack_pack_uint32(&pk, flags);
    msgpack_pack_array(&pk, n);
    for (unsigned i = 0; i < n; i++) {
        msgpack_pack_array(&pk, 6);
        msgpack_pack_uint32(&pk, g[i].group_id);
        msgpack_pack_uint64(&pk, g[i].cycles);
        msgpack_pack_uint64(&pk, g[i].cpu_ns);
        msgpack_pack_uint64(&pk, g[i].activations);
        msgpack_pack_uint64(&pk, g[i].self_ns);
        msgpack_pack_uint32(&pk, g[i].parent);
    }
    if (more)
        msgpack_pack_uint32(&pk, more);
    return b.p;
}

/* The commit's EVENT writer (record.h, stores) gives msgpack-c's bytes: every width of every
 * field (each boundary of fixint/u8/u16/u32/u64 and of fixarray/array16), 0 to 17 groups,
 * with and without `more`; within its documented bound; nothing written past its end. */
static int test_encoding_event(void) {
    static const uint64_t vals[] = {0, 1, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 0xffffffffull,
                                    0x100000000ull, 0x0102030405060708ull, ~0ull};
    enum { NV = sizeof vals / sizeof *vals, MAXG = 17 };
    static uint8_t a[PG_REC_EVENT_FIXED + MAXG * PG_REC_EVENT_PER + 16];
    static uint8_t b[sizeof a];
    struct perfgroup_rec_group_share g[MAXG];
    static const unsigned counts[] = {0, 1, 3, 15, 16, 17};
    unsigned cases = 0;
    for (unsigned i = 0; i < NV; i++)
        for (unsigned c = 0; c < sizeof counts / sizeof *counts; c++) {
            unsigned n = counts[c];
            for (unsigned k = 0; k < n; k++) /* each field walks the values at its own pace */
                g[k] = (struct perfgroup_rec_group_share){
                    (uint32_t)vals[(i + k) % NV], vals[(i + 2 * k + 1) % NV],
                    vals[(i + 3 * k + 2) % NV], vals[(i + 5 * k + 3) % NV],
                    vals[(i + 7 * k + 4) % NV], (uint32_t)vals[(i + 11 * k + 5) % NV]};
            for (unsigned more = 0; more < 2; more++) {
                uint32_t more_n = more ? (uint32_t)vals[(i + 3) % NV] | 1u : 0;
                memset(a, 0xa5, sizeof a);
                memset(b, 0xa5, sizeof b);
                uint32_t name = (uint32_t)vals[(i + 1) % NV];
                unsigned flags = (unsigned)vals[(i + 4) % NV];
                uint8_t *ea = perfgroup__rec_event_put(a, name, vals[i], vals[(i + 2) % NV],
                                                       vals[(i + 5) % NV], flags, g, n, more_n);
                uint8_t *eb = event_msgpack_c(b, name, vals[i], vals[(i + 2) % NV],
                                              vals[(i + 5) % NV], flags, g, n, more_n);
                CHECK_EQ(ea - a, eb - b);
                CHECK(memcmp(a, b, sizeof a) == 0);
                CHECK((size_t)(ea - a) <= PG_REC_EVENT_FIXED + n * PG_REC_EVENT_PER);
                cases++;
            }
        }
    CHECK_EQ(cases, NV * 6 * 2);
    return 0;
}

/* The exit hook's interval writer (head from the function entry, then byte and bswapped
 * stores) gives the same 29 bytes as msgpack-c's packer, for extreme values too, writes
 * nothing past them, and publishes the same chunk header. */
static int test_encoding(void) {
    static const uint64_t vals[] = {0, 1, 0x7f, 0xff, 0x1234, 0xdeadbeefull, 0x0102030405060708ull,
                                    0x8000000000000000ull, ~0ull};
    for (unsigned i = 0; i < sizeof vals / sizeof *vals; i++)
        for (unsigned j = 0; j < sizeof vals / sizeof *vals; j++) {
            uint8_t a[48], b[48];
            struct pgf_chunk_header ca, cb;
            memset(a, 0xa5, sizeof a);
            memset(b, 0xa5, sizeof b);
            memset(&ca, 0, sizeof ca);
            memset(&cb, 0, sizeof cb);
            struct perfgroup_rec_thread wa = {a + 8, a + 40, a, &ca}, wb = {b + 8, b + 40, b, &cb};
            uint32_t fid = (uint32_t)(vals[i] ^ (vals[j] >> 7));
            uint8_t mask = (uint8_t)vals[i], depth = (uint8_t)(vals[j] >> 3);
            CHECK(perfgroup__rec_interval_room(&wa));
            perfgroup__rec_interval_put_head(&wa, perfgroup__rec_interval_head(fid), mask, depth,
                                             vals[i], vals[j]);
            perfgroup__rec_interval_put(&wb, fid, mask, depth, vals[i], vals[j]);
            CHECK(memcmp(a, b, sizeof a) == 0);
            CHECK(wa.pos == a + 8 + PGF_INTERVAL_SIZE && wb.pos == b + 8 + PGF_INTERVAL_SIZE);
            CHECK(memcmp(&ca, &cb, sizeof ca) == 0);
            CHECK_EQ(ca.committed, 8 + PGF_INTERVAL_SIZE);
            CHECK_EQ(ca.record_count, 1);
            CHECK_EQ(ca.last_tsc, 0); /* an interval leaves it to the chunk's sealing */
        }
    return test_encoding_event();
}

/* ---- heaviest ---------------------------------------------------------------------------- */
static int test_heaviest(void) {
    char path[300];
    path_in(path, sizeof path, "heaviest.pgm");
    CHECK_EQ(perfgroup_record_open(path, PERFGROUP_RECORD_STATS, 1 << 20, 4096), 0);
    uint32_t ev = perfgroup__rec_string("ev");
    struct perfgroup_rec_thread *w = perfgroup__rec_thread_start(0, (uint32_t)getpid(), "main");
    CHECK(w != NULL);
    /* 5 groups (insertion): light first, a CPU tie broken by ticks, a full tie by id */
    struct perfgroup_rec_group_share few[5] = {
        {1, 10, 100, 1, 100, 0}, {2, 10, 300, 1, 150, 2}, {3, 5, 200, 1, 7, 3},
        {4, 9, 200, 1, 200, 0}, {5, 9, 200, 1, 0, 5}}; /* self_ns, parent: group id + 1 */
    static const uint32_t few_order[5] = {2, 4, 5, 3, 1};
    struct perfgroup_rec_group_share few_want[5]; /* the record sorts `few` in place */
    memcpy(few_want, few, sizeof few);
    perfgroup__rec_event(w, ev, 1000, 2000, 900, 0, few, 5);
    /* 300 groups (heap sort), 7 at a time the same CPU: ids in no order of their weight;
     * in 4 KiB chunks only the heaviest fit */
    enum { MANY = 300 };
    static struct perfgroup_rec_group_share many[MANY];
    for (uint32_t i = 0; i < MANY; i++)
        many[i] = (struct perfgroup_rec_group_share){1 + (i * 7919u) % 1000u, i % 3,
                                                      (i * 37u) % 101u / 7u * 1000u, 1, 0, 0};
    static struct perfgroup_rec_group_share want[MANY];
    memcpy(want, many, sizeof many);
    perfgroup__rec_event(w, ev, 3000, 4000, 900, 0, many, MANY);
    perfgroup__rec_thread_end(w, 5000);
    CHECK_EQ(perfgroup_record_close(), 0);
    pgr_reader *r = pgr_open(path);
    CHECK(r && !pgr_error(r));
    struct pgr_record rec;
    int events = 0;
    while (pgr_next(r, &rec) > 0) {
        if (rec.kind != PGF_REC_EVENT)
            continue;
        const struct pgr_event_group *g = rec.u.event.groups;
        uint32_t n = rec.u.event.ngroups;
        if (events++ == 0) {
            CHECK_EQ(n, 5);
            CHECK_EQ(rec.u.event.groups_more, 0);
            for (uint32_t i = 0; i < n; i++) {
                CHECK_EQ(g[i].group_id, few_order[i]);
                /* self time and parent (format.h) round-trip with their group */
                const struct perfgroup_rec_group_share *x = &few_want[few_order[i] - 1];
                CHECK(g[i].has_self);
                CHECK_EQ(g[i].self_ns, x->self_ns);
                CHECK_EQ(g[i].parent, x->parent);
            }
            continue;
        }
        /* the heaviest n of the 300, in order; the rest counted */
        CHECK(n > 10 && n < MANY);
        CHECK_EQ(n + rec.u.event.groups_more, MANY);
        uint64_t kept_min = ~0ull;
        for (uint32_t i = 0; i < n; i++) {
            if (i) {
                const struct pgr_event_group *a = &g[i - 1], *b = &g[i];
                CHECK(a->cpu_ns > b->cpu_ns ||
                      (a->cpu_ns == b->cpu_ns && (a->cycles > b->cycles ||
                                                  (a->cycles == b->cycles && a->group_id < b->group_id))));
            }
            if (g[i].cpu_ns < kept_min)
                kept_min = g[i].cpu_ns;
        }
        uint32_t heavier = 0; /* groups strictly heavier than the lightest kept: all kept */
        for (uint32_t i = 0; i < MANY; i++)
            heavier += want[i].cpu_ns > kept_min;
        CHECK(heavier <= n);
        for (uint32_t i = 0; i < MANY; i++) {
            if (want[i].cpu_ns <= kept_min)
                continue;
            int found = 0;
            for (uint32_t j = 0; j < n && !found; j++)
                found = g[j].group_id == want[i].group_id && g[j].cpu_ns == want[i].cpu_ns;
            CHECK(found);
        }
    }
    CHECK_EQ(events, 2);
    CHECK(!pgr_error(r));
    pgr_close(r);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s TEST\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[1], "exec-parent") == 0)
        return exec_parent(argv[0]);
    if (strcmp(argv[1], "exec-child") == 0)
        return exec_child();
    if (strcmp(argv[1], "perm-child") == 0)
        return perm_child();
    if (strcmp(argv[1], "notmp-child") == 0)
        return notmp_child();
    make_dir();
    int rc;
    const char *t = argv[1];
    if (!strcmp(t, "counts")) rc = test_counts();
    else if (!strcmp(t, "recycle")) rc = test_recycle();
    else if (!strcmp(t, "stalled")) rc = test_stalled();
    else if (!strcmp(t, "threads")) rc = test_threads();
    else if (!strcmp(t, "kill")) rc = test_kill(argc > 2 ? atoi(argv[2]) : 50);
    else if (!strcmp(t, "fork")) rc = test_fork();
    else if (!strcmp(t, "exec")) rc = test_exec(argv[0]);
    else if (!strcmp(t, "vfork")) rc = test_vfork();
    else if (!strcmp(t, "fork_lazy")) rc = test_fork_lazy();
    else if (!strcmp(t, "symlink")) rc = test_symlink();
    else if (!strcmp(t, "churn")) rc = test_churn(argc > 2 ? argv[2] : NULL);
    else if (!strcmp(t, "notmp")) rc = test_notmp(argv[0]);
    else if (!strcmp(t, "perm")) rc = test_perm(argv[0]);
    else if (!strcmp(t, "api")) rc = test_api();
    else if (!strcmp(t, "signal")) rc = test_signal();
    else if (!strcmp(t, "full")) rc = test_full();
    else if (!strcmp(t, "chunk_clocks")) rc = test_chunk_clocks();
    else if (!strcmp(t, "clock")) rc = test_clock();
    else if (!strcmp(t, "badenv")) rc = test_badenv(argv[0]);
    else if (!strcmp(t, "encoding")) rc = test_encoding();
    else if (!strcmp(t, "heaviest")) rc = test_heaviest();
    else {
        fprintf(stderr, "unknown test %s\n", t);
        rc = 2;
    }
    if (rc == 0)
        rm_dir();
    return rc;
}
