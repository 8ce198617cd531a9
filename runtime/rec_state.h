/* SPDX-License-Identifier: MIT */
/*
 * runtime/rec_state.h — the recorder's private part, shared by its files (not installed):
 * the writers (one per thread), the recorder's state (`recorder`, one per process, under
 * recorder.mu), the msgpack sinks, and the calls between
 *
 *   rec_buffer.c    the chunk buffer: chunks, the writer's slow path, cold records' frame
 *   rec_defs.c      definitions (the log replayed into every file), strings, writers' memory
 *   rec_totals.c    the whole-run totals slots
 *   rec_file.c      the file: naming, open, close, fork, environment, exec, the public API
 *   rec_records.c   thread records, cold records, the open events' slots, markers
 *   rec_exec.c      the exec family wrapped
 *
 * The recorder is the runtime's leaf: it calls the base (base.h, clock.h) and nothing else
 * of the runtime; what it needs of the runtime around it, the runtime gives it at start-up
 * (perfgroup__rec_host, record.h).
 */
#ifndef PERFGROUP_RUNTIME_REC_STATE_H
#define PERFGROUP_RUNTIME_REC_STATE_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <msgpack.h>

#include "perfgroup.h"
#include "perfgroup/crc32c.h"
#include "record.h"
#include "clock.h"

#define DEFAULT_BUFFER (256ull << 20)
#define DEFAULT_CHUNK  (64u << 10)
#define MIN_CHUNK      4096u
#define MAX_CHUNK      (16u << 20)
#define MAX_TEXT       1024u   /* marker text and names are clipped to this */
#define CPU_READ_EVERY 1000u   /* a CLOCK record reads the thread's CPU clock <= 1/ms */
#define DEFAULT_TOTALS 16384u /* whole-run totals slots (PERFGROUP_TOTALS) */
#define MAX_TOTALS (1u << 22)
#define RUNTIME_VERSION "perfgroup 0.1.0"
#define CLOCK_MAX      (1 + 1 + 4 * 9) /* bytes of a PGF_REC_CLOCK record at most */
#define THREAD_DEF_MAX (16 + 64)     /* bytes of a PGF_REC_THREAD record at most */


/* A thread's writer: the hot part the inline writer sees, then the cold part. */
struct writer {
    struct perfgroup_rec_thread hot;  /* first: the core holds &hot */
    struct writer *prev, *next;       /* live writers (recorder.mu) */
    uint64_t gen;                     /* recording attached to, 0 = none */
    struct pgf_file_header *hdr;      /* that recording's header (its mapping is never
                                       * unmapped while a writer may hold it) */
    uint32_t index, tid;
    int is_defs, lazy, dead;
    int32_t cur, reserved;            /* chunk indexes, -1 = none */
    int32_t last_full;                /* its newest FULL chunk, -1 = none */
    uint32_t open_committed;          /* current chunk's bytes after its opening records */
    uint32_t cold_committed;          /* current chunk's bytes up to its newest record that is
                                       * not an interval (emit, publish): what follows is
                                       * intervals only, which leave last_tsc alone */
    uint8_t *chunk_end;               /* end of the current chunk */
    uint8_t *faulted_end;             /* its pages touched up to here: the fast path's `end`
                                       * (a thread's first chunk is faulted in as it fills,
                                       * in the slow path: fault_through) */
    uint64_t last_clock;              /* clock of its last PGF_REC_CLOCK */
    uint64_t last_cpu_read;           /* clock of its last CLOCK_THREAD_CPUTIME_ID read */
    uint64_t records_before;          /* records committed in earlier chunks */
    uint64_t dropped_total;           /* records that found no chunk */
    uint64_t lost_records, lost_bytes, lost_chunks; /* for the next DROPPED (recorder.mu) */
    uint64_t last_name_check;         /* clock of its last PR_GET_NAME (owner thread) */
    int name_explicit;                /* named by the core or perfgroup_thread_name */
    int no_def, starved;              /* no room for its THREAD definition / for a chunk */
    uint32_t want;                    /* chunks it asks of this file at once: 0 none yet, 1
                                       * its first (current only), 2 once it filled one or
                                       * found none (current + reserved next); recorder.want */
    char name[64];
    /* whole-run totals (format.h, struct pgf_totals_slot): tmap[gid] is the index + 1 of
     * its slot for group gid in the file of generation tot_gen (0: none yet); kept across
     * the writer's reuse (writer_alloc), cleared for a new file */
    uint64_t tot_gen;
    uint32_t chunk_bytes;             /* chunk size of the file attached to (own thread) */
    struct pgf_totals_slot *tot_base;
    uint32_t *tmap, tmap_cap;
};

