/* SPDX-License-Identifier: MIT */
/*
 * runtime/rec_buffer.c — the recorder's chunk buffer: msgpack records into a file-backed,
 * size-limited chunk buffer (layout and chunk life in include/perfgroup/format.h, docs/file-format.md).
 *
 * The file is the buffer. It is created at its full size and mapped MAP_SHARED once; every
 * committed record is in the page cache when its chunk's `committed` is stored, so it
 * survives SIGKILL. Each thread writes into its own current chunk without lock or syscall
 * (the inline perfgroup__rec_interval in record.h, and the cold record writers of
 * rec_records.c when they fit). Everything else runs under one mutex, off the hot path:
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
 *                            (rec_defs.c)
 *
 * Recordings have a generation: closing or reopening bumps it and lowers every writer's
 * `end`, so each thread's next write lands in the slow path and re-attaches. A closed
 * recording's mapping is never unmapped (another thread may be in the middle of a record;
 * the address space of one recording per open/close cycle is the price).
 *
 * The rest of the recorder: rec_state.h lists its files. Not instrumented itself: the
 * runtime is built without the plugins.
 */
#define _GNU_SOURCE
#include "rec_state.h"

int perfgroup__rec_mode;

struct pg_recorder perfgroup__recorder = { .mu = PTHREAD_MUTEX_INITIALIZER, .fd = -1 };

PG_HIDDEN PG_REC_TLS struct writer *perfgroup__rec_tls_writer;
PG_HIDDEN PG_REC_TLS int perfgroup__rec_in_rec;
PG_HIDDEN PG_REC_TLS uint64_t perfgroup__rec_nested_drops;
/* ---- chunks ---------------------------------------------------------------------------- */

PG_HIDDEN struct pgf_chunk_header *perfgroup__rec_chunk_at(uint32_t idx) {
    return (struct pgf_chunk_header *)(recorder.map + recorder.hdr->chunks_offset + (size_t)idx * recorder.chunk_size);
}

static void heap_push(uint64_t seq, uint32_t idx) {
    uint32_t i = recorder.nheap++;
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (recorder.heap[parent].seq <= seq)
            break;
        recorder.heap[i] = recorder.heap[parent];
        i = parent;
    }
    recorder.heap[i] = (struct heap_ent){ seq, idx };
}

static uint32_t heap_pop(void) {
    uint32_t top = recorder.heap[0].idx;
    struct heap_ent last = recorder.heap[--recorder.nheap];
    uint32_t i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= recorder.nheap)
            break;
        if (c + 1 < recorder.nheap && recorder.heap[c + 1].seq < recorder.heap[c].seq)
            c++;
        if (last.seq <= recorder.heap[c].seq)
            break;
        recorder.heap[i] = recorder.heap[c];
        i = c;
    }
    if (recorder.nheap)
        recorder.heap[i] = last;
    return top;
}

/* FULL chunks a recycling passes over because each holds its owner's newest records (at
 * most one per writer): 32 x 16 bytes of stack in the slow path. */
#define PG_REC_KEEP 32

/* Does FULL chunk idx hold its owner's newest records: its owner's last FULL chunk, with
 * nothing written in the owner's current chunk since its opening records (or none)? */
static int holds_newest(uint32_t idx) {
    struct writer *ow = recorder.owner[idx];
    return ow && ow->gen == recorder.gen && ow->last_full == (int32_t)idx &&
           (ow->cur < 0 || __atomic_load_n(&perfgroup__rec_chunk_at((uint32_t)ow->cur)->committed,
                                           __ATOMIC_ACQUIRE) == ow->open_committed);
}

/* Take a chunk for w: a free one, else recycle the oldest FULL DATA chunk. The chunk is
 * invalidated (magic 0: readers skip it); WHOLE: its pages are touched now, so the writer
 * never faults on them (else its first page only, the rest as it fills: fault_through).
 * -1 when every chunk is owned (WRITING or reserved) or DEFS. */
