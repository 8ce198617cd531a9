/* SPDX-License-Identifier: MIT */
/*
 * runtime/record.c — the recorder: msgpack records into a file-backed, size-limited chunk
 * buffer (layout and chunk life in include/perfgroup/format.h, docs/file-format.md).
 *
 * The file is the buffer. It is created at its full size and mapped MAP_SHARED once; every
 * committed record is in the page cache when its chunk's `committed` is stored, so it
 * survives SIGKILL. Each thread writes into its own current chunk without lock or syscall
 * (the inline perfgroup__rec_interval in record.h, and the cold record writers here when
 * they fit). Everything else runs under one mutex, off the hot path:
 *
 *   perfgroup__rec_reserve   chunk switch: the full chunk becomes FULL (recyclable), the
 *                            thread's reserved next chunk becomes current (CLOCK record
 *                            first, then a DROPPED record if it lost any), and the chunk
 *                            after it is reserved and its pages pre-faulted now, so the
 *                            hot path never takes a first-touch page fault
 *   take_chunk               a free chunk, else the oldest FULL DATA chunk (min-heap by
 *                            seq): its records are counted as dropped, for the header
 *                            and for its owner's next DROPPED record
 *   definitions              appended to an in-memory log (so a later recording or a
 *                            fork()ed child replays them) and to DEFS chunks, never recycled
 *
 * Recordings have a generation: closing or reopening bumps it and lowers every writer's
 * `end`, so each thread's next write lands in the slow path and re-attaches. A closed
 * recording's mapping is never unmapped (another thread may be in the middle of a record;
 * the address space of one recording per open/close cycle is the price).
 *
 * Not instrumented itself: the runtime is built without the plugins.
 */
#define _GNU_SOURCE
#include "record.h"
#include "clock.h"


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

#define DEFAULT_BUFFER (256ull << 20)
#define DEFAULT_CHUNK  (64u << 10)
#define MIN_CHUNK      4096u
#define MAX_CHUNK      (16u << 20)
#define MAX_TEXT       1024u   /* marker text and names are clipped to this */
#define CPU_READ_EVERY 1000u   /* a CLOCK record reads the thread's CPU clock <= 1/ms */
#define DEFAULT_TOTALS 16384u /* whole-run totals slots (PERFGROUP_TOTALS) */
#define MAX_TOTALS (1u << 22)
#define RUNTIME_VERSION "perfgroup 0.1.0"

int perfgroup__rec_mode;

/* A thread's writer: the hot part the inline writer sees, then the cold part. */
struct writer {
    struct perfgroup_rec_thread hot;  /* first: the core holds &hot */
    struct writer *prev, *next;       /* live writers (g.mu) */
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
    uint64_t last_clock;              /* clock of its last PGF_REC_CLOCK */
    uint64_t last_cpu_read;           /* clock of its last CLOCK_THREAD_CPUTIME_ID read */
    uint64_t records_before;          /* records committed in earlier chunks */
    uint64_t dropped_total;           /* records that found no chunk */
    uint64_t lost_records, lost_bytes, lost_chunks; /* for the next DROPPED (g.mu) */
    uint64_t last_name_check;         /* clock of its last PR_GET_NAME (owner thread) */
    int name_explicit;                /* named by the core or perfgroup_thread_name */
    int no_def, starved;              /* no room for its THREAD definition / for a chunk */
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

static struct {
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
} g = { .mu = PTHREAD_MUTEX_INITIALIZER, .fd = -1 };

static __thread struct writer *tls_writer;
static pthread_key_t lazy_key;
static pthread_once_t lazy_once = PTHREAD_ONCE_INIT;
static uint32_t lazy_next;

/* ---- clocks: the core's (clock.h), so TSC values in records and chunks agree -------- */

static int64_t ns_of(clockid_t id) { return pg_clock_gettime_ns(id); }
static uint64_t now_tsc(void) { return pg_clock_now(); }

/* Ticks per second: the core's calibrated estimate (CPUID, refined at commits). */
static uint64_t estimate_hz(void) { return perfgroup__clock_hz(); }

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

static int grow_write(void *data, const char *buf, size_t len) {
    struct grow *gr = data;
    if (*gr->len + len > *gr->cap) {
        size_t nc = *gr->cap ? *gr->cap * 2 : 4096;
        while (nc < *gr->len + len)
            nc *= 2;
        uint8_t *nb = perfgroup__map(nc);
        if (!nb) {
            gr->oom = 1;
            return -1;
        }
        if (*gr->buf) {
            memcpy(nb, *gr->buf, *gr->len);
            munmap(*gr->buf, *gr->cap);
        }
        *gr->buf = nb;
        *gr->cap = nc;
    }
    memcpy(*gr->buf + *gr->len, buf, len);
    *gr->len += len;
    return 0;
}

static size_t clip(const char *s, size_t max) {
    if (!s)
        return 0;
    size_t n = strnlen(s, max);
    return n;
}

static void pack_str(msgpack_packer *pk, const char *s, size_t max) {
    size_t n = clip(s, max);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s ? s : "", n);
}

/* ---- chunks ---------------------------------------------------------------------------- */

static struct pgf_chunk_header *chunk_at(uint32_t idx) {
    return (struct pgf_chunk_header *)(g.map + g.hdr->chunks_offset + (size_t)idx * g.chunk_size);
}

static void heap_push(uint64_t seq, uint32_t idx) {
    uint32_t i = g.nheap++;
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (g.heap[parent].seq <= seq)
            break;
        g.heap[i] = g.heap[parent];
        i = parent;
    }
    g.heap[i] = (struct heap_ent){ seq, idx };
}

static uint32_t heap_pop(void) {
    uint32_t top = g.heap[0].idx;
    struct heap_ent last = g.heap[--g.nheap];
    uint32_t i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= g.nheap)
            break;
        if (c + 1 < g.nheap && g.heap[c + 1].seq < g.heap[c].seq)
            c++;
        if (last.seq <= g.heap[c].seq)
            break;
        g.heap[i] = g.heap[c];
        i = c;
    }
    if (g.nheap)
        g.heap[i] = last;
    return top;
}

/* Take a chunk for w: a free one, else recycle the oldest FULL DATA chunk. The chunk is
 * invalidated (magic 0: readers skip it) and its pages are touched now, so the writer
 * never faults on them. -1 when every chunk is owned (WRITING or reserved) or DEFS. */
static int32_t take_chunk(struct writer *w) {
    uint32_t idx;
    struct pgf_chunk_header *c;
    if (g.nfree) {
        idx = g.free_stack[g.nfree - 1];
        /* the file grows a chunk at a time: its blocks are allocated when it is first taken
         * (a full disk here is a dropped record, not a SIGBUS in the host later) */
        int rc = posix_fallocate(g.fd, (off_t)(g.hdr->chunks_offset + (uint64_t)idx * g.chunk_size),
                                 (off_t)g.chunk_size);
        if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL)
            return -1; /* the caller counts the record it could not write */
        g.nfree--;
        c = chunk_at(idx);
    } else if (g.nheap) {
        /* The oldest FULL chunk, unless it still holds its owner's newest records (the
         * owner, descheduled for long, has not written into its next chunk yet): a
         * thread's newest whole records survive recycling whatever its pace. */
        idx = heap_pop();
        struct writer *ow = g.owner[idx];
        if (g.nheap && ow && ow->gen == g.gen && ow->last_full == (int32_t)idx &&
            (ow->cur < 0 || __atomic_load_n(&chunk_at((uint32_t)ow->cur)->committed,
                                            __ATOMIC_ACQUIRE) == ow->open_committed)) {
            uint32_t keep = idx;
            uint64_t keep_seq = chunk_at(keep)->seq;
            idx = heap_pop();
            heap_push(keep_seq, keep);
        }
        c = chunk_at(idx);
        __atomic_store_n(&c->magic, 0, __ATOMIC_RELEASE);
        struct writer *o = g.owner[idx];
        if (o && o->gen == g.gen) {
            o->lost_records += c->record_count;
            o->lost_bytes += c->committed;
            o->lost_chunks++;
        }
        __atomic_fetch_add(&g.hdr->chunks_recycled, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&g.hdr->records_dropped, c->record_count, __ATOMIC_RELAXED);
    } else {
        return -1;
    }
    c->kind = PGF_CHUNK_FREE;
    c->state = 0;
    g.owner[idx] = w;
    /* pre-fault: one store per page past the header (the chunk is ours and invisible).
     * MADV_POPULATE_WRITE measured no faster here (docs/benchmarks.md). */
    volatile uint8_t *p = (volatile uint8_t *)c;
    for (uint32_t off = 4096; off < g.chunk_size; off += 4096)
        p[off] = 0;
    return (int32_t)idx;
}

/* A chunk for the thread definitions (g.tdefs): a new one while they hold less than a
 * quarter of the buffer, else the oldest whose threads have all ended and kept no data
 * chunk (their definitions describe nothing in the file any more). -1: none. */
static int tdefs_needed(const struct tdef_range *r) {
    for (struct writer *w = g.live; w; w = w->next)
        if (!w->dead && w->index >= r->min && w->index <= r->max)
            return 1;
    for (uint32_t j = 0; j < g.chunk_count; j++) {
        const struct pgf_chunk_header *c = chunk_at(j);
        if (c->magic == PGF_CHUNK_MAGIC && c->kind == PGF_CHUNK_DATA && c->thread >= r->min &&
            c->thread <= r->max)
            return 1;
    }
    return 0;
}

static int32_t take_tdefs(struct writer *w) {
    uint32_t cap = g.chunk_count / 4 ? g.chunk_count / 4 : 1;
    if (g.ntdefs < cap) {
        int32_t idx = take_chunk(w);
        if (idx >= 0) {
            g.ntdefs++;
            g.tdr[idx] = (struct tdef_range){ 0, 0, 0 };
        }
        return idx;
    }
    int32_t best = -1;
    for (uint32_t j = 0; j < g.chunk_count; j++) {
        struct pgf_chunk_header *c = chunk_at(j);
        if (g.owner[j] != w || !g.tdr[j].used || c->state != PGF_CSTATE_FULL ||
            (best >= 0 && chunk_at((uint32_t)best)->seq < c->seq) || tdefs_needed(&g.tdr[j]))
            continue;
        best = (int32_t)j;
    }
    if (best >= 0) {
        __atomic_store_n(&chunk_at((uint32_t)best)->magic, 0, __ATOMIC_RELEASE);
        g.tdr[best] = (struct tdef_range){ 0, 0, 0 };
    }
    return best;
}

