/* SPDX-License-Identifier: MIT */
/*
 * runtime/rec_records.c — the recorder's records other than definitions: a thread's writer
 * (start, name, end), committed events, user markers (the public perfgroup_marker*), the
 * open events' slots the sampler writes, and the runtime's own cost (overhead records).
 */
#define _GNU_SOURCE
#include "rec_state.h"

static pthread_key_t lazy_key;
static pthread_once_t lazy_once = PTHREAD_ONCE_INIT;
static uint32_t lazy_next;

/* ---- the writer's slow path: room for a record (a fork child's file made first) ---------- */

int perfgroup__rec_reserve(struct perfgroup_rec_thread *hw, uint32_t need) {
    struct writer *w = (struct writer *)hw;
    if (perfgroup__rec_lock()) {
        __atomic_fetch_add(&perfgroup__rec_nested_drops, 1, __ATOMIC_RELAXED);
        return -1;
    }
    int saved = errno;
    if (!recorder.hdr && recorder.child_pending)
        perfgroup__rec_child_open_locked(); /* a fork child's first record: its file now */
    int rc = perfgroup__rec_reserve_locked(w, need);
    if (rc == 0) /* open the fast path again (the caller re-checks its room) */
        __atomic_store_n(&w->hot.end, w->faulted_end, __ATOMIC_RELAXED);
    perfgroup__rec_unlock();
    errno = saved;
    return rc;
}

/* cold_begin's slow path: room made under the lock (a new chunk, a new file, the thread's
 * name looked at again). Not `cold`: GCC puts cold code in .text.unlikely, which the link
 * places before every file's .text, and this function there moved the hooks by 256 bytes
 * and made bench_hooks' implicit row ~5 ns slower on an Intel Xeon host (docs/benchmarks.md,
 * issue 33's driver: the hot text is that sensitive to where it lies). */
static __attribute__((noinline)) int cold_reserve(struct writer *w, uint32_t need) {
    pthread_mutex_lock(&recorder.mu);
    int saved = errno;
    if (!recorder.hdr && recorder.child_pending)
        perfgroup__rec_child_open_locked();
    int rc = perfgroup__rec_reserve_locked(w, need);
    errno = saved;
    pthread_mutex_unlock(&recorder.mu);
    if (rc) {
        perfgroup__rec_in_rec = 0; /* `end` stays NULL: the next record takes the slow path */
        return -1;
    }
    return 0;
}

/* A cold record of at most `need` bytes is about to be written at w->hot.pos (owner thread
 * only): make room (without the lock when the chunk has it), then lower `end` so that a
 * signal handler's record lands in the slow path (and is dropped) instead of in the middle
 * of this one. 0 = go ahead, then call cold_end; -1 = dropped. now: the caller's counter
 * reading (0: read it), for the thread-name check. Inline in each record's writer: a
 * recorded commit makes no call for these checks, nor for cold_end's. */
