/* SPDX-License-Identifier: MIT */
/*
 * runtime/rec_defs.c — the recorder's definitions: groups, functions, strings (interned) and
 * the process and thread definitions of a file. Groups, functions and strings are appended
 * to an in-memory log, replayed into every new file (a later recording, a fork()ed child's),
 * and written to DEFS chunks, never recycled. Also the recorder's memory: the arena its
 * strings and writers live in (base.h), never malloc.
 */
#define _GNU_SOURCE
#include "rec_state.h"

/* ---- definitions ------------------------------------------------------------------------ */

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

/* Write the one record at bytes [from, to) of the log into a DEFS chunk. recorder.mu held. */
static void defs_put(size_t from, size_t to) {
    if (!recorder.hdr || to - from > UINT32_MAX)
        return;
    if (perfgroup__rec_reserve_locked(&recorder.defs, (uint32_t)(to - from)) == 0)
        perfgroup__rec_emit(&recorder.defs, recorder.log + from, (uint32_t)(to - from), now_tsc());
}

/* Append one definition record to the log with the packer, then to the file. recorder.mu held. */
#define DEF_BEGIN()                                                     \
    size_t start_ = recorder.log_len;                                          \
    struct grow gr_ = { &recorder.log, &recorder.log_len, &recorder.log_cap, 0 };            \
    msgpack_packer pk_ = { &gr_, grow_write };                          \
    msgpack_packer *pk = &pk_
#define DEF_END()                                                       \
    do {                                                                \
        if (gr_.oom) {                                                  \
            recorder.log_len = start_;                                         \
            break;                                                      \
        }                                                               \
        defs_put(start_, recorder.log_len);                                 \
    } while (0)

void perfgroup__rec_group(uint32_t group_id, const char *name, int kind, int active) {
    if (perfgroup__rec_lock())
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
    perfgroup__rec_unlock();
}

void perfgroup__rec_function(uint32_t function_id, const char *function, const char *file,
                             uint32_t line, const char *module, const uint32_t *group_ids,
                             unsigned ngroups) {
    if (perfgroup__rec_lock())
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
    perfgroup__rec_unlock();
}

/*
 * Memory the recorder takes while a thread may be in a signal handler (a hook there can be a
 * thread's first, or commit an event with a new name): never malloc, which may hold its lock
 * in the interrupted code. Under recorder.mu: a bump arena of anonymous pages (zeroed, never given
 * back: strings and writers live as long as the process) and a free list of writers.
 */
static struct pg_arena arena = {NULL, NULL, 64u << 10};
static struct writer *writers_free;