PG_HIDDEN int32_t perfgroup__rec_take_chunk(struct writer *w, int whole) {
    uint32_t idx;
    struct pgf_chunk_header *c;
    if (recorder.nfree) {
        idx = recorder.free_stack[recorder.nfree - 1];
        /* the file grows a chunk at a time: its blocks are allocated when it is first taken
         * (a full disk here is a dropped record, not a SIGBUS in the host later) */
        int rc = posix_fallocate(recorder.fd, (off_t)(recorder.hdr->chunks_offset + (uint64_t)idx * recorder.chunk_size),
                                 (off_t)recorder.chunk_size);
        if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL)
            return -1; /* the caller counts the record it could not write */
        recorder.nfree--;
        c = perfgroup__rec_chunk_at(idx);
    } else if (recorder.nheap) {
        /* The oldest FULL chunk that does not hold its owner's newest records (an owner
         * descheduled for long has not written into its next chunk yet): a thread's newest
         * whole records survive recycling whatever its pace, and so do those of every
         * other thread stalled so at once (recording.stalled; keeping only the oldest
         * one's lost the second's in recording.kill), up to PG_REC_KEEP of them; the last
         * FULL chunk is recycled all the same. */
        struct heap_ent kept[PG_REC_KEEP];
        uint32_t nkept = 0;
        idx = heap_pop();
        while (recorder.nheap && nkept < PG_REC_KEEP && holds_newest(idx)) {
            kept[nkept++] = (struct heap_ent){ perfgroup__rec_chunk_at(idx)->seq, idx };
            idx = heap_pop();
        }
        for (uint32_t k = 0; k < nkept; k++)
            heap_push(kept[k].seq, kept[k].idx);
        c = perfgroup__rec_chunk_at(idx);
        __atomic_store_n(&c->magic, 0, __ATOMIC_RELEASE);
        struct writer *o = recorder.owner[idx];
        if (o && o->gen == recorder.gen) {
            o->lost_records += c->record_count;
            o->lost_bytes += c->committed;
            o->lost_chunks++;
        }
        __atomic_fetch_add(&recorder.hdr->chunks_recycled, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&recorder.hdr->records_dropped, c->record_count, __ATOMIC_RELAXED);
    } else {
        return -1;
    }
    c->kind = PGF_CHUNK_FREE;
    c->state = 0;
    recorder.owner[idx] = w;
    /* pre-fault: one store per page past the header (the chunk is ours and invisible).
     * MADV_POPULATE_WRITE measured no faster here (docs/benchmarks.md). */
    volatile uint8_t *p = (volatile uint8_t *)c;
    for (uint32_t off = 4096; whole && off < recorder.chunk_size; off += 4096)
        p[off] = 0;
    return (int32_t)idx;
}

/* w's current chunk faulted in through `want` (the slow path, before the fast path may write
 * there): at least doubling what is, so a chunk that fills takes a handful of such calls. A
 * thread that writes a few records holds one chunk of which one or two pages are resident. */
static void fault_through(struct writer *w, const uint8_t *want) {
    if (want <= w->faulted_end)
        return;
    uint8_t *base = (uint8_t *)w->hot.chunk;
    size_t have = (size_t)(w->faulted_end - base);
    size_t to = ((size_t)(want - base) + 4095) & ~(size_t)4095;
    if (to < 2 * have)
        to = 2 * have;
    if (to > recorder.chunk_size)
        to = recorder.chunk_size;
    volatile uint8_t *p = base;
    for (size_t off = have; off < to; off += 4096)
        p[off] = 0; /* past `committed`, unseen by readers */
    w->faulted_end = base + to;
}

/* A chunk for the thread definitions (recorder.tdefs): a new one while they hold less than a
 * quarter of the buffer, else the oldest whose threads have all ended and kept no data
 * chunk (their definitions describe nothing in the file any more). -1: none. */
static int tdefs_needed(const struct tdef_range *r) {
    for (struct writer *w = recorder.live; w; w = w->next)
        if (!w->dead && w->index >= r->min && w->index <= r->max)
            return 1;
    for (uint32_t j = 0; j < recorder.chunk_count; j++) {
        const struct pgf_chunk_header *c = perfgroup__rec_chunk_at(j);
        if (c->magic == PGF_CHUNK_MAGIC && c->kind == PGF_CHUNK_DATA && c->thread >= r->min &&
            c->thread <= r->max)
            return 1;
    }
    return 0;
}