static void start_chunk(struct writer *w, int32_t idx) {
    struct pgf_chunk_header *c = chunk_at((uint32_t)idx);
    uint64_t t = now_tsc();
    c->kind = w->is_defs ? PGF_CHUNK_DEFS : PGF_CHUNK_DATA;
    c->state = PGF_CSTATE_WRITING;
    c->seq = __atomic_fetch_add(&g.hdr->next_seq, 1, __ATOMIC_RELAXED);
    c->thread = w->is_defs ? PGF_THREAD_DEFS : w->index;
    c->crc32c = 0; /* set when sealed (finish_chunk) */
    c->record_count = 0;
    c->first_tsc = t;
    c->last_tsc = t;
    w->cold_committed = 0;
    c->dropped_before = w->dropped_total;
    c->records_before = w->records_before;
    __atomic_store_n(&c->committed, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&c->magic, PGF_CHUNK_MAGIC, __ATOMIC_RELEASE);
    w->cur = idx;
    w->hot.chunk = c;
    w->hot.data = w->hot.pos = (uint8_t *)c + PGF_CHUNK_HEADER_SIZE;
    w->chunk_end = (uint8_t *)c + g.chunk_size;
    /* `end` stays NULL until the slow path is done (perfgroup__rec_reserve, cold_end): a
     * signal handler's record meanwhile goes to the slow path, is refused and counted */
}

/* last_tsc of a chunk whose newest records are intervals (which do not store it): the end
 * of the last one, read back from its fixed bytes (format.h) if they are what they should
 * be (a signal handler's record nested into the hook's could have garbled them). */
static void settle_last_tsc(struct writer *w) {
    struct pgf_chunk_header *c = w->hot.chunk;
    uint32_t n = c->committed;
    if (n < w->cold_committed + PGF_INTERVAL_SIZE)
        return;
    const uint8_t *r = w->hot.data + n - PGF_INTERVAL_SIZE;
    if (r[0] != 0x96 || r[1] != PGF_REC_INTERVAL || r[11] != 0xcf || r[20] != 0xcf)
        return;
    uint64_t start, dur;
    memcpy(&start, r + 12, 8);
    memcpy(&dur, r + 21, 8);
    c->last_tsc = __builtin_bswap64(start) + __builtin_bswap64(dur);
}