PG_HIDDEN struct writer *perfgroup__rec_writer_alloc(void) {
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

PG_HIDDEN void perfgroup__rec_writer_free(struct writer *w) {
    w->next = writers_free;
    writers_free = w;
}

uint32_t perfgroup__rec_string(const char *text) {
    if (!text)
        text = "";
    uint32_t h = pg_hash_str(text, PG_HASH_SEED), id = 0;
    if (perfgroup__rec_lock())
        return 0;
    if (recorder.str_count * 2 >= recorder.str_cap) {
        uint32_t nc = recorder.str_cap ? recorder.str_cap * 2 : 64;
        struct str_ent *ns = perfgroup__map(nc * sizeof *ns); /* zeroed; no malloc here */
        if (!ns)
            goto out;
        for (uint32_t i = 0; i < recorder.str_cap; i++)
            if (recorder.strs[i].text) {
                uint32_t j = recorder.strs[i].hash & (nc - 1);
                while (ns[j].text)
                    j = (j + 1) & (nc - 1);
                ns[j] = recorder.strs[i];
            }
        if (recorder.strs)
            munmap(recorder.strs, recorder.str_cap * sizeof *recorder.strs);
        recorder.strs = ns;
        recorder.str_cap = nc;
    }
    uint32_t j = h & (recorder.str_cap - 1);
    for (; recorder.strs[j].text; j = (j + 1) & (recorder.str_cap - 1))
        if (recorder.strs[j].hash == h && strcmp(recorder.strs[j].text, text) == 0) {
            id = recorder.strs[j].id;
            goto out;
        }
    char *copy = perfgroup__arena_alloc(&arena, strnlen(text, MAX_TEXT) + 1);
    if (!copy)
        goto out;
    memcpy(copy, text, strnlen(text, MAX_TEXT)); /* the arena's memory is zeroed */
    id = ++recorder.str_count;
    recorder.strs[j] = (struct str_ent){ copy, id, h };
    {
        DEF_BEGIN();
        msgpack_pack_array(pk, 3);
        msgpack_pack_uint8(pk, PGF_REC_STRING);
        msgpack_pack_uint32(pk, id);
        pack_str(pk, copy, MAX_TEXT);
        DEF_END();
    }
out:
    perfgroup__rec_unlock();
    return id;
}

PG_HIDDEN void perfgroup__rec_process_def(void) {
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    struct grow gr = { &buf, &len, &cap, 0 };
    msgpack_packer pk = { &gr, grow_write };
    char args[8192];
    ssize_t n = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        /* the whole record must fit a chunk */
        size_t max = recorder.chunk_size / 2 < sizeof args - 1 ? recorder.chunk_size / 2 : sizeof args - 1;
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
    msgpack_pack_uint32(&pk, recorder.hdr->pid);
    msgpack_pack_uint32(&pk, recorder.hdr->ppid);
    pack_str(&pk, recorder.hdr->program, sizeof recorder.hdr->program - 1);
    msgpack_pack_array(&pk, nargs);
    for (ssize_t i = 0; i < n; i += (ssize_t)strlen(args + i) + 1)
        pack_str(&pk, args + i, MAX_TEXT);
    msgpack_pack_int64(&pk, recorder.hdr->start_realtime_ns);
    msgpack_pack_int64(&pk, recorder.hdr->start_monotonic_ns);
    msgpack_pack_uint64(&pk, recorder.hdr->start_tsc);
    msgpack_pack_uint64(&pk, recorder.hdr->tsc_hz);
    msgpack_pack_uint32(&pk, recorder.hdr->mode);
    pack_str(&pk, RUNTIME_VERSION, 64);
    if (!gr.oom && len <= UINT32_MAX && perfgroup__rec_reserve_locked(&recorder.defs, (uint32_t)len) == 0)
        perfgroup__rec_emit(&recorder.defs, buf, (uint32_t)len, recorder.hdr->start_tsc);
    if (buf)
        munmap(buf, cap);
}

/* The open events' chunk (format.h, PGF_CHUNK_OPEN): taken once per file when the first
 * slot is written (a file whose events all end within a period has none), never sealed or
 * recycled (it is in no heap), its slots all empty. None if the file has no chunk left. */
PG_HIDDEN void perfgroup__rec_open_slots_locked(void) {
    int32_t idx = perfgroup__rec_take_chunk(NULL, 1);
    if (idx < 0)
        return;
    struct pgf_chunk_header *c = perfgroup__rec_chunk_at((uint32_t)idx);
    uint64_t t = now_tsc();
    memset((uint8_t *)c + PGF_CHUNK_HEADER_SIZE, 0, recorder.chunk_size - PGF_CHUNK_HEADER_SIZE);
    c->kind = PGF_CHUNK_OPEN;
    c->state = PGF_CSTATE_WRITING;
    c->seq = __atomic_fetch_add(&recorder.hdr->next_seq, 1, __ATOMIC_RELAXED);
    c->thread = PGF_THREAD_DEFS;
    c->crc32c = 0;
    c->record_count = 0;
    c->first_tsc = c->last_tsc = t;
    c->dropped_before = c->records_before = 0;
    __atomic_store_n(&c->committed, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&c->magic, PGF_CHUNK_MAGIC, __ATOMIC_RELEASE);
    recorder.slots = (struct pgf_open_slot *)((uint8_t *)c + PGF_CHUNK_HEADER_SIZE);
    recorder.nslots = (recorder.chunk_size - PGF_CHUNK_HEADER_SIZE) / (uint32_t)sizeof(struct pgf_open_slot);
}

/* Replay the definitions log record by record (records are self-delimiting msgpack). */
PG_HIDDEN void perfgroup__rec_replay_log(void) {
    size_t off = 0;
    while (off < recorder.log_len) {
        msgpack_unpacked u;
        msgpack_unpacked_init(&u);
        size_t next = off;
        if (msgpack_unpack_next(&u, (const char *)recorder.log, recorder.log_len, &next) !=
            MSGPACK_UNPACK_SUCCESS) {
            msgpack_unpacked_destroy(&u);
            return;
        }
        msgpack_unpacked_destroy(&u);
        defs_put(off, next);
        off = next;
    }
}