static int32_t take_tdefs(struct writer *w) {
    uint32_t cap = recorder.chunk_count / 4 ? recorder.chunk_count / 4 : 1;
    if (recorder.ntdefs < cap) {
        int32_t idx = perfgroup__rec_take_chunk(w, 1);
        if (idx >= 0) {
            recorder.ntdefs++;
            recorder.tdr[idx] = (struct tdef_range){ 0, 0, 0 };
        }
        return idx;
    }
    int32_t best = -1;
    for (uint32_t j = 0; j < recorder.chunk_count; j++) {
        struct pgf_chunk_header *c = perfgroup__rec_chunk_at(j);
        if (recorder.owner[j] != w || !recorder.tdr[j].used || c->state != PGF_CSTATE_FULL ||
            (best >= 0 && perfgroup__rec_chunk_at((uint32_t)best)->seq < c->seq) || tdefs_needed(&recorder.tdr[j]))
            continue;
        best = (int32_t)j;
    }
    if (best >= 0) {
        __atomic_store_n(&perfgroup__rec_chunk_at((uint32_t)best)->magic, 0, __ATOMIC_RELEASE);
        recorder.tdr[best] = (struct tdef_range){ 0, 0, 0 };
    }
    return best;
}

static void start_chunk(struct writer *w, int32_t idx, int whole) {
    struct pgf_chunk_header *c = perfgroup__rec_chunk_at((uint32_t)idx);
    uint64_t t = now_tsc();
    c->kind = w->is_defs ? PGF_CHUNK_DEFS : PGF_CHUNK_DATA;
    c->state = PGF_CSTATE_WRITING;
    c->seq = __atomic_fetch_add(&recorder.hdr->next_seq, 1, __ATOMIC_RELAXED);
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
    w->chunk_end = (uint8_t *)c + recorder.chunk_size;
    w->faulted_end = whole ? w->chunk_end : (uint8_t *)c + 4096; /* the header's page: ours */
    /* `end` stays NULL until the slow path is done (perfgroup__rec_reserve, cold_end): a
     * signal handler's record meanwhile goes to the slow path, is refused and counted */
}

/* last_tsc of a chunk whose newest records are intervals (which do not store it): the end
 * of the last one, read back from its fixed bytes (format.h) if they are what they should
 * be (a signal handler's record nested into the hook's could have garbled them). */