/* The current chunk is done: FULL, and recyclable if it holds data. */
static void finish_chunk(struct writer *w) {
    if (w->cur < 0)
        return;
    struct pgf_chunk_header *c = w->hot.chunk;
    /* no record may join the chunk (a signal handler's) once its checksum is taken */
    __atomic_store_n(&w->hot.end, NULL, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    settle_last_tsc(w);
    w->records_before += c->record_count;
    /* sealing: the CRC-32C over the header as sealed and the records (format.h, v2), stored
     * before the state FULL that makes it binding; off the hot path, once per chunk */
    c->crc32c = pgf_chunk_crc(c, (const uint8_t *)c + PGF_CHUNK_HEADER_SIZE);
    __atomic_store_n(&c->state, PGF_CSTATE_FULL, __ATOMIC_RELEASE);
    if (!w->is_defs) {
        heap_push(c->seq, (uint32_t)w->cur);
        w->last_full = w->cur;
    }
    w->cur = -1;
    w->hot.chunk = NULL;
    w->hot.pos = w->hot.data = NULL;
}

/* Append one record of len bytes (already encoded) to w's current chunk; room is checked
 * by the caller. */
static void emit(struct writer *w, const uint8_t *rec, uint32_t len, uint64_t tsc) {
    memcpy(w->hot.pos, rec, len);
    w->hot.pos += len;
    w->hot.chunk->record_count++;
    w->hot.chunk->last_tsc = tsc;
    w->cold_committed = (uint32_t)(w->hot.pos - w->hot.data);
    __atomic_store_n(&w->hot.chunk->committed, w->cold_committed, __ATOMIC_RELEASE);
}

static void publish(struct writer *w, uint8_t *newpos, uint64_t tsc) {
    w->hot.pos = newpos;
    w->hot.chunk->record_count++;
    w->hot.chunk->last_tsc = tsc;
    w->cold_committed = (uint32_t)(newpos - w->hot.data);
    __atomic_store_n(&w->hot.chunk->committed, w->cold_committed, __ATOMIC_RELEASE);
}

static void thread_def(struct writer *w);

/*
 * A signal handler may run instrumented code on a thread that is inside the recorder (in a
 * chunk switch holding the mutex, or writing a cold record). Such a nested call must not
 * wait for the mutex its own thread holds, nor put bytes in the middle of a record being
 * written: lock() refuses it, and the record is dropped and counted (nested_drops, folded
 * into the thread's drop counts at its next chunk switch).
 */
static __thread int in_rec;
static __thread uint64_t nested_drops;

/* The process's refused calls and clamped events into the header: an atomic maximum (the
 * counters only grow; two threads storing at once must not move it back). */
static void store_max(uint64_t *field, uint64_t v)
{
    uint64_t was = __atomic_load_n(field, __ATOMIC_RELAXED);
    while (was < v && !__atomic_compare_exchange_n(field, &was, v, 1, __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED))
        ;
}
/* The runtime around the recorder (record.h); NULL: the recorder alone. Set once, at the
 * host's start-up, before any recording. */
static const struct perfgroup_rec_host *host;

void perfgroup__rec_host(const struct perfgroup_rec_host *h) { host = h; }

static void header_counts(struct pgf_file_header *h)
{
    if (!host)
        return;
    store_max(&h->refused, atomic_load_explicit(host->refused, memory_order_relaxed));
    store_max(&h->clamped, atomic_load_explicit(host->clamped, memory_order_relaxed));
}

static int lock(void) {
    if (in_rec)
        return -1;
    in_rec = 1;
    pthread_mutex_lock(&g.mu);
    return 0;
}

static void unlock(void) {
    pthread_mutex_unlock(&g.mu);
    in_rec = 0;
}

/* Forget any chunk of an older recording. */
static void attach(struct writer *w) {
    w->gen = g.gen;
    w->chunk_bytes = g.chunk_size;
    w->hdr = g.hdr;
    w->cur = w->reserved = w->last_full = -1;
    w->records_before = w->dropped_total = 0;
    w->lost_records = w->lost_bytes = w->lost_chunks = 0;
    w->last_cpu_read = 0; /* a file's first CLOCK of the thread reads its CPU clock */
    w->hot.chunk = NULL;
    w->hot.pos = w->hot.data = NULL;
    __atomic_store_n(&w->hot.end, NULL, __ATOMIC_RELAXED);
    if (!w->is_defs)
        thread_def(w);
}

static void count_drop(struct writer *w) {
    w->dropped_total++;
    w->lost_records++;
    __atomic_fetch_add(&g.hdr->records_dropped, 1, __ATOMIC_RELAXED);
}

/* A PGF_REC_CLOCK record (at most CLOCK_MAX bytes) of the calling thread, now. */
#define CLOCK_MAX (1 + 1 + 4 * 9)
static uint64_t pack_clock(struct writer *w, msgpack_packer *pk) {
    uint64_t t = now_tsc();
    msgpack_pack_array(pk, 5);
    msgpack_pack_uint8(pk, PGF_REC_CLOCK);
    msgpack_pack_uint64(pk, t);
    msgpack_pack_int64(pk, ns_of(CLOCK_REALTIME));
    msgpack_pack_int64(pk, ns_of(CLOCK_MONOTONIC));
    /* The thread's CPU clock is a system call (the other two are vDSO reads): at most one
     * per CPU_READ_EVERY of the thread, else 0 ("not read", format.h). A thread in trace
     * mode opens a 64 KiB chunk every ~50 us; the read was half its cost. */
    uint64_t hz = estimate_hz(), cpu = 0;
    if (!hz || !w->last_cpu_read || t < w->last_cpu_read ||
        t - w->last_cpu_read >= hz / CPU_READ_EVERY) {
        cpu = (uint64_t)ns_of(CLOCK_THREAD_CPUTIME_ID);
        w->last_cpu_read = t;
    }
    msgpack_pack_uint64(pk, cpu);
    w->last_clock = t;
    return t;
}

/* The calling thread's name as the kernel has it (pthread_setname_np, prctl(PR_SET_NAME)),
 * or "" when it is still the process's (an unnamed thread inherits the program's comm). */
static void kernel_name(char out[16]) {
    out[0] = 0;
    if (prctl(PR_GET_NAME, out, 0, 0, 0) != 0) {
        out[0] = 0;
        return;
    }
    out[15] = 0;
    if (strncmp(out, program_invocation_short_name, 15) == 0)
        out[0] = 0;
}

/* Time to look at the thread's name again: its own writer, named by nobody else, and a
 * millisecond since the last look. */
static int name_due(struct writer *w, uint64_t now) {
    uint64_t hz = estimate_hz();
    return !w->name_explicit && w == tls_writer &&
           !(hz && w->last_name_check && now >= w->last_name_check &&
             now - w->last_name_check < hz / 1000);
}

/* At a chunk switch or a cold record (event, marker) of the thread's own writer, at most
 * once a millisecond: a new name from pthread_setname_np/prctl becomes a new
 * PGF_REC_THREAD (g.mu held). */
static void refresh_name(struct writer *w, uint64_t now) {
    if (!name_due(w, now))
        return;
    w->last_name_check = now;
    char n[16];
    kernel_name(n);
    if (n[0] && strcmp(n, w->name) != 0) {
        snprintf(w->name, sizeof w->name, "%s", n);
        thread_def(w);
    }
}

/* The slow path proper (g.mu held). */
static void child_open_locked(void);

static int reserve_locked(struct writer *w, uint32_t need) {
    if (w->dead)
        return -1;
    if (!g.hdr && g.child_pending)
        child_open_locked();
    if (!g.hdr) {
        if (w->gen) {
            w->gen = 0;
            w->hot.chunk = NULL;
            w->hot.pos = w->hot.data = NULL;
            __atomic_store_n(&w->hot.end, NULL, __ATOMIC_RELAXED);
        }
        return -1;
    }
    if (w->gen != g.gen)
        attach(w);
    if (!w->is_defs)
        refresh_name(w, now_tsc());
    if (!w->is_defs && w->no_def) {
        thread_def(w); /* again: an old thread's definitions may have made room */
        if (w->no_def) {
            count_drop(w);
            return -1;
        }
    }
    if (!w->is_defs && nested_drops) {
        /* one instruction each: a handler may count one more while this runs */
        uint64_t n = __atomic_exchange_n(&nested_drops, 0, __ATOMIC_RELAXED);
        w->dropped_total += n;
        w->lost_records += n;
        __atomic_fetch_add(&g.hdr->records_dropped, n, __ATOMIC_RELAXED);
    }
    if (w->hot.chunk && (uintptr_t)w->hot.pos + need <= (uintptr_t)w->chunk_end)
        return 0;
    /* 64 bytes cover the CLOCK and DROPPED records that open a data chunk */
    if (need > g.chunk_size - PGF_CHUNK_HEADER_SIZE - (w->is_defs ? 0 : 96)) {
        count_drop(w);
        return -1;
    }
    finish_chunk(w);
    int32_t idx = w->reserved >= 0 ? w->reserved : w == &g.tdefs ? take_tdefs(w) : take_chunk(w);
    w->reserved = -1;
    if (idx < 0) {
        if (w == &g.tdefs)
            return -1; /* counted by thread_def */
        if (!w->is_defs && !w->starved && !w->records_before) {
            w->starved = 1; /* a thread that never got a chunk: counted, warned at close */
            g.threads_starved++;
        }
        count_drop(w);
        return -1;
    }
    start_chunk(w, idx);
    if (!w->is_defs) {
        uint8_t rec[96];
        struct span s = { rec, rec + sizeof rec };
        msgpack_packer pk = { &s, span_write };
        uint64_t t = pack_clock(w, &pk);
        uint8_t *mid = s.p;
        if (w->lost_records || w->lost_chunks) {
            msgpack_pack_array(&pk, 4);
            msgpack_pack_uint8(&pk, PGF_REC_DROPPED);
            msgpack_pack_uint64(&pk, w->lost_records);
            msgpack_pack_uint64(&pk, w->lost_bytes);
            msgpack_pack_uint64(&pk, w->lost_chunks);
            w->lost_records = w->lost_bytes = w->lost_chunks = 0;
        }
        emit(w, rec, (uint32_t)(mid - rec), t);
        if (s.p != mid)
            emit(w, mid, (uint32_t)(s.p - mid), t);
        w->open_committed = (uint32_t)(w->hot.pos - w->hot.data);
        uint64_t hz = estimate_hz();
        if (hz)
            __atomic_store_n(&g.hdr->tsc_hz, hz, __ATOMIC_RELAXED);
        /* ask for the next chunk now, before this one is full */
        w->reserved = take_chunk(w);
    }
    return 0;
}

int perfgroup__rec_reserve(struct perfgroup_rec_thread *hw, uint32_t need) {
    struct writer *w = (struct writer *)hw;
    if (lock()) {
        __atomic_fetch_add(&nested_drops, 1, __ATOMIC_RELAXED);
        return -1;
    }
    int saved = errno;
    int rc = reserve_locked(w, need);
    if (rc == 0) /* open the fast path again (the caller re-checks its room) */
        __atomic_store_n(&w->hot.end, w->chunk_end, __ATOMIC_RELAXED);
    unlock();
    errno = saved;
    return rc;
}

/* A cold record of at most `need` bytes is about to be written at w->hot.pos (owner thread
 * only): make room (without the lock when the chunk has it), then lower `end` so that a
 * signal handler's record lands in the slow path (and is dropped) instead of in the middle
 * of this one. 0 = go ahead, then call cold_end; -1 = dropped. */
static int cold_begin(struct writer *w, uint32_t need) {
    if (in_rec) {
        __atomic_fetch_add(&nested_drops, 1, __ATOMIC_RELAXED);
        return -1;
    }
    in_rec = 1;
    __atomic_store_n(&w->hot.end, NULL, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    /* from here no handler writes into w: check and make room */
    if (!w->hot.chunk || w->gen != __atomic_load_n(&g.gen, __ATOMIC_RELAXED) ||
        (uintptr_t)w->hot.pos + need > (uintptr_t)w->chunk_end || name_due(w, now_tsc())) {
        pthread_mutex_lock(&g.mu);
        int saved = errno;
        int rc = reserve_locked(w, need);
        errno = saved;
        pthread_mutex_unlock(&g.mu);
        if (rc) {
            in_rec = 0; /* `end` stays NULL: the next record takes the slow path */
            return -1;
        }
    }
    return 0;
}

static void cold_end(struct writer *w) {
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    /* not if the recording was closed or replaced meanwhile: then the slow path re-attaches */
    if (w->hot.chunk && w->gen == __atomic_load_n(&g.gen, __ATOMIC_RELAXED))
        __atomic_store_n(&w->hot.end, w->chunk_end, __ATOMIC_RELAXED);
    in_rec = 0;
}

/* ---- definitions ------------------------------------------------------------------------ */

/* Write the one record at bytes [from, to) of the log into a DEFS chunk. g.mu held. */
static void defs_put(size_t from, size_t to) {
    if (!g.hdr || to - from > UINT32_MAX)
        return;
    if (reserve_locked(&g.defs, (uint32_t)(to - from)) == 0)
        emit(&g.defs, g.log + from, (uint32_t)(to - from), now_tsc());
}

/* Append one definition record to the log with the packer, then to the file. g.mu held. */
#define DEF_BEGIN()                                                     \
    size_t start_ = g.log_len;                                          \
    struct grow gr_ = { &g.log, &g.log_len, &g.log_cap, 0 };            \
    msgpack_packer pk_ = { &gr_, grow_write };                          \
    msgpack_packer *pk = &pk_
#define DEF_END()                                                       \
    do {                                                                \
        if (gr_.oom) {                                                  \
            g.log_len = start_;                                         \
            break;                                                      \
        }                                                               \
        defs_put(start_, g.log_len);                                 \
    } while (0)

void perfgroup__rec_group(uint32_t group_id, const char *name, int kind, int active) {
    if (lock())
        return;
    DEF_BEGIN();
    msgpack_pack_array(pk, 5);
    msgpack_pack_uint8(pk, PGF_REC_GROUP);
    msgpack_pack_uint32(pk, group_id);
    pack_str(pk, name, MAX_TEXT);
    msgpack_pack_uint32(pk, (uint32_t)kind);
    if (active)
        msgpack_pack_true(pk);
    else
        msgpack_pack_false(pk);
    DEF_END();
    unlock();
}

void perfgroup__rec_function(uint32_t function_id, const char *function, const char *file,
                             uint32_t line, const char *module, const uint32_t *group_ids,
                             unsigned ngroups) {
    if (lock())
        return;
    DEF_BEGIN();
    msgpack_pack_array(pk, 7);
    msgpack_pack_uint8(pk, PGF_REC_SITE);
    msgpack_pack_uint32(pk, function_id);
    pack_str(pk, function, MAX_TEXT);
    pack_str(pk, file, MAX_TEXT);
    msgpack_pack_uint32(pk, line);
    if (ngroups > 8)
        ngroups = 8; /* group_mask of PGF_REC_INTERVAL has 8 bits */
    msgpack_pack_array(pk, ngroups);
    for (unsigned i = 0; i < ngroups; i++)
        msgpack_pack_uint32(pk, group_ids[i]);
    pack_str(pk, module, MAX_TEXT);
    DEF_END();
    unlock();
}

/*
 * Memory the recorder takes while a thread may be in a signal handler (a hook there can be a
 * thread's first, or commit an event with a new name): never malloc, which may hold its lock
 * in the interrupted code. Under g.mu: a bump arena of anonymous pages (zeroed, never given
 * back: strings and writers live as long as the process) and a free list of writers.
 */
static struct pg_arena arena = {NULL, NULL, 64u << 10};
static struct writer *writers_free;

static struct writer *writer_alloc(void) {
    struct writer *w = writers_free;
    if (w) {
        writers_free = w->next;
        uint32_t *tmap = w->tmap, cap = w->tmap_cap;
        memset(w, 0, sizeof *w);
        if (tmap)
            memset(tmap, 0, cap * sizeof *tmap);
        w->tmap = tmap, w->tmap_cap = cap;
        return w;
    }
    return perfgroup__arena_alloc(&arena, sizeof *w);
}

static void writer_free(struct writer *w) {
    w->next = writers_free;
    writers_free = w;
}

uint32_t perfgroup__rec_string(const char *text) {
    if (!text)
        text = "";
    uint32_t h = pg_hash_str(text, PG_HASH_SEED), id = 0;
    if (lock())
        return 0;
    if (g.str_count * 2 >= g.str_cap) {
        uint32_t nc = g.str_cap ? g.str_cap * 2 : 64;
        struct str_ent *ns = perfgroup__map(nc * sizeof *ns); /* zeroed; no malloc here */
        if (!ns)
            goto out;
        for (uint32_t i = 0; i < g.str_cap; i++)
            if (g.strs[i].text) {
                uint32_t j = g.strs[i].hash & (nc - 1);
                while (ns[j].text)
                    j = (j + 1) & (nc - 1);
                ns[j] = g.strs[i];
            }
        if (g.strs)
            munmap(g.strs, g.str_cap * sizeof *g.strs);
        g.strs = ns;
        g.str_cap = nc;
    }
    uint32_t j = h & (g.str_cap - 1);
    for (; g.strs[j].text; j = (j + 1) & (g.str_cap - 1))
        if (g.strs[j].hash == h && strcmp(g.strs[j].text, text) == 0) {
            id = g.strs[j].id;
            goto out;
        }
    char *copy = perfgroup__arena_alloc(&arena, strnlen(text, MAX_TEXT) + 1);
    if (!copy)
        goto out;
    memcpy(copy, text, strnlen(text, MAX_TEXT)); /* the arena's memory is zeroed */
    id = ++g.str_count;
    g.strs[j] = (struct str_ent){ copy, id, h };
    {
        DEF_BEGIN();
        msgpack_pack_array(pk, 3);
        msgpack_pack_uint8(pk, PGF_REC_STRING);
        msgpack_pack_uint32(pk, id);
        pack_str(pk, copy, MAX_TEXT);
        DEF_END();
    }
out:
    unlock();
    return id;
}

/* PGF_REC_THREAD for w into the current file (not logged: written on each attach). */
static void thread_def(struct writer *w) {
    if (!g.hdr)
        return;
    uint8_t rec[16 + 64];
    struct span s = { rec, rec + sizeof rec };
    msgpack_packer pk = { &s, span_write };
    msgpack_pack_array(&pk, 4);
    msgpack_pack_uint8(&pk, PGF_REC_THREAD);
    msgpack_pack_uint32(&pk, w->index);
    msgpack_pack_uint32(&pk, w->tid);
    char unnamed[32]; /* a stable name for a thread nobody named: no profile has "" */
    snprintf(unnamed, sizeof unnamed, "thread %u", w->tid);
    pack_str(&pk, w->name[0] ? w->name : unnamed, sizeof w->name - 1);
    if (reserve_locked(&g.tdefs, (uint32_t)(s.p - rec)) != 0) {
        if (!w->no_def)
            g.threads_undefined++;
        w->no_def = 1; /* its records are dropped (counted) until a definition fits */
        return;
    }
    struct tdef_range *r = &g.tdr[g.tdefs.cur];
    if (!r->used++ || w->index < r->min)
        r->min = w->index;
    if (r->used == 1 || w->index > r->max)
        r->max = w->index;
    w->no_def = 0;
    emit(&g.tdefs, rec, (uint32_t)(s.p - rec), now_tsc());
}

static void process_def(void) {
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    struct grow gr = { &buf, &len, &cap, 0 };
    msgpack_packer pk = { &gr, grow_write };
    char args[8192];
    ssize_t n = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        /* the whole record must fit a chunk */
        size_t max = g.chunk_size / 2 < sizeof args - 1 ? g.chunk_size / 2 : sizeof args - 1;
        n = read(fd, args, max);
        close(fd);
    }
    if (n < 0)
        n = 0;
    args[n] = 0;
    unsigned nargs = 0;
    for (ssize_t i = 0; i < n; i += (ssize_t)strlen(args + i) + 1)
        nargs++;
    msgpack_pack_array(&pk, 11);
    msgpack_pack_uint8(&pk, PGF_REC_PROCESS);
    msgpack_pack_uint32(&pk, g.hdr->pid);
    msgpack_pack_uint32(&pk, g.hdr->ppid);
    pack_str(&pk, g.hdr->program, sizeof g.hdr->program - 1);
    msgpack_pack_array(&pk, nargs);
    for (ssize_t i = 0; i < n; i += (ssize_t)strlen(args + i) + 1)
        pack_str(&pk, args + i, MAX_TEXT);
    msgpack_pack_int64(&pk, g.hdr->start_realtime_ns);
    msgpack_pack_int64(&pk, g.hdr->start_monotonic_ns);
    msgpack_pack_uint64(&pk, g.hdr->start_tsc);
    msgpack_pack_uint64(&pk, g.hdr->tsc_hz);
    msgpack_pack_uint32(&pk, g.hdr->mode);
    pack_str(&pk, RUNTIME_VERSION, 64);
    if (!gr.oom && len <= UINT32_MAX && reserve_locked(&g.defs, (uint32_t)len) == 0)
        emit(&g.defs, buf, (uint32_t)len, g.hdr->start_tsc);
    if (buf)
        munmap(buf, cap);
}

/* The open events' chunk (format.h, PGF_CHUNK_OPEN): taken once per file when the first
 * slot is written (a file whose events all end within a period has none), never sealed or
 * recycled (it is in no heap), its slots all empty. None if the file has no chunk left. */
static void open_slots_locked(void) {
    int32_t idx = take_chunk(NULL);
    if (idx < 0)
        return;
    struct pgf_chunk_header *c = chunk_at((uint32_t)idx);
    uint64_t t = now_tsc();
    memset((uint8_t *)c + PGF_CHUNK_HEADER_SIZE, 0, g.chunk_size - PGF_CHUNK_HEADER_SIZE);
    c->kind = PGF_CHUNK_OPEN;
    c->state = PGF_CSTATE_WRITING;
    c->seq = __atomic_fetch_add(&g.hdr->next_seq, 1, __ATOMIC_RELAXED);
    c->thread = PGF_THREAD_DEFS;
    c->crc32c = 0;
    c->record_count = 0;
    c->first_tsc = c->last_tsc = t;
    c->dropped_before = c->records_before = 0;
    __atomic_store_n(&c->committed, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&c->magic, PGF_CHUNK_MAGIC, __ATOMIC_RELEASE);
    g.slots = (struct pgf_open_slot *)((uint8_t *)c + PGF_CHUNK_HEADER_SIZE);
    g.nslots = (g.chunk_size - PGF_CHUNK_HEADER_SIZE) / (uint32_t)sizeof(struct pgf_open_slot);
}

/* ---- whole-run totals (format.h, struct pgf_totals_slot) ------------------------------- */

/* The seqlock writer's fence between the odd seq and the slot's stores. The slots' readers
 * are other processes (the converter, top, metrics), which TSan does not see, and TSan models
 * no fence (GCC warns, -Wtsan): there, a compiler barrier keeps the order (TSan builds are
 * x86-64 test builds, where stores are not reordered with stores). */
#if defined(__SANITIZE_THREAD__)
#define TOT_FENCE() __atomic_signal_fence(__ATOMIC_SEQ_CST)
#else
#define TOT_FENCE() __atomic_thread_fence(__ATOMIC_RELEASE)
#endif

/* Rewrite slot s as a seqlock: seq odd, the stores, seq even (release): a reader that sees
 * the same even seq before and after its copy has the slot whole. */
#define TOT_WRITE(s, body)                                                                    \
    do {                                                                                      \
        uint32_t seq_ = (s)->seq;                                                             \
        __atomic_store_n(&(s)->seq, seq_ | 1u, __ATOMIC_RELAXED);                             \
        TOT_FENCE();                                                                          \
        body;                                                                                 \
        __atomic_store_n(&(s)->seq, (seq_ | 1u) + 1u, __ATOMIC_RELEASE);                      \
    } while (0)

/* d += s by PG_TOTALS_FOLD's rule, and the largest wall time in one event */
static void totals_fold(struct pgf_totals *d, const struct pgf_totals *s) {
    if (s->events && s->max_wall_ns > d->max_wall_ns)
        d->max_wall_ns = s->max_wall_ns;
    PG_TOTALS_FOLD(d, s);
}

/* Room ran out: every ended thread's slot is folded into its group's "ended threads" row
 * (thread 0) and freed. g.mu held. */
static void totals_fold_locked(void) {
    uint32_t threads = 0;
    for (uint32_t i = 0; i < g.tot_used; i++) {
        struct pgf_totals_slot *s = &g.tot[i];
        if ((s->flags & (PGF_TOTALS_F_ENDED | PGF_TOTALS_F_FOLDED)) != PGF_TOTALS_F_ENDED)
            continue;
        uint32_t gid = s->group;
        threads += gid == 0;
        if (gid >= g.ended_cap) {
            uint32_t nc = g.ended_cap ? g.ended_cap : 1024;
            while (nc <= gid)
                nc *= 2;
            uint32_t *n = perfgroup__map(nc * sizeof *n);
            if (!n)
                continue;
            if (g.ended_row) {
                memcpy(n, g.ended_row, g.ended_cap * sizeof *n);
                munmap(g.ended_row, g.ended_cap * sizeof *n);
            }
            g.ended_row = n, g.ended_cap = nc;
        }
        if (!g.ended_row[gid]) { /* the group's first: this slot becomes the row */
            TOT_WRITE(s, { s->thread = 0; s->flags = PGF_TOTALS_F_USED | PGF_TOTALS_F_FOLDED; });
            g.ended_row[gid] = i + 1;
            continue;
        }
        struct pgf_totals_slot *row = &g.tot[g.ended_row[gid] - 1];
        TOT_WRITE(row, totals_fold(&row->t, &s->t));
        TOT_WRITE(s, { s->thread = s->group = s->flags = 0; memset(&s->t, 0, sizeof s->t); });
        g.tot_free[g.tot_nfree++] = i;
    }
    __atomic_fetch_add(&g.hdr->threads_folded, threads, __ATOMIC_RELAXED);
}

/* A slot for thread `thread`, group `gid`: a free one, else a new one (its blocks
 * allocated a 64 KiB stretch at a time: a full disk is a lost total, never a SIGBUS), else
 * the ended threads folded first. -1: none. g.mu held. */
static int64_t totals_take_locked(uint32_t thread, uint32_t gid) {
    if (!g.tot)
        return -1;
    if (!g.tot_nfree && g.tot_used == g.tot_count)
        totals_fold_locked();
    uint32_t i;
    if (g.tot_nfree) {
        i = g.tot_free[--g.tot_nfree];
    } else if (g.tot_used < g.tot_count) {
        i = g.tot_used;
        uint64_t end = g.hdr->totals_offset + (uint64_t)(i + 1) * sizeof *g.tot;
        if (end > g.tot_alloc_end) {
            uint64_t limit = g.hdr->totals_offset + (uint64_t)g.tot_count * sizeof *g.tot;
            uint64_t to = (end + (64u << 10) - 1) & ~(uint64_t)((64u << 10) - 1);
            if (to > limit)
                to = limit;
            int rc = posix_fallocate(g.fd, (off_t)g.tot_alloc_end, (off_t)(to - g.tot_alloc_end));
            if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL)
                return -1;
            g.tot_alloc_end = to;
        }
        g.tot_used++;
        __atomic_store_n(&g.hdr->totals_used, g.tot_used, __ATOMIC_RELAXED);
    } else {
        return -1;
    }
    struct pgf_totals_slot *s = &g.tot[i];
    TOT_WRITE(s, {
        memset(&s->t, 0, sizeof s->t);
        s->thread = thread;
        s->group = gid;
        s->flags = PGF_TOTALS_F_USED;
    });
    return i;
}