struct heap_ent { uint64_t seq; uint32_t idx; };


struct pg_recorder {
    const struct perfgroup_rec_host *host; /* the runtime around it (record.h); NULL: alone */
    pthread_mutex_t mu;
    int env_read, atfork_done;
    uint64_t gen;                     /* current recording's generation */
    /* settings, kept for fork */
    char tmpl[PATH_MAX];
    unsigned mode;
    uint64_t buffer;
    uint32_t chunk;
    /* the open recording (hdr != NULL) */
    int fd;
    uint8_t *map;
    size_t map_size;
    struct pgf_file_header *hdr;
    uint32_t chunk_size, chunk_count;
    uint32_t *free_stack, nfree;      /* popped from the end: lowest index first */
    struct heap_ent *heap;            /* FULL DATA chunks, min seq at [0] */
    uint32_t nheap;
    struct writer **owner;            /* per chunk: its writer, NULL if gone */
    /* thread definitions: DEFS chunks of their own, at most a quarter of the buffer; one
     * whose threads all ended and have no data chunk left is taken again (take_tdefs) */
    struct tdef_range { uint32_t min, max; uint8_t used; } *tdr; /* per chunk */
    uint32_t ntdefs;
    uint64_t threads_undefined, threads_starved, warned_threads;
    uint32_t nlive, peak_live;        /* threads with a writer now, and at most at once */
    uint32_t want_now, want_peak;     /* this file's data chunks asked for by the live
                                       * writers (writer.want), now and at most at once:
                                       * the close-time warning's buffer */
    /* the DEFS chunks this file's definitions take, counted as if each fitted (the ones
     * that did not are counted too): what the close-time warning's buffer size must hold */
    uint32_t defs_need, defs_fill;
    struct writer tdefs;
    struct writer defs;
    struct writer *live;
    /* definitions log (msgpack records, replayed into every new file) */
    uint8_t *log;
    size_t log_len, log_cap;
    /* interned strings */
    struct str_ent { char *text; uint32_t id, hash; } *strs;
    uint32_t str_cap, str_count;
    int reported;
    int child_pending;                /* a fork child's file, made at its first record */
    struct pgf_open_slot *slots;      /* the open events' chunk (PGF_CHUNK_OPEN), or NULL */
    uint32_t nslots;
    /* whole-run totals (format.h): the region after the chunks, its free slots (folded
     * ones), the ended threads' row of each group (index + 1 by group id, 0: none yet) */
    uint32_t tot_slots;               /* setting (PERFGROUP_TOTALS), kept for fork */
    struct pgf_totals_slot *tot;
    uint32_t tot_count, tot_used, tot_nfree;
    uint32_t *tot_free;
    uint64_t tot_alloc_end;           /* file offset up to which its blocks are allocated */
    uint32_t *ended_row, ended_cap;
};
extern PG_HIDDEN struct pg_recorder perfgroup__recorder;
#define recorder perfgroup__recorder

/* The calling thread's writer, if it has one (rec_records.c). Initial-exec, as the core's
 * thread-locals (internal.h): no __tls_get_addr call per record. */
#define PG_REC_TLS __thread __attribute__((tls_model("initial-exec")))
extern PG_HIDDEN PG_REC_TLS struct writer *perfgroup__rec_tls_writer;
/* A signal handler's nested call into the recorder (rec_buffer.c, perfgroup__rec_lock). */
extern PG_HIDDEN PG_REC_TLS int perfgroup__rec_in_rec;
extern PG_HIDDEN PG_REC_TLS uint64_t perfgroup__rec_nested_drops;

/* ---- clocks: the core's (clock.h), so TSC values in records and chunks agree -------- */