static inline __attribute__((always_inline)) int cold_begin(struct writer *w, uint32_t need,
                                                            uint64_t now) {
    if (perfgroup__rec_in_rec) {
        __atomic_fetch_add(&perfgroup__rec_nested_drops, 1, __ATOMIC_RELAXED);
        return -1;
    }
    perfgroup__rec_in_rec = 1;
    __atomic_store_n(&w->hot.end, NULL, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    /* from here no handler writes into w: check and make room */
    if (PG_UNLIKELY(!w->hot.chunk || w->gen != __atomic_load_n(&recorder.gen, __ATOMIC_RELAXED) ||
                    (uintptr_t)w->hot.pos + need > (uintptr_t)w->faulted_end ||
                    perfgroup__rec_name_due(w, now ? now : now_tsc())))
        return cold_reserve(w, need);
    return 0;
}

static inline __attribute__((always_inline)) void cold_end(struct writer *w) {
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    /* not if the recording was closed or replaced meanwhile: then the slow path re-attaches */
    if (w->hot.chunk && w->gen == __atomic_load_n(&recorder.gen, __ATOMIC_RELAXED))
        __atomic_store_n(&w->hot.end, w->faulted_end, __ATOMIC_RELAXED);
    perfgroup__rec_in_rec = 0;
}

/* ---- threads ------------------------------------------------------------------------------ */

struct perfgroup_rec_thread *perfgroup__rec_thread_start(uint32_t thread_index, uint32_t tid,
                                                         const char *name) {
    /* out of memory: a writer that never attaches, so the hot path needs no NULL check */
    static struct writer dead = { .dead = 1, .cur = -1, .reserved = -1, .last_full = -1 };
    char kname[16] = "";
    if (!name || !name[0])
        perfgroup__rec_kernel_name(kname); /* named before its first hook (pthread_setname_np) */
    if (perfgroup__rec_lock())
        return &dead.hot;
    struct writer *w = perfgroup__rec_writer_alloc();
    if (!w) {
        perfgroup__rec_unlock();
        return &dead.hot;
    }
    w->index = thread_index;
    w->tid = tid;
    w->cur = w->reserved = w->last_full = -1;
    snprintf(w->name, sizeof w->name, "%s", name ? name : "");
    w->name_explicit = w->name[0] != 0;
    if (!w->name_explicit)
        snprintf(w->name, sizeof w->name, "%s", kname);
    w->next = recorder.live;
    if (recorder.live)
        recorder.live->prev = w;
    recorder.live = w;
    if (++recorder.nlive > recorder.peak_live)
        recorder.peak_live = recorder.nlive;
    if (recorder.hdr)
        perfgroup__rec_attach(w); /* writes the THREAD definition now */
    perfgroup__rec_unlock();
    if (!perfgroup__rec_tls_writer || perfgroup__rec_tls_writer->lazy) /* markers follow the core's writer once it exists */
        perfgroup__rec_tls_writer = w;
    return &w->hot;
}

void perfgroup__rec_thread_name(struct perfgroup_rec_thread *hw, const char *name) {
    struct writer *w = (struct writer *)hw;
    if (!w)
        return;
    if (perfgroup__rec_lock())
        return;
    snprintf(w->name, sizeof w->name, "%s", name ? name : "");
    w->name_explicit = w->name[0] != 0;
    if (recorder.hdr && w->gen == recorder.gen)
        perfgroup__rec_thread_def(w);
    perfgroup__rec_unlock();
}

void perfgroup__rec_thread_end(struct perfgroup_rec_thread *hw, uint64_t tsc) {
    struct writer *w = (struct writer *)hw;
    if (!w || w->dead)
        return;
    int saved = errno;
    if (perfgroup__rec_lock())
        return;
    if (recorder.hdr && w->gen == recorder.gen) {
        uint8_t rec[16];
        struct span s = { rec, rec + sizeof rec };
        msgpack_packer pk = { &s, span_write };
        msgpack_pack_array(&pk, 2);
        msgpack_pack_uint8(&pk, PGF_REC_THREAD_END);
        msgpack_pack_uint64(&pk, tsc);
        if (perfgroup__rec_reserve_locked(w, (uint32_t)(s.p - rec)) == 0)
            perfgroup__rec_emit(w, rec, (uint32_t)(s.p - rec), tsc);
        perfgroup__rec_finish_chunk(w);
        if (w->reserved >= 0) {
            recorder.owner[w->reserved] = NULL;
            recorder.free_stack[recorder.nfree++] = (uint32_t)w->reserved;
        }
        for (uint32_t i = 0; i < recorder.chunk_count; i++)
            if (recorder.owner[i] == w)
                recorder.owner[i] = NULL;
        recorder.want_now -= w->want <= recorder.want_now ? w->want : recorder.want_now;
        w->want = 0;
    }
    perfgroup__rec_totals_end_locked(w);
    recorder.nlive -= recorder.nlive != 0;
    if (w->prev)
        w->prev->next = w->next;
    else if (recorder.live == w)
        recorder.live = w->next;
    if (w->next)
        w->next->prev = w->prev;
    perfgroup__rec_writer_free(w);
    perfgroup__rec_unlock();
    if (perfgroup__rec_tls_writer == w)
        perfgroup__rec_tls_writer = NULL;
    errno = saved;
}

/* ---- cold data records ------------------------------------------------------------------ */

/* a before b in an event's record: more CPU, then more counter ticks, then the lower id */
static int heavier(const struct perfgroup_rec_group_share *a,
                   const struct perfgroup_rec_group_share *b) {
    if (a->cpu_ns != b->cpu_ns)
        return a->cpu_ns > b->cpu_ns;
    if (a->cycles != b->cycles)
        return a->cycles > b->cycles;
    return a->group_id < b->group_id;
}

static void sift_down(struct perfgroup_rec_group_share *g, unsigned root, unsigned n) {
    for (unsigned c; (c = 2 * root + 1) < n; root = c) {
        if (c + 1 < n && heavier(&g[c], &g[c + 1]))
            c++; /* the lighter child */
        if (!heavier(&g[root], &g[c]))
            return;
        struct perfgroup_rec_group_share x = g[root];
        g[root] = g[c], g[c] = x;
    }
}

/* The event's groups heaviest first, in place and without allocating (a commit): insertion
 * for a few, a heap sort (lightest at the root) for many (an event of 2,000 groups). */
static void heaviest_first(struct perfgroup_rec_group_share *g, unsigned n) {
    if (n <= 16) {
        for (unsigned i = 1; i < n; i++) {
            struct perfgroup_rec_group_share x = g[i];
            unsigned j = i;
            for (; j > 0 && heavier(&x, &g[j - 1]); j--)
                g[j] = g[j - 1];
            g[j] = x;
        }
        return;
    }
    for (unsigned i = n / 2; i-- > 0;)
        sift_down(g, i, n);
    for (unsigned end = n; end-- > 1;) {
        struct perfgroup_rec_group_share x = g[0];
        g[0] = g[end], g[end] = x;
        sift_down(g, 0, end);
    }
}

void perfgroup__rec_event(struct perfgroup_rec_thread *hw, uint32_t name_string_id,
                          uint64_t begin_tsc, uint64_t end_tsc, uint64_t cpu_ns, unsigned flags,
                          struct perfgroup_rec_group_share *groups, unsigned ngroups) {
    struct writer *w = (struct writer *)hw;
    if (!w)
        return;
    /* A record never spans chunks: its groups heaviest first (sorted in place), and an
     * event of more groups than a chunk holds lists the heaviest that fit and says how many
     * it could not (`groups_more`); the whole-run totals hold them all. */
    heaviest_first(groups, ngroups);
    uint32_t fixed = CLOCK_MAX + PG_REC_EVENT_FIXED, per = PG_REC_EVENT_PER;
    uint32_t room = ((w->chunk_bytes ? w->chunk_bytes : MIN_CHUNK) - PGF_CHUNK_HEADER_SIZE -
                     96 /* reserve_locked: the chunk's opening records */ - fixed) / per;
    unsigned more = ngroups > room ? ngroups - room : 0;
    ngroups -= more;
    uint32_t max = fixed + ngroups * per;
    if (cold_begin(w, max, end_tsc))
        return;
    uint8_t *p = w->hot.pos;
    /* a clock pair at least once a second of events, besides the one opening each chunk */
    uint64_t hz = estimate_hz();
    if (hz && end_tsc - w->last_clock > hz && end_tsc > w->last_clock) {
        struct span s = { p, p + CLOCK_MAX };
        msgpack_packer pk = { &s, span_write };
        uint64_t t = perfgroup__rec_pack_clock(w, &pk);
        perfgroup__rec_publish(w, p = s.p, t);
    }
    p = perfgroup__rec_event_put(p, name_string_id, begin_tsc, end_tsc, cpu_ns, flags, groups,
                                 ngroups, more);
    perfgroup__rec_publish(w, p, end_tsc);
    cold_end(w);
}

void perfgroup__rec_marker(struct perfgroup_rec_thread *hw, uint32_t name_string_id,
                           const char *text, uint64_t start_tsc, uint64_t end_tsc) {
    struct writer *w = (struct writer *)hw;
    if (!w)
        return;
    uint32_t tl = (uint32_t)clip(text, MAX_TEXT);
    uint32_t max = 1 + 1 + 5 + 5 + tl + 9 + 9;
    if (cold_begin(w, max, end_tsc))
        return;
    struct span s = { w->hot.pos, w->hot.pos + max };
    msgpack_packer pk = { &s, span_write };
    msgpack_pack_array(&pk, 5);
    msgpack_pack_uint8(&pk, PGF_REC_MARKER);
    msgpack_pack_uint32(&pk, name_string_id);
    pack_str(&pk, text, MAX_TEXT);
    msgpack_pack_uint64(&pk, start_tsc);
    msgpack_pack_uint64(&pk, end_tsc);
    perfgroup__rec_publish(w, s.p, end_tsc);
    cold_end(w);
}

int perfgroup__rec_slots_begin(int make) {
    if (perfgroup__rec_lock())
        return -1;
    if (!recorder.hdr && recorder.child_pending && make)
        perfgroup__rec_child_open_locked(); /* a fork child's event open long enough: its file now */
    if (recorder.hdr && !recorder.slots && make)
        perfgroup__rec_open_slots_locked();
    if (!recorder.hdr || !recorder.slots) {
        perfgroup__rec_unlock();
        return -1;
    }
    return 0;
}

void perfgroup__rec_slot_put(uint32_t thread_index, const struct pgf_open_slot *v) {
    if (thread_index == 0 || thread_index > recorder.nslots)
        return;
    struct pgf_open_slot *d = &recorder.slots[thread_index - 1];
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
    perfgroup__rec_unlock();
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
    int room = cold_begin(w, max, 0) == 0;
    /* The totals in the header are kept whether or not the record finds room. recorder.hdr is not
     * read here without recorder.mu: a close may forget it meanwhile (and a failed open unmaps its
     * own). Inside cold_begin..cold_end the writer is attached and its header stays mapped;
     * without room, the slow path takes the lock (never from inside a record: perfgroup__rec_in_rec). */
    struct pgf_file_header *h = room ? w->hdr : NULL;
    int locked = !room && perfgroup__rec_lock() == 0;
    if (locked)
        h = recorder.hdr;
    if (h) {
        __atomic_fetch_add(&h->ovh_commit_ns, commit_ns, __ATOMIC_RELAXED);
        __atomic_fetch_add(&h->ovh_commits, commits, __ATOMIC_RELAXED);
        __atomic_fetch_add(&h->ovh_slow_paths, slow_paths, __ATOMIC_RELAXED);
        __atomic_fetch_add(&h->ovh_resyncs, resyncs, __ATOMIC_RELAXED);
        __atomic_fetch_add(&h->ovh_dropped, dropped, __ATOMIC_RELAXED);
        perfgroup__rec_header_counts(h);
    }
    if (locked)
        perfgroup__rec_unlock();
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
    perfgroup__rec_settle_last_tsc(w); /* the record has no clock of its own: the last record's stands */
    perfgroup__rec_publish(w, s.p, w->hot.chunk->last_tsc);
    cold_end(w);
}

/* ---- public API: markers ------------------------------------------------------------- */

static void lazy_end(void *p) { perfgroup__rec_thread_end(p, now_tsc()); }
static void lazy_key_init(void) { pthread_key_create(&lazy_key, lazy_end); }

/* The calling thread's writer; one is made for a thread the core never saw. */
static struct writer *current_writer(void) {
    if (perfgroup__rec_tls_writer)
        return perfgroup__rec_tls_writer;
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