/* w's slot of group gid in the current file, taken now if it has none. NULL: none (no
 * file, no room, or the recorder busy on this thread: a signal handler). */
static struct pgf_totals_slot *totals_slot(struct writer *w, uint32_t gid) {
    if (w->tot_gen == __atomic_load_n(&g.gen, __ATOMIC_RELAXED) && gid < w->tmap_cap &&
        w->tmap[gid])
        return &w->tot_base[w->tmap[gid] - 1];
    if (lock())
        return NULL;
    struct pgf_totals_slot *s = NULL;
    if (!g.hdr && g.child_pending)
        child_open_locked();
    if (!g.hdr || !g.tot)
        goto out;
    if (w->tot_gen != g.gen) { /* a new file: no slot yet */
        if (w->tmap)
            memset(w->tmap, 0, w->tmap_cap * sizeof *w->tmap);
        w->tot_gen = g.gen;
        w->tot_base = g.tot;
    }
    if (gid >= w->tmap_cap) {
        uint32_t nc = w->tmap_cap ? w->tmap_cap : 1024;
        while (nc <= gid)
            nc *= 2;
        uint32_t *n = perfgroup__map(nc * sizeof *n);
        if (!n)
            goto out;
        if (w->tmap) {
            memcpy(n, w->tmap, w->tmap_cap * sizeof *n);
            munmap(w->tmap, w->tmap_cap * sizeof *n);
        }
        w->tmap = n, w->tmap_cap = nc;
    }
    int64_t i = totals_take_locked(w->index, gid);
    if (i < 0) {
        __atomic_fetch_add(&g.hdr->totals_lost, 1, __ATOMIC_RELAXED);
        goto out;
    }
    w->tmap[gid] = (uint32_t)i + 1;
    s = &g.tot[i];
out:
    unlock();
    return s;
}