static inline int64_t ns_of(clockid_t id) { return pg_clock_gettime_ns(id); }
static inline uint64_t now_tsc(void) { return pg_clock_now(); }

/* Ticks per second: the core's calibrated estimate (CPUID, refined at commits). */
static inline uint64_t estimate_hz(void) { return pg_clock_hz(); }

/* A cold record written up to newpos: the chunk's count, last counter value and committed
 * length (release: a reader of the live file sees the record whole). Inline: once or twice
 * a recorded event. */
static inline void perfgroup__rec_publish(struct writer *w, uint8_t *newpos, uint64_t tsc) {
    w->hot.pos = newpos;
    w->hot.chunk->record_count++;
    w->hot.chunk->last_tsc = tsc;
    w->cold_committed = (uint32_t)(newpos - w->hot.data);
    __atomic_store_n(&w->hot.chunk->committed, w->cold_committed, __ATOMIC_RELEASE);
}

/* Time to look at the thread's name again: its own writer, named by nobody else, and a
 * millisecond since the last look (inline: every event's record asks). */
static inline int perfgroup__rec_name_due(struct writer *w, uint64_t now) {
    uint64_t hz = estimate_hz();
    return !w->name_explicit && w == perfgroup__rec_tls_writer &&
           !(hz && w->last_name_check && now >= w->last_name_check &&
             now - w->last_name_check < hz / 1000);
}

/* ---- msgpack into memory --------------------------------------------------------------- */

/* Packer target: a bounded byte range. The packer callback is a static function whose
 * address the compiler sees at every msgpack_pack_* call, so it inlines through it. */
struct span { uint8_t *p, *end; };

static inline int span_write(void *data, const char *buf, size_t len) {
    struct span *s = data;
    if ((size_t)(s->end - s->p) < len)
        return -1; /* cannot happen: sizes are bounded before packing */
    memcpy(s->p, buf, len);
    s->p += len;
    return 0;
}

/* Growable buffer target for definitions (cold). Mapped (perfgroup__map), never malloc'd: a
 * definition can be written from a hook in a signal handler that interrupted malloc. */
struct grow { uint8_t **buf; size_t *len, *cap; int oom; };

static inline size_t clip(const char *s, size_t max) {
    if (!s)
        return 0;
    size_t n = strnlen(s, max);
    return n;
}

static inline void pack_str(msgpack_packer *pk, const char *s, size_t max) {
    size_t n = clip(s, max);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s ? s : "", n);
}

PG_HIDDEN void perfgroup__rec_attach(struct writer *w);
PG_HIDDEN void perfgroup__rec_child_open_locked(void);
PG_HIDDEN struct pgf_chunk_header *perfgroup__rec_chunk_at(uint32_t idx);
PG_HIDDEN void perfgroup__rec_emit(struct writer *w, const uint8_t *rec, uint32_t len, uint64_t tsc);
PG_HIDDEN void perfgroup__rec_finish_chunk(struct writer *w);
PG_HIDDEN void perfgroup__rec_header_counts(struct pgf_file_header *h);
PG_HIDDEN void perfgroup__rec_kernel_name(char out[16]);
PG_HIDDEN int perfgroup__rec_lock(void);
PG_HIDDEN void perfgroup__rec_unlock(void);
PG_HIDDEN void perfgroup__rec_open_slots_locked(void);
PG_HIDDEN uint64_t perfgroup__rec_pack_clock(struct writer *w, msgpack_packer *pk);
PG_HIDDEN void perfgroup__rec_process_def(void);
PG_HIDDEN void perfgroup__rec_replay_log(void);
PG_HIDDEN int perfgroup__rec_reserve_locked(struct writer *w, uint32_t need);
PG_HIDDEN void perfgroup__rec_settle_last_tsc(struct writer *w);
PG_HIDDEN int32_t perfgroup__rec_take_chunk(struct writer *w, int whole);
PG_HIDDEN void perfgroup__rec_thread_def(struct writer *w);
PG_HIDDEN void perfgroup__rec_totals_end_locked(struct writer *w);
PG_HIDDEN struct writer *perfgroup__rec_writer_alloc(void);
PG_HIDDEN void perfgroup__rec_writer_free(struct writer *w);

#endif /* PERFGROUP_RUNTIME_REC_STATE_H */