PG_HIDDEN void perfgroup__rec_settle_last_tsc(struct writer *w) {
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
PG_HIDDEN void perfgroup__rec_finish_chunk(struct writer *w) {
    if (w->cur < 0)
        return;
    struct pgf_chunk_header *c = w->hot.chunk;
    /* no record may join the chunk (a signal handler's) once its checksum is taken */
    __atomic_store_n(&w->hot.end, NULL, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    perfgroup__rec_settle_last_tsc(w);
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
PG_HIDDEN void perfgroup__rec_emit(struct writer *w, const uint8_t *rec, uint32_t len, uint64_t tsc) {
    memcpy(w->hot.pos, rec, len);
    w->hot.pos += len;
    w->hot.chunk->record_count++;
    w->hot.chunk->last_tsc = tsc;
    w->cold_committed = (uint32_t)(w->hot.pos - w->hot.data);
    __atomic_store_n(&w->hot.chunk->committed, w->cold_committed, __ATOMIC_RELEASE);
}



/*
 * A signal handler may run instrumented code on a thread that is inside the recorder (in a
 * chunk switch holding the mutex, or writing a cold record). Such a nested call must not
 * wait for the mutex its own thread holds, nor put bytes in the middle of a record being
 * written: perfgroup__rec_lock() refuses it, and the record is dropped and counted (perfgroup__rec_nested_drops, folded
 * into the thread's drop counts at its next chunk switch).
 */

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

void perfgroup__rec_host(const struct perfgroup_rec_host *h) { recorder.host = h; }

PG_HIDDEN void perfgroup__rec_header_counts(struct pgf_file_header *h)
{
    if (!recorder.host)
        return;
    store_max(&h->refused, atomic_load_explicit(recorder.host->refused, memory_order_relaxed));
    store_max(&h->clamped, atomic_load_explicit(recorder.host->clamped, memory_order_relaxed));
}

PG_HIDDEN int perfgroup__rec_lock(void) {
    if (perfgroup__rec_in_rec)
        return -1;
    perfgroup__rec_in_rec = 1;
    pthread_mutex_lock(&recorder.mu);
    return 0;
}

PG_HIDDEN void perfgroup__rec_unlock(void) {
    pthread_mutex_unlock(&recorder.mu);
    perfgroup__rec_in_rec = 0;
}

/* PGF_REC_THREAD for w into the current file (not logged: written on each attach). */
PG_HIDDEN void perfgroup__rec_thread_def(struct writer *w) {
    if (!recorder.hdr)
        return;
    uint8_t rec[THREAD_DEF_MAX];
    struct span s = { rec, rec + sizeof rec };
    msgpack_packer pk = { &s, span_write };
    msgpack_pack_array(&pk, 4);
    msgpack_pack_uint8(&pk, PGF_REC_THREAD);
    msgpack_pack_uint32(&pk, w->index);
    msgpack_pack_uint32(&pk, w->tid);
    char unnamed[32]; /* a stable name for a thread nobody named: no profile has "" */
    snprintf(unnamed, sizeof unnamed, "thread %u", w->tid);
    pack_str(&pk, w->name[0] ? w->name : unnamed, sizeof w->name - 1);
    if (perfgroup__rec_reserve_locked(&recorder.tdefs, (uint32_t)(s.p - rec)) != 0) {
        if (!w->no_def)
            recorder.threads_undefined++;
        w->no_def = 1; /* its records are dropped (counted) until a definition fits */
        return;
    }
    struct tdef_range *r = &recorder.tdr[recorder.tdefs.cur];
    if (!r->used++ || w->index < r->min)
        r->min = w->index;
    if (r->used == 1 || w->index > r->max)
        r->max = w->index;
    w->no_def = 0;
    perfgroup__rec_emit(&recorder.tdefs, rec, (uint32_t)(s.p - rec), now_tsc());
}

/* Forget any chunk of an older recording. */
PG_HIDDEN void perfgroup__rec_attach(struct writer *w) {
    w->gen = recorder.gen;
    w->chunk_bytes = recorder.chunk_size;
    w->hdr = recorder.hdr;
    w->cur = w->reserved = w->last_full = -1;
    w->records_before = w->dropped_total = 0;
    w->lost_records = w->lost_bytes = w->lost_chunks = 0;
    w->want = 0;
    w->last_cpu_read = 0; /* a file's first CLOCK of the thread reads its CPU clock */
    w->hot.chunk = NULL;
    w->hot.pos = w->hot.data = NULL;
    __atomic_store_n(&w->hot.end, NULL, __ATOMIC_RELAXED);
    if (w == &recorder.defs)
        recorder.defs_need = recorder.defs_fill = 0;
    if (!w->is_defs)
        perfgroup__rec_thread_def(w);
}

/* w asks for n chunks of this file at once (writer.want): the live writers' sum, and its
 * peak, which the close-time warning's buffer holds (rec_file.c). A writer that found no
 * chunk, or no room for its definition, counts 2: with room it could have filled one and
 * asked for its next. */
static void want(struct writer *w, uint32_t n) {
    if (n <= w->want)
        return;
    recorder.want_now += n - w->want;
    w->want = n;
    if (recorder.want_now > recorder.want_peak)
        recorder.want_peak = recorder.want_now;
}

static void count_drop(struct writer *w) {
    w->dropped_total++;
    w->lost_records++;
    __atomic_fetch_add(&recorder.hdr->records_dropped, 1, __ATOMIC_RELAXED);
}

/* A PGF_REC_CLOCK record (at most CLOCK_MAX bytes, rec_state.h) of the calling thread, now. */
PG_HIDDEN uint64_t perfgroup__rec_pack_clock(struct writer *w, msgpack_packer *pk) {
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
PG_HIDDEN void perfgroup__rec_kernel_name(char out[16]) {
    out[0] = 0;
    if (prctl(PR_GET_NAME, out, 0, 0, 0) != 0) {
        out[0] = 0;
        return;
    }
    out[15] = 0;
    if (strncmp(out, program_invocation_short_name, 15) == 0)
        out[0] = 0;
}

/* At a chunk switch or a cold record (event, marker) of the thread's own writer, at most
 * once a millisecond: a new name from pthread_setname_np/prctl becomes a new
 * PGF_REC_THREAD (recorder.mu held). */
static void refresh_name(struct writer *w, uint64_t now) {
    if (!perfgroup__rec_name_due(w, now))
        return;
    w->last_name_check = now;
    char n[16];
    perfgroup__rec_kernel_name(n);
    if (n[0] && strcmp(n, w->name) != 0) {
        snprintf(w->name, sizeof w->name, "%s", n);
        perfgroup__rec_thread_def(w);
    }
}

/* The slow path proper (recorder.mu held). */

PG_HIDDEN int perfgroup__rec_reserve_locked(struct writer *w, uint32_t need) {
    if (w->dead)
        return -1;
    if (!recorder.hdr) {
        if (w->gen) {
            w->gen = 0;
            w->hot.chunk = NULL;
            w->hot.pos = w->hot.data = NULL;
            __atomic_store_n(&w->hot.end, NULL, __ATOMIC_RELAXED);
        }
        return -1;
    }
    if (w->gen != recorder.gen)
        perfgroup__rec_attach(w);
    if (w == &recorder.defs && need <= recorder.chunk_size - PGF_CHUNK_HEADER_SIZE) {
        /* packed as below, whether or not a chunk is there for it */
        if (!recorder.defs_need || recorder.defs_fill + need > recorder.chunk_size - PGF_CHUNK_HEADER_SIZE) {
            recorder.defs_need++;
            recorder.defs_fill = 0;
        }
        recorder.defs_fill += need;
    }
    if (!w->is_defs)
        refresh_name(w, now_tsc());
    if (!w->is_defs && w->no_def) {
        perfgroup__rec_thread_def(w); /* again: an old thread's definitions may have made room */
        if (w->no_def) {
            want(w, 2); /* as one that found no chunk (want) */
            count_drop(w);
            return -1;
        }
    }
    if (!w->is_defs && perfgroup__rec_nested_drops) {
        /* one instruction each: a handler may count one more while this runs */
        uint64_t n = __atomic_exchange_n(&perfgroup__rec_nested_drops, 0, __ATOMIC_RELAXED);
        w->dropped_total += n;
        w->lost_records += n;
        __atomic_fetch_add(&recorder.hdr->records_dropped, n, __ATOMIC_RELAXED);
    }
    if (w->hot.chunk && (uintptr_t)w->hot.pos + need <= (uintptr_t)w->chunk_end) {
        fault_through(w, w->hot.pos + need);
        return 0;
    }
    /* 64 bytes cover the CLOCK and DROPPED records that open a data chunk */
    if (need > recorder.chunk_size - PGF_CHUNK_HEADER_SIZE - (w->is_defs ? 0 : 96)) {
        count_drop(w);
        return -1;
    }
    perfgroup__rec_finish_chunk(w);
    /* a thread's first chunk is faulted in as it fills (most of thousands of threads write
     * a few records); a reserved one (a thread that filled one) was touched whole */
    int whole = w->reserved >= 0 || w->is_defs || w->records_before;
    int32_t idx = w->reserved >= 0 ? w->reserved : w == &recorder.tdefs ? take_tdefs(w) : perfgroup__rec_take_chunk(w, whole);
    w->reserved = -1;
    if (!w->is_defs)
        want(w, idx < 0 || w->records_before ? 2 : 1);
    if (idx < 0) {
        if (w == &recorder.tdefs)
            return -1; /* counted by thread_def */
        if (!w->is_defs && !w->starved && !w->records_before) {
            w->starved = 1; /* a thread that never got a chunk: counted, warned at close */
            recorder.threads_starved++;
        }
        count_drop(w);
        return -1;
    }
    start_chunk(w, idx, whole);
    if (!w->is_defs) {
        uint8_t rec[96];
        struct span s = { rec, rec + sizeof rec };
        msgpack_packer pk = { &s, span_write };
        uint64_t t = perfgroup__rec_pack_clock(w, &pk);
        uint8_t *mid = s.p;
        if (w->lost_records || w->lost_chunks) {
            msgpack_pack_array(&pk, 4);
            msgpack_pack_uint8(&pk, PGF_REC_DROPPED);
            msgpack_pack_uint64(&pk, w->lost_records);
            msgpack_pack_uint64(&pk, w->lost_bytes);
            msgpack_pack_uint64(&pk, w->lost_chunks);
            w->lost_records = w->lost_bytes = w->lost_chunks = 0;
        }
        perfgroup__rec_emit(w, rec, (uint32_t)(mid - rec), t);
        if (s.p != mid)
            perfgroup__rec_emit(w, mid, (uint32_t)(s.p - mid), t);
        w->open_committed = (uint32_t)(w->hot.pos - w->hot.data);
        uint64_t hz = estimate_hz();
        if (hz)
            __atomic_store_n(&recorder.hdr->tsc_hz, hz, __ATOMIC_RELAXED);
        /* a thread that filled a chunk asks for its next one now, before this one is full
         * (pre-faulted here, off its hot path); one that has not holds a single chunk, so
         * the buffer holds a chunk for thousands of threads that write a little each */
        if (w->records_before)
            w->reserved = perfgroup__rec_take_chunk(w, 1);
    }
    fault_through(w, w->hot.pos + need);
    return 0;
}