void perfgroup__rec_totals(struct perfgroup_rec_thread *hw, uint32_t group_id,
                           const struct pgf_totals *t) {
    struct writer *w = (struct writer *)hw;
    if (!w || w->dead)
        return;
    struct pgf_totals_slot *s = totals_slot(w, group_id);
    if (s)
        TOT_WRITE(s, memcpy(&s->t, t, sizeof s->t));
}

/* The thread ended: its slots are final (and may be folded when room runs out). g.mu held. */
static void totals_end_locked(struct writer *w) {
    if (!g.tot || w->tot_gen != g.gen)
        return;
    for (uint32_t gid = 0; gid < w->tmap_cap; gid++)
        if (w->tmap[gid]) {
            struct pgf_totals_slot *s = &g.tot[w->tmap[gid] - 1];
            TOT_WRITE(s, s->flags |= PGF_TOTALS_F_ENDED);
        }
}

/* Replay the definitions log record by record (records are self-delimiting msgpack). */
static void replay_log(void) {
    size_t off = 0;
    while (off < g.log_len) {
        msgpack_unpacked u;
        msgpack_unpacked_init(&u);
        size_t next = off;
        if (msgpack_unpack_next(&u, (const char *)g.log, g.log_len, &next) !=
            MSGPACK_UNPACK_SUCCESS) {
            msgpack_unpacked_destroy(&u);
            return;
        }
        msgpack_unpacked_destroy(&u);
        defs_put(off, next);
        off = next;
    }
}

/* ---- opening and closing --------------------------------------------------------------- */

static void report(const char *what, const char *path, int err) {
    if (g.reported)
        return;
    g.reported = 1;
    fprintf(stderr, "perfgroup: %s%s%s: %s; running unrecorded\n", what, path ? " " : "",
            path ? path : "", strerror(err));
}

/* Expand %p and %%; add ".<pid>" when force_pid and no %p. */
static int expand(const char *tmpl, int force_pid, char *out, size_t cap) {
    size_t o = 0;
    int had_p = 0;
    char pid[16];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    for (const char *s = tmpl; *s; s++) {
        const char *piece = NULL;
        char one[2] = { *s, 0 };
        if (s[0] == '%' && s[1] == 'p') {
            piece = pid;
            had_p = 1;
            s++;
        } else if (s[0] == '%' && s[1] == '%') {
            piece = "%";
            s++;
        } else {
            piece = one;
        }
        size_t n = strlen(piece);
        if (o + n >= cap)
            return -ENAMETOOLONG;
        memcpy(out + o, piece, n);
        o += n;
    }
    out[o] = 0;
    if (force_pid && !had_p) {
        if (o + 1 + strlen(pid) >= cap)
            return -ENAMETOOLONG;
        out[o++] = '.';
        strcpy(out + o, pid);
    }
    return 0;
}

/* A file at path recorded by this very pid: we are an exec()ed image of that process. */
static int ours_before_exec(const char *path) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return 0;
    struct pgf_file_header h;
    ssize_t n = pread(fd, &h, 40, 0);
    close(fd);
    return n == 40 && memcmp(h.magic, PGF_MAGIC, PGF_MAGIC_LEN) == 0 &&
           h.pid == (uint32_t)getpid();
}

/*
 * The file is built unnamed and appears at its name whole (header, definitions), so no
 * crash at any moment leaves a temporary file: O_TMPFILE in the target's directory, linked
 * into place once written. Where the file system has no O_TMPFILE, a named temporary
 * "<path>.tmp<pid>.XXXXXX" is renamed into place instead, and a later start removes the
 * temporaries of processes that no longer exist (a crash between create and rename).
 * A symlink planted at the path is replaced, never followed (linkat and rename both make
 * a new directory entry).
 */
/* path's directory ("." or "/" when it has none), and its last component in *base. */
static const char *split_dir(const char *path, char buf[PATH_MAX], const char **base) {
    snprintf(buf, PATH_MAX, "%s", path);
    char *slash = strrchr(buf, '/');
    *base = path + (slash ? slash + 1 - buf : 0);
    if (!slash)
        return ".";
    if (slash == buf)
        return "/";
    *slash = 0;
    return buf;
}

static void unlink_stale_tmps(const char *path) {
    char dirbuf[PATH_MAX];
    const char *base, *dname = split_dir(path, dirbuf, &base);
    char prefix[NAME_MAX + 8];
    int plen = snprintf(prefix, sizeof prefix, "%s.tmp", base);
    if (plen <= 0 || (size_t)plen >= sizeof prefix)
        return;
    int dfd = open(dname, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, (size_t)plen) != 0)
            continue;
        char *end;
        long pid = strtol(e->d_name + plen, &end, 10);
        if (pid <= 0 || *end != '.' || strlen(end) != 7)
            continue;
        struct stat st;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH ||
            fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid())
            continue;
        unlinkat(dfd, e->d_name, 0);
    }
    closedir(d);
}

static int create_unnamed(const char *path, char *tmp, size_t tmpcap) {
    char dirbuf[PATH_MAX];
    const char *base, *dname = split_dir(path, dirbuf, &base);
    int fd = open(dname, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
        return -errno;
    unlink_stale_tmps(path);
    if ((size_t)snprintf(tmp, tmpcap, "%s.tmp%d.XXXXXX", path, (int)getpid()) >= tmpcap) {
        tmp[0] = 0;
        return -ENAMETOOLONG;
    }
    fd = mkostemp(tmp, O_CLOEXEC); /* O_EXCL, mode 0600: never through a symlink */
    if (fd < 0) {
        tmp[0] = 0;
        return -errno;
    }
    return fd;
}

/* A recording another live process is writing at path: its header names a pid other than
 * ours, still RECORDING, and that pid exists. A recording whose writer has died (crash,
 * SIGKILL) or closed is not held: a new run replaces it, as before. */
static int held_by_other(const char *path) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return 0;
    struct stat st;
    struct pgf_file_header h;
    int held = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
               pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
               memcmp(h.magic, PGF_MAGIC, PGF_MAGIC_LEN) == 0 &&
               h.state == PGF_STATE_RECORDING && h.pid != 0 && h.pid != (uint32_t)getpid() &&
               h.pid <= INT32_MAX && (kill((pid_t)h.pid, 0) == 0 || errno == EPERM);
    close(fd);
    return held;
}

/* The file into place at path. -EBUSY: a live process records there (held_by_other); what
 * is there otherwise (a file, or a symlink: the link itself goes) is replaced. */
static int link_into_place(int fd, char *tmp, const char *path) {
    if (tmp[0]) {
        if (held_by_other(path))
            return -EBUSY;
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) != 0) {
            if (errno == EEXIST && held_by_other(path))
                return -EBUSY;
            if (errno != EEXIST && errno != EINVAL && errno != ENOSYS)
                return -errno;
            if (rename(tmp, path) != 0) /* no RENAME_NOREPLACE here, or a stale file */
                return -errno;
        }
        tmp[0] = 0;
        return 0;
    }
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    for (int tries = 0; tries < 8; tries++) {
        if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0)
            return 0;
        if (errno == ENOENT && linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH) == 0)
            return 0; /* no /proc: needs CAP_DAC_READ_SEARCH */
        if (errno != EEXIST)
            return -errno;
        if (held_by_other(path))
            return -EBUSY;
        if (unlink(path) != 0 && errno != ENOENT)
            return -errno;
    }
    return -EEXIST;
}

static int open_locked(const char *tmpl, unsigned mode, uint64_t buffer, uint32_t chunk,
                       int child, char *path, size_t pathcap) {
    if (mode != PGF_MODE_STATS && mode != PGF_MODE_TRACE)
        return -EINVAL;
    if (chunk < MIN_CHUNK || chunk > MAX_CHUNK || (chunk & (chunk - 1)))
        return -EINVAL;
    if (buffer < PGF_HEADER_SIZE + 2ull * chunk)
        return -EINVAL;
    uint64_t count = (buffer - PGF_HEADER_SIZE) / chunk;
    if (count > (1u << 24))
        count = 1u << 24;
    int rc = expand(tmpl, child, path, pathcap);
    if (rc)
        return rc;
    if (ours_before_exec(path)) {
        size_t n = strlen(path);
        for (int i = 1;; i++) {
            if (i > 99 || n + 12 >= pathcap)
                return -EEXIST;
            snprintf(path + n, pathcap - n, ".exec%d", i);
            if (access(path, F_OK) != 0)
                break;
        }
    }
    char tmp[PATH_MAX] = "";
    int fd = create_unnamed(path, tmp, sizeof tmp);
    if (fd < 0)
        return fd;
    uint32_t ntot = g.tot_slots ? g.tot_slots : DEFAULT_TOTALS;
    size_t tot_off = PGF_HEADER_SIZE + (size_t)count * chunk;
    size_t size = tot_off + (size_t)ntot * sizeof(struct pgf_totals_slot);
    uint8_t *map = MAP_FAILED;
    uint32_t *tot_free = NULL;
    uint32_t *free_stack = NULL;
    struct heap_ent *heap = NULL;
    struct writer **owner = NULL;
    struct tdef_range *tdr = NULL;
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)size) != 0) {
        rc = -errno;
        goto fail;
    }
    /* the header's blocks now, a chunk's when it is first taken (take_chunk): the file
     * grows as it is written, and a full disk is never a SIGBUS in the host */
    rc = posix_fallocate(fd, 0, PGF_HEADER_SIZE);
    if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL) {
        rc = -rc;
        goto fail;
    }
    map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    free_stack = malloc(count * sizeof *free_stack);
    heap = malloc(count * sizeof *heap);
    owner = calloc(count, sizeof *owner);
    tdr = calloc(count, sizeof *tdr);
    tot_free = malloc(ntot * sizeof *tot_free);
    if (map == MAP_FAILED || !free_stack || !heap || !owner || !tdr || !tot_free) {
        rc = map == MAP_FAILED ? -errno : -ENOMEM;
        goto fail;
    }
    struct pgf_file_header *h = (struct pgf_file_header *)map;
    memcpy(h->magic, PGF_MAGIC, PGF_MAGIC_LEN);
    h->version = PERFGROUP_FORMAT_VERSION;
    h->header_size = PGF_HEADER_SIZE;
    h->chunk_size = chunk;
    h->chunk_count = (uint32_t)count;
    h->chunks_offset = PGF_HEADER_SIZE;
    h->pid = (uint32_t)getpid();
    h->ppid = (uint32_t)getppid();
    h->clock = perfgroup__clock_kind;
    h->cpu_time = perfgroup__rseq_cs_off >= 0 ? PGF_CPU_TIME_MEASURED : PGF_CPU_TIME_ESTIMATED;
    h->tsc_scope = perfgroup__tsc_scope;
    h->mode = mode;
    h->state = PGF_STATE_RECORDING;
    h->start_realtime_ns = ns_of(CLOCK_REALTIME);
    h->start_monotonic_ns = ns_of(CLOCK_MONOTONIC);
    h->start_tsc = now_tsc();
    h->tsc_hz = estimate_hz();
    h->next_seq = 1;
    snprintf(h->program, sizeof h->program, "%s", program_invocation_short_name);
    h->totals_offset = tot_off;
    h->totals_slot_size = (uint32_t)sizeof(struct pgf_totals_slot);
    h->totals_count = ntot;

    g.fd = fd;
    g.map = map;
    g.map_size = size;
    g.hdr = h;
    g.chunk_size = chunk;
    g.chunk_count = (uint32_t)count;
    g.free_stack = free_stack;
    g.nfree = (uint32_t)count;
    for (uint32_t i = 0; i < count; i++)
        free_stack[i] = (uint32_t)(count - 1 - i);
    g.heap = heap;
    g.nheap = 0;
    g.owner = owner;
    g.tdr = tdr;
    g.ntdefs = 0;
    tdr = NULL;
    g.tot = (struct pgf_totals_slot *)(map + tot_off);
    g.tot_count = ntot;
    g.tot_used = g.tot_nfree = 0;
    g.tot_free = tot_free;
    g.tot_alloc_end = tot_off;
    if (g.ended_row)
        memset(g.ended_row, 0, g.ended_cap * sizeof *g.ended_row);
    __atomic_fetch_add(&g.gen, 1, __ATOMIC_RELAXED);
    g.defs.is_defs = 1;
    attach(&g.defs);
    g.tdefs.is_defs = 1;
    attach(&g.tdefs);
    process_def();
    replay_log();
    g.slots = NULL, g.nslots = 0; /* taken at the first slot written */
    for (struct writer *w = g.live; w; w = w->next)
        __atomic_store_n(&w->hot.end, NULL, __ATOMIC_RELAXED); /* re-attach on next write */
    rc = link_into_place(fd, tmp, path);
    if (rc == -EBUSY) {
        /* Two processes given one PERFGROUP_OUTPUT without %p (two instances of a program, a
         * wrapper script): the later one records beside the earlier, never over it. */
        char taken[PATH_MAX];
        snprintf(taken, sizeof taken, "%s", path);
        size_t n = strlen(path);
        if ((size_t)snprintf(path + n, pathcap - n, ".%d", (int)getpid()) >= pathcap - n) {
            path[n] = 0;
            rc = -ENAMETOOLONG;
        } else {
            rc = link_into_place(fd, tmp, path);
            if (rc == 0)
                fprintf(stderr, "perfgroup: %s is being recorded by another running process; "
                        "recording this one (pid %d) to %s\n", taken, (int)getpid(), path);
        }
    }
    if (rc) {
        g.hdr = NULL;
        g.fd = -1;
        g.tot = NULL;
        g.tot_free = NULL;
        goto fail;
    }
    __atomic_store_n(&perfgroup__rec_mode, (int)mode, __ATOMIC_RELAXED);
    return 0;
fail:
    if (map != MAP_FAILED)
        munmap(map, size);
    free(free_stack);
    free(heap);
    free(owner);
    free(tdr);
    free(tot_free);
    close(fd);
    if (tmp[0])
        unlink(tmp);
    return rc;
}

/* Mark the file closed (end_tsc, totals) and detach every writer. g.mu held. */
/* The open file's descriptor and bookkeeping let go (not its mapping). g.mu held. */
static void forget_file_locked(void) {
    close(g.fd);
    g.fd = -1;
    g.hdr = NULL;
    g.slots = NULL;
    g.nslots = 0;
    free(g.free_stack);
    free(g.heap);
    free(g.owner);
    free(g.tdr);
    free(g.tot_free);
    g.tot = NULL;
    g.tot_free = NULL;
    g.tot_count = g.tot_used = g.tot_nfree = 0;
    g.free_stack = NULL;
    g.heap = NULL;
    g.owner = NULL;
    g.tdr = NULL;
}

static void close_locked(void) {
    if (!g.hdr && g.child_pending) { /* a fork child that never recorded: no file at all */
        g.child_pending = 0;
        __atomic_store_n(&perfgroup__rec_mode, 0, __ATOMIC_RELAXED);
        __atomic_fetch_add(&g.gen, 1, __ATOMIC_RELAXED);
    }
    if (!g.hdr)
        return;
    __atomic_store_n(&perfgroup__rec_mode, 0, __ATOMIC_RELAXED);
    for (struct writer *w = g.live; w; w = w->next)
        __atomic_store_n(&w->hot.end, NULL, __ATOMIC_RELAXED);
    finish_chunk(&g.defs);
    finish_chunk(&g.tdefs);
    uint64_t lost = g.threads_undefined + g.threads_starved;
    if (lost > g.warned_threads) { /* their records are in header.records_dropped */
        /* the smallest buffer that holds, for the most threads at once, a current and a next
         * chunk each, with the definitions' chunks and the open events' one */
        uint64_t defs = 0;
        for (uint32_t i = 0; i < g.chunk_count; i++) {
            const struct pgf_chunk_header *c = chunk_at(i);
            defs += c->magic == PGF_CHUNK_MAGIC && c->kind != PGF_CHUNK_DATA;
        }
        uint64_t need = PGF_HEADER_SIZE + (2ull * g.peak_live + defs + 1) * g.chunk_size;
        fprintf(stderr, "perfgroup: %llu threads found no room in the buffer (%llu for their "
                "definition, %llu for a chunk): their records were dropped (their whole-run "
                "totals are kept); PERFGROUP_BUFFER=%lluK would have held a chunk for each of "
                "the %u threads at once\n", (unsigned long long)lost,
                (unsigned long long)g.threads_undefined, (unsigned long long)g.threads_starved,
                (unsigned long long)((need + 1023) / 1024), g.peak_live);
        g.warned_threads = lost;
    }
    uint64_t hz = estimate_hz();
    if (hz)
        __atomic_store_n(&g.hdr->tsc_hz, hz, __ATOMIC_RELAXED);
    header_counts(g.hdr);
    g.hdr->end_tsc = now_tsc();
    __atomic_store_n(&g.hdr->state, PGF_STATE_CLOSED, __ATOMIC_RELEASE);
    forget_file_locked(); /* the mapping stays: a thread may be in the middle of a record */
    __atomic_fetch_add(&g.gen, 1, __ATOMIC_RELAXED);
}

/* fork(): the parent keeps its file; the child records into its own. Called by the host's
 * fork handlers (lifecycle.c), which take the registry lock first: the one lock order, the
 * order of site resolution (registry, then recorder). */
void perfgroup__rec_atfork_prepare(void) { pthread_mutex_lock(&g.mu); }
void perfgroup__rec_atfork_parent(void) { pthread_mutex_unlock(&g.mu); }
void perfgroup__rec_atfork_child(void) {
    if (g.hdr || g.child_pending) {
        /* the other threads do not exist here: forget their writers (unlinked, so that a
         * thread_end for one of them, e.g. this thread's other writer, touches nothing) */
        struct writer *me = tls_writer;
        for (struct writer *w = g.live, *nx; w; w = nx) {
            nx = w->next;
            w->prev = w->next = NULL;
            /* every chunk is in the parent's mapping, unmapped below: slow path first */
            __atomic_store_n(&w->hot.end, NULL, __ATOMIC_RELAXED);
            w->hot.chunk = NULL;
            w->hot.pos = w->hot.data = NULL;
        }
        g.live = NULL;
        if (me) {
            me->prev = me->next = NULL;
            me->tid = (uint32_t)syscall(SYS_gettid); /* the child's thread, not the parent's */
            g.live = me;
        }
        if (g.hdr) {
            forget_file_locked();
            munmap(g.map, g.map_size); /* the parent's: no thread of the child writes there */
            g.map = NULL;
        }
        /* The child's own file is made at its first record (child_open_locked): a child
         * that only execs or exits makes none, and a fork costs no file. */
        g.child_pending = 1;
        __atomic_fetch_add(&g.gen, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&g.mu);
}

/* A fork child's first record: its file, under the name expanded with its pid. g.mu held. */
static void child_open_locked(void) {
    g.child_pending = 0;
    char path[PATH_MAX];
    int rc = open_locked(g.tmpl, g.mode, g.buffer, g.chunk, 1, path, sizeof path);
    if (rc) {
        __atomic_store_n(&perfgroup__rec_mode, 0, __ATOMIC_RELAXED);
        g.reported = 0;
        report("cannot record the forked child to", path, -rc);
        __atomic_fetch_add(&g.gen, 1, __ATOMIC_RELAXED);
    }
}

static void rec_fini(void) __attribute__((destructor));
static void rec_fini(void) {
    if (!host) /* with a host: its destructor closes, after the exiting thread's event
                * reached the file */
        perfgroup__rec_close();
}

static int open_recording(const char *tmpl, unsigned mode, uint64_t buffer, uint32_t chunk,
                          char *path, size_t pathcap) {
    if (lock())
        return -EDEADLK;
    int rc;
    snprintf(path, pathcap, "%s", tmpl);
    if (g.hdr || g.child_pending) {
        rc = -EALREADY;
    } else if (strlen(tmpl) >= sizeof g.tmpl) {
        rc = -ENAMETOOLONG;
    } else {
        rc = open_locked(tmpl, mode, buffer, chunk, 0, path, pathcap);
        if (rc == 0) {
            snprintf(g.tmpl, sizeof g.tmpl, "%s", tmpl);
            g.mode = mode;
            g.buffer = buffer;
            g.chunk = chunk;
            /* With a host (always, but in the recorder's own unit tests), the host's fork
             * handlers call ours, after taking the registry lock. */
            if (!host && !g.atfork_done &&
                pthread_atfork(perfgroup__rec_atfork_prepare, perfgroup__rec_atfork_parent,
                               perfgroup__rec_atfork_child) == 0)
                g.atfork_done = 1;
        }
    }
    unlock();
    return rc;
}

/* "256M", "64K", "4096", "1G" (binary multiples, optional B). 0 = bad. */
static uint64_t parse_size(const char *s) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || v == 0)
        return 0;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || v > (UINT64_MAX >> shift))
        return 0;
    return (uint64_t)v << shift;
}

void perfgroup__rec_init(void) {
    if (lock())
        return;
    int first = !g.env_read;
    g.env_read = 1;
    unlock();
    const char *out = perfgroup__getenv("PERFGROUP_OUTPUT");
    if (!first || !out || !*out)
        return;
    const char *m = perfgroup__getenv("PERFGROUP_MODE");
    const char *b = perfgroup__getenv("PERFGROUP_BUFFER");
    const char *c = perfgroup__getenv("PERFGROUP_CHUNK");
    const char *tn = perfgroup__getenv("PERFGROUP_TOTALS");
    unsigned mode = PGF_MODE_STATS;
    uint64_t buffer = DEFAULT_BUFFER, chunk = DEFAULT_CHUNK;
    char bad[256] = "";
    if (m && *m) {
        if (strcmp(m, "trace") == 0)
            mode = PGF_MODE_TRACE;
        else if (strcmp(m, "stats") != 0)
            snprintf(bad, sizeof bad, "PERFGROUP_MODE=%.40s: expected stats or trace", m);
    }
    if (b && *b && !(buffer = parse_size(b)))
        snprintf(bad, sizeof bad, "PERFGROUP_BUFFER=%.40s: expected a size like 256M", b);
    if (c && *c && !(chunk = parse_size(c)))
        snprintf(bad, sizeof bad, "PERFGROUP_CHUNK=%.40s: expected a size like 64K", c);
    if (tn && *tn) {
        uint64_t n = parse_size(tn);
        if (n < 16 || n > MAX_TOTALS)
            snprintf(bad, sizeof bad, "PERFGROUP_TOTALS=%.40s: expected a number of totals "
                     "slots from 16 to 4M", tn);
        else
            g.tot_slots = (uint32_t)n;
    }
    char path[PATH_MAX];
    int rc = -EINVAL;
    if (!bad[0] && chunk <= MAX_CHUNK)
        rc = open_recording(out, mode, buffer, (uint32_t)chunk, path, sizeof path);
    if (rc == -EINVAL && !bad[0])
        snprintf(bad, sizeof bad,
                 "PERFGROUP_CHUNK=%.40s, PERFGROUP_BUFFER=%.40s: the chunk must be a power of 2 "
                 "from 4K to 16M and the buffer hold 4K + 2 chunks",
                 c && *c ? c : "64K", b && *b ? b : "256M");
    if (rc) {
        if (lock())
            return;
        if (bad[0]) {
            if (!g.reported)
                fprintf(stderr, "perfgroup: %s; running unrecorded\n", bad);
            g.reported = 1;
        } else {
            report("cannot record to", path, -rc);
        }
        unlock();
    }
}

void perfgroup__rec_close(void) {
    if (lock())
        return;
    close_locked();
    unlock();
}

/* Only the process that owns the file marks it: a vfork() child (posix_spawn's too, when
 * it goes through these wrappers) shares the parent's memory and mapping until its exec,
 * and the parent goes on recording into the file after it. */
static int owner_locked(void) {
    return g.hdr && g.hdr->pid == (uint32_t)syscall(SYS_getpid);
}

/* Called around exec (rec_exec.c): a successful exec closes the file cleanly; a failed one
 * reopens it (same generation, same chunks). */

void perfgroup__rec_exec_begin(void) {
    if (lock())
        return;
    if (owner_locked()) {
        header_counts(g.hdr);
        g.hdr->end_tsc = now_tsc();
        __atomic_store_n(&g.hdr->state, PGF_STATE_CLOSED, __ATOMIC_RELEASE);
    }
    unlock();
}

void perfgroup__rec_exec_failed(void) {
    if (lock())
        return;
    if (owner_locked()) {
        g.hdr->end_tsc = 0;
        __atomic_store_n(&g.hdr->state, PGF_STATE_RECORDING, __ATOMIC_RELEASE);
    }
    unlock();
}

/* ---- threads ------------------------------------------------------------------------------ */

struct perfgroup_rec_thread *perfgroup__rec_thread_start(uint32_t thread_index, uint32_t tid,
                                                         const char *name) {
    /* out of memory: a writer that never attaches, so the hot path needs no NULL check */
    static struct writer dead = { .dead = 1, .cur = -1, .reserved = -1, .last_full = -1 };
    char kname[16] = "";
    if (!name || !name[0])
        kernel_name(kname); /* named before its first hook (pthread_setname_np) */
    if (lock())
        return &dead.hot;
    struct writer *w = writer_alloc();
    if (!w) {
        unlock();
        return &dead.hot;
    }
    w->index = thread_index;
    w->tid = tid;
    w->cur = w->reserved = w->last_full = -1;
    snprintf(w->name, sizeof w->name, "%s", name ? name : "");
    w->name_explicit = w->name[0] != 0;
    if (!w->name_explicit)
        snprintf(w->name, sizeof w->name, "%s", kname);
    w->next = g.live;
    if (g.live)
        g.live->prev = w;
    g.live = w;
    if (++g.nlive > g.peak_live)
        g.peak_live = g.nlive;
    if (g.hdr)
        attach(w); /* writes the THREAD definition now */
    unlock();
    if (!tls_writer || tls_writer->lazy) /* markers follow the core's writer once it exists */
        tls_writer = w;
    return &w->hot;
}

void perfgroup__rec_thread_name(struct perfgroup_rec_thread *hw, const char *name) {
    struct writer *w = (struct writer *)hw;
    if (!w)
        return;
    if (lock())
        return;
    snprintf(w->name, sizeof w->name, "%s", name ? name : "");
    w->name_explicit = w->name[0] != 0;
    if (g.hdr && w->gen == g.gen)
        thread_def(w);
    unlock();
}

void perfgroup__rec_thread_end(struct perfgroup_rec_thread *hw, uint64_t tsc) {
    struct writer *w = (struct writer *)hw;
    if (!w || w->dead)
        return;
    int saved = errno;
    if (lock())
        return;
    if (g.hdr && w->gen == g.gen) {
        uint8_t rec[16];
        struct span s = { rec, rec + sizeof rec };
        msgpack_packer pk = { &s, span_write };
        msgpack_pack_array(&pk, 2);
        msgpack_pack_uint8(&pk, PGF_REC_THREAD_END);
        msgpack_pack_uint64(&pk, tsc);
        if (reserve_locked(w, (uint32_t)(s.p - rec)) == 0)
            emit(w, rec, (uint32_t)(s.p - rec), tsc);
        finish_chunk(w);
        if (w->reserved >= 0) {
            g.owner[w->reserved] = NULL;
            g.free_stack[g.nfree++] = (uint32_t)w->reserved;
        }
        for (uint32_t i = 0; i < g.chunk_count; i++)
            if (g.owner[i] == w)
                g.owner[i] = NULL;
    }
    totals_end_locked(w);
    g.nlive -= g.nlive != 0;
    if (w->prev)
        w->prev->next = w->next;
    else if (g.live == w)
        g.live = w->next;
    if (w->next)
        w->next->prev = w->prev;
    writer_free(w);
    unlock();
    if (tls_writer == w)
        tls_writer = NULL;
    errno = saved;
}

/* ---- cold data records ------------------------------------------------------------------ */

void perfgroup__rec_event(struct perfgroup_rec_thread *hw, uint32_t name_string_id,
                          uint64_t begin_tsc, uint64_t end_tsc, uint64_t cpu_ns, unsigned flags,
                          const struct perfgroup_rec_group_share *groups, unsigned ngroups) {
    struct writer *w = (struct writer *)hw;
    if (!w)
        return;
    /* A record never spans chunks: an event of more groups than a chunk holds lists the
     * first that fit (in the order they first ran) and says how many it could not
     * (`groups_more`); the whole-run totals hold them all. */
    uint32_t fixed = CLOCK_MAX + 1 + 1 + 5 + 9 + 9 + 9 + 5 + 5 + 5, per = 1 + 5 + 9 + 9 + 9;
    uint32_t room = ((w->chunk_bytes ? w->chunk_bytes : MIN_CHUNK) - PGF_CHUNK_HEADER_SIZE -
                     96 /* reserve_locked: the chunk's opening records */ - fixed) / per;
    unsigned more = ngroups > room ? ngroups - room : 0;
    ngroups -= more;
    uint32_t max = fixed + ngroups * per;
    if (cold_begin(w, max))
        return;
    struct span s = { w->hot.pos, w->hot.pos + max };
    msgpack_packer pk = { &s, span_write };
    /* a clock pair at least once a second of events, besides the one opening each chunk */
    uint64_t hz = estimate_hz();
    if (hz && end_tsc - w->last_clock > hz && end_tsc > w->last_clock) {
        uint64_t t = pack_clock(w, &pk);
        publish(w, s.p, t);
    }
    msgpack_pack_array(&pk, more ? 8 : 7);
    msgpack_pack_uint8(&pk, PGF_REC_EVENT);
    msgpack_pack_uint32(&pk, name_string_id);
    msgpack_pack_uint64(&pk, begin_tsc);
    msgpack_pack_uint64(&pk, end_tsc);
    msgpack_pack_uint64(&pk, cpu_ns);
    msgpack_pack_uint32(&pk, flags);
    msgpack_pack_array(&pk, ngroups);
    for (unsigned i = 0; i < ngroups; i++) {
        msgpack_pack_array(&pk, 4);
        msgpack_pack_uint32(&pk, groups[i].group_id);
        msgpack_pack_uint64(&pk, groups[i].cycles);
        msgpack_pack_uint64(&pk, groups[i].cpu_ns);
        msgpack_pack_uint64(&pk, groups[i].activations);
    }
    if (more)
        msgpack_pack_uint32(&pk, more);
    publish(w, s.p, end_tsc);
    cold_end(w);
}

void perfgroup__rec_marker(struct perfgroup_rec_thread *hw, uint32_t name_string_id,
                           const char *text, uint64_t start_tsc, uint64_t end_tsc) {
    struct writer *w = (struct writer *)hw;
    if (!w)
        return;
    uint32_t tl = (uint32_t)clip(text, MAX_TEXT);
    uint32_t max = 1 + 1 + 5 + 5 + tl + 9 + 9;
    if (cold_begin(w, max))
        return;
    struct span s = { w->hot.pos, w->hot.pos + max };
    msgpack_packer pk = { &s, span_write };
    msgpack_pack_array(&pk, 5);
    msgpack_pack_uint8(&pk, PGF_REC_MARKER);
    msgpack_pack_uint32(&pk, name_string_id);
    pack_str(&pk, text, MAX_TEXT);
    msgpack_pack_uint64(&pk, start_tsc);
    msgpack_pack_uint64(&pk, end_tsc);
    publish(w, s.p, end_tsc);
    cold_end(w);
}

int perfgroup__rec_slots_begin(int make) {
    if (lock())
        return -1;
    if (!g.hdr && g.child_pending && make)
        child_open_locked(); /* a fork child's event open long enough: its file now */
    if (g.hdr && !g.slots && make)
        open_slots_locked();
    if (!g.hdr || !g.slots) {
        unlock();
        return -1;
    }
    return 0;
}

void perfgroup__rec_slot_put(uint32_t thread_index, const struct pgf_open_slot *v) {
    if (thread_index == 0 || thread_index > g.nslots)
        return;
    struct pgf_open_slot *d = &g.slots[thread_index - 1];
    uint32_t seq = __atomic_load_n(&d->seq, __ATOMIC_RELAXED) & ~1u;
    /* release stores keep each after the odd seq (no fence: TSan follows these) */
    __atomic_store_n(&d->seq, seq + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&d->thread, v->thread, __ATOMIC_RELEASE);
    __atomic_store_n(&d->name, v->name, __ATOMIC_RELEASE);
    __atomic_store_n(&d->flags, v->flags, __ATOMIC_RELEASE);
    __atomic_store_n(&d->begin_tsc, v->begin_tsc, __ATOMIC_RELEASE);
    __atomic_store_n(&d->now_tsc, v->now_tsc, __ATOMIC_RELEASE);
    __atomic_store_n(&d->cpu_ns, v->cpu_ns, __ATOMIC_RELEASE);
    __atomic_store_n(&d->tid, v->tid, __ATOMIC_RELEASE);
    __atomic_store_n(&d->ngroups, v->ngroups, __ATOMIC_RELEASE);
    __atomic_store_n(&d->nrunning, v->nrunning, __ATOMIC_RELEASE);
    for (unsigned i = 0; i < PGF_OPEN_GROUPS; i++)
        __atomic_store_n(&d->group[i], i < v->ngroups ? v->group[i] : 0, __ATOMIC_RELEASE);
    __atomic_store_n(&d->seq, seq + 2, __ATOMIC_RELEASE);
}

void perfgroup__rec_slots_end(void) {
    unlock();
}

uint32_t perfgroup__rec_thread_index(const struct perfgroup_rec_thread *hw) {
    return hw ? ((const struct writer *)hw)->index : 0;
}

void perfgroup__rec_overhead(struct perfgroup_rec_thread *hw, uint64_t commit_ns,
                             uint64_t commits, uint64_t slow_paths, uint64_t resyncs,
                             uint64_t dropped) {
    struct writer *w = (struct writer *)hw;
    if (!w)
        return;
    uint32_t max = 1 + 1 + 5 * 9;
    int room = cold_begin(w, max) == 0;
    /* The totals in the header are kept whether or not the record finds room. g.hdr is not
     * read here without g.mu: a close may forget it meanwhile (and a failed open unmaps its
     * own). Inside cold_begin..cold_end the writer is attached and its header stays mapped;
     * without room, the slow path takes the lock (never from inside a record: in_rec). */
    struct pgf_file_header *h = room ? w->hdr : NULL;
    int locked = !room && lock() == 0;
    if (locked)
        h = g.hdr;
    if (h) {
        __atomic_fetch_add(&h->ovh_commit_ns, commit_ns, __ATOMIC_RELAXED);
        __atomic_fetch_add(&h->ovh_commits, commits, __ATOMIC_RELAXED);
        __atomic_fetch_add(&h->ovh_slow_paths, slow_paths, __ATOMIC_RELAXED);
        __atomic_fetch_add(&h->ovh_resyncs, resyncs, __ATOMIC_RELAXED);
        __atomic_fetch_add(&h->ovh_dropped, dropped, __ATOMIC_RELAXED);
        header_counts(h);
    }
    if (locked)
        unlock();
    if (!room)
        return;
    struct span s = { w->hot.pos, w->hot.pos + max };
    msgpack_packer pk = { &s, span_write };
    msgpack_pack_array(&pk, 6);
    msgpack_pack_uint8(&pk, PGF_REC_OVERHEAD);
    msgpack_pack_uint64(&pk, commit_ns);
    msgpack_pack_uint64(&pk, commits);
    msgpack_pack_uint64(&pk, slow_paths);
    msgpack_pack_uint64(&pk, resyncs);
    msgpack_pack_uint64(&pk, dropped);
    settle_last_tsc(w); /* the record has no clock of its own: the last record's stands */
    publish(w, s.p, w->hot.chunk->last_tsc);
    cold_end(w);
}

/* ---- public API --------------------------------------------------------------------------- */

int perfgroup_record_open(const char *path, int mode, uint64_t buffer_bytes,
                          uint32_t chunk_bytes) {
    if (!path || !*path)
        return -EINVAL;
    if (mode != PERFGROUP_RECORD_STATS && mode != PERFGROUP_RECORD_TRACE)
        return -EINVAL;
    char out[PATH_MAX];
    int rc = open_recording(path, (unsigned)mode, buffer_bytes ? buffer_bytes : DEFAULT_BUFFER,
                            chunk_bytes ? chunk_bytes : DEFAULT_CHUNK, out, sizeof out);
    if (rc == 0 && host) /* trace mode: every call reaches the hooks (reentry.c); the
                          * sampler keeps the open events' slots (progress.c) */
        host->recording_changed(1);
    return rc;
}

int perfgroup_record_close(void) {
    if (lock())
        return -EDEADLK;
    int rc = g.hdr || g.child_pending ? 0 : -ENOENT;
    close_locked();
    unlock();
    if (rc == 0 && host)
        host->recording_changed(0); /* out of trace mode: keys again */
    return rc;
}

static void lazy_end(void *p) { perfgroup__rec_thread_end(p, now_tsc()); }
static void lazy_key_init(void) { pthread_key_create(&lazy_key, lazy_end); }

/* The calling thread's writer; one is made for a thread the core never saw. */
static struct writer *current_writer(void) {
    if (tls_writer)
        return tls_writer;
    pthread_once(&lazy_once, lazy_key_init);
    uint32_t idx = PGF_THREAD_INDEX_LAZY + __atomic_fetch_add(&lazy_next, 1, __ATOMIC_RELAXED);
    char name[16] = "";
    pthread_getname_np(pthread_self(), name, sizeof name);
    struct perfgroup_rec_thread *w =
        perfgroup__rec_thread_start(idx, (uint32_t)syscall(SYS_gettid), name);
    if (w) {
        ((struct writer *)w)->lazy = 1;
        pthread_setspecific(lazy_key, w);
    }
    return (struct writer *)w;
}

static int marker(const char *name, const char *text, uint64_t start, uint64_t end) {
    if (!name)
        return -EINVAL;
    if (!__atomic_load_n(&perfgroup__rec_mode, __ATOMIC_RELAXED))
        return -ENOENT;
    struct writer *w = current_writer();
    if (!w)
        return -ENOMEM;
    uint32_t id = perfgroup__rec_string(name);
    if (!id)
        return -ENOMEM;
    perfgroup__rec_marker(&w->hot, id, text ? text : "", start, end);
    return 0;
}

int perfgroup_marker(const char *name, const char *text) {
    uint64_t t = now_tsc();
    return marker(name, text, t, t);
}

uint64_t perfgroup_marker_begin(void) { return now_tsc(); }

int perfgroup_marker_end(const char *name, const char *text, uint64_t begin) {
    uint64_t t = now_tsc();
    if (begin > t)
        return -EINVAL;
    return marker(name, text, begin, t);
}
