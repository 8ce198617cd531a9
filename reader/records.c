/* SPDX-License-Identifier: MIT */
/*
 * records.c — the msgpack cursor over a chunk's records, each record decoded and
 * checked, pgr_next. See reader_int.h.
 */
#define _GNU_SOURCE
#include "reader_int.h"

/* ---- msgpack cursor over buf[pos, end) ---------------------------------------------- */

/* A truncated value: in a chunk cut by the end of the file that is the expected end of the
 * data (returns -2, no error); anywhere else it is an error. */
#define TRUNC (-2)

struct cur {
    pgr_reader *r;
    uint32_t p;           /* in r->buf */
    uint32_t rec_start;
    const char *rec_name; /* for messages */
};

static uint64_t off_of(const struct cur *c, uint32_t p) { return c->r->buf_off + p; }

static int need(struct cur *c, uint32_t n) {
    if (c->r->end - c->p < n)
        return TRUNC;
    return 0;
}

static uint64_t be(const uint8_t *b, unsigned n) {
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = v << 8 | b[i];
    return v;
}

/* Reads an integer of any width. *neg = 1 for a negative value (v is then its int64). */
static int mp_int_any(struct cur *c, uint64_t *v, int *neg, const char *field) {
    if (need(c, 1))
        return TRUNC;
    const uint8_t *b = c->r->buf + c->p;
    uint8_t t = b[0];
    unsigned w = 0;
    int sign = 0;
    *neg = 0;
    if (t <= 0x7f) {
        *v = t;
        c->p += 1;
        return 0;
    }
    if (t >= 0xe0) {
        *v = (uint64_t)(int64_t)(int8_t)t;
        *neg = 1;
        c->p += 1;
        return 0;
    }
    switch (t) {
    case 0xcc: w = 1; break;
    case 0xcd: w = 2; break;
    case 0xce: w = 4; break;
    case 0xcf: w = 8; break;
    case 0xd0: w = 1; sign = 1; break;
    case 0xd1: w = 2; sign = 1; break;
    case 0xd2: w = 4; sign = 1; break;
    case 0xd3: w = 8; sign = 1; break;
    default:
        pgr__fail(c->r, off_of(c, c->p), "%s: expected integer for %s", c->rec_name, field);
        return -1;
    }
    if (need(c, 1 + w))
        return TRUNC;
    uint64_t x = be(b + 1, w);
    if (sign) {
        int64_t s;
        switch (w) {
        case 1: s = (int8_t)x; break;
        case 2: s = (int16_t)x; break;
        case 4: s = (int32_t)x; break;
        default: s = (int64_t)x; break;
        }
        x = (uint64_t)s;
        *neg = s < 0;
    }
    *v = x;
    c->p += 1 + w;
    return 0;
}

static int mp_uint(struct cur *c, uint64_t *v, uint64_t max, const char *field) {
    uint32_t at = c->p;
    int neg, e = mp_int_any(c, v, &neg, field);
    if (e)
        return e;
    if (neg || *v > max) {
        pgr__fail(c->r, off_of(c, at), "%s: value %lld out of range for %s", c->rec_name,
             (long long)*v, field);
        return -1;
    }
    return 0;
}

static int mp_u32(struct cur *c, uint32_t *v, const char *field) {
    uint64_t x;
    int e = mp_uint(c, &x, UINT32_MAX, field);
    *v = (uint32_t)x;
    return e;
}

static int mp_u8(struct cur *c, uint8_t *v, const char *field) {
    uint64_t x;
    int e = mp_uint(c, &x, UINT8_MAX, field);
    *v = (uint8_t)x;
    return e;
}

static int mp_u64(struct cur *c, uint64_t *v, const char *field) {
    return mp_uint(c, v, UINT64_MAX, field);
}

static int mp_i64(struct cur *c, int64_t *v, const char *field) {
    uint32_t at = c->p;
    uint64_t x;
    int neg, e = mp_int_any(c, &x, &neg, field);
    if (e)
        return e;
    if (!neg && x > INT64_MAX) {
        pgr__fail(c->r, off_of(c, at), "%s: value %llu out of range for %s", c->rec_name,
             (unsigned long long)x, field);
        return -1;
    }
    *v = (int64_t)x;
    return 0;
}

static int mp_bool_or_int(struct cur *c, int *v, const char *field) {
    if (need(c, 1))
        return TRUNC;
    uint8_t t = c->r->buf[c->p];
    if (t == 0xc2 || t == 0xc3) {
        *v = t == 0xc3;
        c->p++;
        return 0;
    }
    uint64_t x;
    int e = mp_uint(c, &x, 1, field);
    *v = (int)x;
    return e;
}

static int mp_str(struct cur *c, struct pgr_str *s, const char *field) {
    if (need(c, 1))
        return TRUNC;
    const uint8_t *b = c->r->buf + c->p;
    uint32_t h, len;
    if ((b[0] & 0xe0) == 0xa0) {
        h = 1;
        len = b[0] & 0x1f;
    } else if (b[0] == 0xd9 || b[0] == 0xda || b[0] == 0xdb) {
        unsigned w = b[0] == 0xd9 ? 1 : b[0] == 0xda ? 2 : 4;
        if (need(c, 1 + w))
            return TRUNC;
        h = 1 + w;
        len = (uint32_t)be(b + 1, w);
    } else {
        pgr__fail(c->r, off_of(c, c->p), "%s: expected string for %s", c->rec_name, field);
        return -1;
    }
    if (need(c, h) || c->r->end - c->p - h < len)
        return TRUNC;
    s->ptr = (const char *)b + h;
    s->len = len;
    c->p += h + len;
    return 0;
}

static int mp_array(struct cur *c, uint32_t *n, const char *field) {
    if (need(c, 1))
        return TRUNC;
    const uint8_t *b = c->r->buf + c->p;
    if ((b[0] & 0xf0) == 0x90) {
        *n = b[0] & 0x0f;
        c->p += 1;
    } else if (b[0] == 0xdc || b[0] == 0xdd) {
        unsigned w = b[0] == 0xdc ? 2 : 4;
        if (need(c, 1 + w))
            return TRUNC;
        *n = (uint32_t)be(b + 1, w);
        c->p += 1 + w;
    } else {
        pgr__fail(c->r, off_of(c, c->p), "%s: expected array for %s", c->rec_name, field);
        return -1;
    }
    /* every element takes at least one byte: a count larger than what is left is a lie */
    if (*n > c->r->end - c->p)
        return TRUNC;
    return 0;
}

/* Skip one value of any type. */
static int mp_skip(struct cur *c, int depth) {
    if (depth > MAX_DEPTH) {
        pgr__fail(c->r, off_of(c, c->p), "msgpack nesting too deep");
        return -1;
    }
    if (need(c, 1))
        return TRUNC;
    const uint8_t *b = c->r->buf + c->p;
    uint8_t t = b[0];
    uint64_t len = 0, items = 0;
    unsigned hdr = 1;
    if (t <= 0x7f || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3) {
        len = 0;
    } else if ((t & 0xe0) == 0xa0) {
        len = t & 0x1f;
    } else if ((t & 0xf0) == 0x90) {
        items = t & 0x0f;
    } else if ((t & 0xf0) == 0x80) {
        items = 2u * (t & 0x0f);
    } else {
        switch (t) {
        case 0xcc: case 0xd0: len = 1; break;
        case 0xcd: case 0xd1: len = 2; break;
        case 0xca: case 0xce: case 0xd2: len = 4; break;
        case 0xcb: case 0xcf: case 0xd3: len = 8; break;
        case 0xd4: len = 2; break;
        case 0xd5: len = 3; break;
        case 0xd6: len = 5; break;
        case 0xd7: len = 9; break;
        case 0xd8: len = 17; break;
        case 0xc4: case 0xd9: hdr = 2; break;
        case 0xc5: case 0xda: hdr = 3; break;
        case 0xc6: case 0xdb: hdr = 5; break;
        case 0xc7: hdr = 3; break;
        case 0xc8: hdr = 4; break;
        case 0xc9: hdr = 6; break;
        case 0xdc: case 0xde: hdr = 3; break;
        case 0xdd: case 0xdf: hdr = 5; break;
        default:
            pgr__fail(c->r, off_of(c, c->p), "bad msgpack type byte 0x%02x", t);
            return -1;
        }
        if (need(c, hdr))
            return TRUNC;
        if (hdr > 1) {
            unsigned w = (t == 0xc7) ? 1 : (t == 0xc8) ? 2 : (t == 0xc9) ? 4 : hdr - 1;
            uint64_t n = be(b + 1, w);
            if (t == 0xdc || t == 0xdd)
                items = n;
            else if (t == 0xde || t == 0xdf)
                items = 2 * n;
            else
                len = n; /* ext: hdr already counts the type byte */
        }
    }
    if (need(c, hdr) || c->r->end - c->p - hdr < len)
        return TRUNC;
    c->p += hdr + (uint32_t)len;
    if (items > c->r->end - c->p)
        return TRUNC;
    for (uint64_t i = 0; i < items; i++) {
        int e = mp_skip(c, depth + 1);
        if (e)
            return e;
    }
    return 0;
}

static int grow(pgr_reader *r, void **p, size_t *cap, size_t n, size_t elem) {
    if (n <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 16;
    while (nc < n)
        nc *= 2;
    void *q = realloc(*p, nc * elem);
    if (!q) {
        pgr__fail(r, 0, "out of memory");
        return -1;
    }
    *p = q;
    *cap = nc;
    return 0;
}

/* ---- records ------------------------------------------------------------------------- */

#define TRY(x) do { int e_ = (x); if (e_) return e_; } while (0)

static int decode_fields(struct cur *c, struct pgr_record *rec, uint32_t n, uint32_t *used) {
    pgr_reader *r = c->r;
    static const uint8_t min_fields[32] = {
        [PGF_REC_PROCESS] = 11, [PGF_REC_GROUP] = 5, [PGF_REC_SITE] = 6,
        [PGF_REC_THREAD] = 4, [PGF_REC_STRING] = 3, [PGF_REC_CLOCK] = 5,
        [PGF_REC_EVENT] = 7, [PGF_REC_INTERVAL] = 6, [PGF_REC_MARKER] = 5,
        [PGF_REC_DROPPED] = 4, [PGF_REC_OVERHEAD] = 5, [PGF_REC_THREAD_END] = 2,
    };
    unsigned k = rec->kind;
    if (n < min_fields[k]) {
        pgr__fail(r, off_of(c, c->rec_start), "%s: %u fields, needs at least %u", c->rec_name, n,
             min_fields[k]);
        return -1;
    }
    *used = min_fields[k];
    switch (k) {
    case PGF_REC_PROCESS: {
        __typeof__(rec->u.process) *x = &rec->u.process;
        TRY(mp_u32(c, &x->pid, "pid"));
        TRY(mp_u32(c, &x->ppid, "ppid"));
        TRY(mp_str(c, &x->program, "program"));
        uint32_t na;
        TRY(mp_array(c, &na, "args"));
        if (grow(r, (void **)&r->args, &r->args_cap, na, sizeof *r->args))
            return -1;
        for (uint32_t i = 0; i < na; i++)
            TRY(mp_str(c, &r->args[i], "args"));
        x->args = r->args;
        x->nargs = na;
        TRY(mp_i64(c, &x->start_realtime_ns, "start_realtime_ns"));
        TRY(mp_i64(c, &x->start_monotonic_ns, "start_monotonic_ns"));
        TRY(mp_u64(c, &x->start_tsc, "start_tsc"));
        TRY(mp_u64(c, &x->tsc_hz, "tsc_hz"));
        TRY(mp_u32(c, &x->mode, "mode"));
        TRY(mp_str(c, &x->runtime_version, "runtime_version"));
        return 0;
    }
    case PGF_REC_GROUP: {
        __typeof__(rec->u.group) *x = &rec->u.group;
        TRY(mp_u32(c, &x->group_id, "group_id"));
        TRY(mp_str(c, &x->name, "name"));
        TRY(mp_u32(c, &x->group_kind, "group_kind"));
        return mp_bool_or_int(c, &x->active, "active");
    }
    case PGF_REC_SITE: {
        __typeof__(rec->u.site) *x = &rec->u.site;
        TRY(mp_u32(c, &x->function_id, "function_id"));
        TRY(mp_str(c, &x->function, "function"));
        TRY(mp_str(c, &x->file, "file"));
        TRY(mp_u32(c, &x->line, "line"));
        uint32_t ng;
        TRY(mp_array(c, &ng, "group_ids"));
        if (grow(r, (void **)&r->ids, &r->ids_cap, ng, sizeof *r->ids))
            return -1;
        for (uint32_t i = 0; i < ng; i++)
            TRY(mp_u32(c, &r->ids[i], "group_ids"));
        x->group_ids = r->ids;
        x->ngroups = ng;
        if (n > 6) { /* version 3 */
            TRY(mp_str(c, &x->module, "module"));
            *used = 7;
        }
        return 0;
    }
    case PGF_REC_THREAD:
        TRY(mp_u32(c, &rec->u.thread.thread_index, "thread_index"));
        TRY(mp_u32(c, &rec->u.thread.tid, "tid"));
        return mp_str(c, &rec->u.thread.name, "name");
    case PGF_REC_STRING:
        TRY(mp_u32(c, &rec->u.string.string_id, "string_id"));
        return mp_str(c, &rec->u.string.text, "text");
    case PGF_REC_CLOCK:
        TRY(mp_u64(c, &rec->u.clock.tsc, "tsc"));
        TRY(mp_i64(c, &rec->u.clock.realtime_ns, "realtime_ns"));
        TRY(mp_i64(c, &rec->u.clock.monotonic_ns, "monotonic_ns"));
        return mp_u64(c, &rec->u.clock.thread_cpu_ns, "thread_cpu_ns");
    case PGF_REC_EVENT: {
        __typeof__(rec->u.event) *x = &rec->u.event;
        TRY(mp_u32(c, &x->name_string_id, "name_string_id"));
        TRY(mp_u64(c, &x->begin_tsc, "begin_tsc"));
        TRY(mp_u64(c, &x->end_tsc, "end_tsc"));
        TRY(mp_u64(c, &x->cpu_ns, "cpu_ns"));
        TRY(mp_u32(c, &x->flags, "flags"));
        uint32_t ng;
        TRY(mp_array(c, &ng, "groups"));
        if (grow(r, (void **)&r->groups, &r->groups_cap, ng, sizeof *r->groups))
            return -1;
        for (uint32_t i = 0; i < ng; i++) {
            struct pgr_event_group *g = &r->groups[i];
            uint32_t m;
            uint32_t at = c->p;
            TRY(mp_array(c, &m, "groups[i]"));
            if (m < 4) {
                pgr__fail(r, off_of(c, at), "%s: %u fields, needs at least 4 in groups[%u]",
                     c->rec_name, m, i);
                return -1;
            }
            TRY(mp_u32(c, &g->group_id, "group_id"));
            TRY(mp_u64(c, &g->cycles, "cycles"));
            TRY(mp_u64(c, &g->cpu_ns, "cpu_ns"));
            TRY(mp_u64(c, &g->activations, "activations"));
            g->has_self = m >= 6;
            g->self_ns = 0;
            g->parent = 0;
            if (g->has_self) {
                TRY(mp_u64(c, &g->self_ns, "self_ns"));
                TRY(mp_u32(c, &g->parent, "parent"));
            }
            for (uint32_t j = g->has_self ? 6 : 4; j < m; j++)
                TRY(mp_skip(c, 2));
        }
        x->groups = r->groups;
        x->ngroups = ng;
        if (n > 7) { /* version 3: groups the record could not list */
            *used = 8;
            return mp_u32(c, &x->groups_more, "groups_more");
        }
        return 0;
    }
    case PGF_REC_INTERVAL: {
        __typeof__(rec->u.interval) *x = &rec->u.interval;
        TRY(mp_u32(c, &x->function_id, "function_id"));
        TRY(mp_u8(c, &x->group_mask, "group_mask"));
        TRY(mp_u8(c, &x->depth, "depth"));
        TRY(mp_u64(c, &x->start_tsc, "start_tsc"));
        return mp_u64(c, &x->duration, "duration");
    }
    case PGF_REC_MARKER: {
        __typeof__(rec->u.marker) *x = &rec->u.marker;
        TRY(mp_u32(c, &x->name_string_id, "name_string_id"));
        TRY(mp_str(c, &x->text, "text"));
        TRY(mp_u64(c, &x->start_tsc, "start_tsc"));
        return mp_u64(c, &x->end_tsc, "end_tsc");
    }
    case PGF_REC_DROPPED:
        TRY(mp_u64(c, &rec->u.dropped.records, "records"));
        TRY(mp_u64(c, &rec->u.dropped.bytes, "bytes"));
        return mp_u64(c, &rec->u.dropped.chunks, "chunks");
    case PGF_REC_OVERHEAD:
        TRY(mp_u64(c, &rec->u.overhead.commit_ns, "commit_ns"));
        TRY(mp_u64(c, &rec->u.overhead.commits, "commits"));
        TRY(mp_u64(c, &rec->u.overhead.slow_paths, "slow_paths"));
        TRY(mp_u64(c, &rec->u.overhead.resyncs, "resyncs"));
        if (n > 5) {
            *used = 6;
            return mp_u64(c, &rec->u.overhead.dropped, "dropped");
        }
        return 0;
    case PGF_REC_THREAD_END:
        return mp_u64(c, &rec->u.thread_end.end_tsc, "end_tsc");
    }
    return -1; /* not reached: kinds are checked by the caller */
}

static int is_def_kind(unsigned k) { return k >= PGF_REC_PROCESS && k <= PGF_REC_STRING; }
static int is_data_kind(unsigned k) { return k >= PGF_REC_CLOCK && k <= PGF_REC_THREAD_END; }

/* Parse one record at r->pos. 1 = rec filled, 0 = skipped (unknown kind), TRUNC = the
 * data ends inside it, -1 = error. */
static int parse_record(pgr_reader *r, struct pgr_record *rec) {
    struct cur c = { r, r->pos, r->pos, "record" };
    uint8_t t = r->buf[c.p];
    if (!((t & 0xf0) == 0x90 || t == 0xdc || t == 0xdd)) {
        pgr__fail(r, off_of(&c, c.p), "record is not a msgpack array");
        return -1;
    }
    uint32_t n;
    TRY(mp_array(&c, &n, "record"));
    if (n == 0) {
        pgr__fail(r, off_of(&c, c.rec_start), "empty record");
        return -1;
    }
    uint64_t kind;
    TRY(mp_uint(&c, &kind, 127, "kind"));
    memset(rec, 0, sizeof *rec);
    rec->kind = (enum pgf_record_kind)kind;
    rec->offset = off_of(&c, c.rec_start);
    rec->chunk_seq = r->cur->seq;
    rec->thread = r->cur->thread;
    const char *name = pgr_kind_name((unsigned)kind);
    int defs = r->cur->kind == PGF_CHUNK_DEFS;
    if (!name) {
        for (uint32_t i = 1; i < n; i++)
            TRY(mp_skip(&c, 1));
        if (!r->warned_kind[kind]) {
            r->warned_kind[kind] = 1;
            pgr__warn(r, rec->offset, "unknown record kind %u skipped", (unsigned)kind);
        }
        r->pos = c.p;
        return 0;
    }
    if (defs ? !is_def_kind((unsigned)kind) : !is_data_kind((unsigned)kind)) {
        pgr__fail(r, rec->offset, "record kind %u (%s) not allowed in a %s chunk", (unsigned)kind,
             name, defs ? "DEFS" : "DATA");
        return -1;
    }
    c.rec_name = name;
    uint32_t used;
    TRY(decode_fields(&c, rec, n, &used));
    for (uint32_t i = used; i < n; i++) /* fields of a later version */
        TRY(mp_skip(&c, 1));
    r->pos = c.p;
    return 1;
}

static void finish_chunk(pgr_reader *r) {
    const struct pgr_chunk_info *ci = r->cur;
    uint64_t at = pgr__chunk_start(r, ci->index) + 28;
    if (r->cut || r->from)
        return; /* the count cannot be checked against a cut or partly read chunk */
    /* The records themselves parsed whole: a wrong count (a record nested by a signal
     * handler into the one being written on the same thread) is worth a warning, not the
     * file. A killed writer's WRITING chunk may count one record it did not publish. */
    if (ci->state == PGF_CSTATE_FULL ? ci->record_count != r->parsed
                                     : (ci->record_count < r->parsed ||
                                        ci->record_count > r->parsed + 1))
        pgr__warn(r, at, "record_count %u but %u records", ci->record_count, r->parsed);
}

/* A chunk of a recording still being written may be recycled between the scan and the copy
 * of its records, or while they are copied: check it is the same incarnation (magic, seq)
 * before and after the copy; if not, its records are gone: skip it and count it. A chunk
 * still being written is read up to what is committed now. 1 = loaded, 0 = skipped. */
static int load_chunk(pgr_reader *r) {
    struct pgr_chunk_info *ci = &r->chunks[r->next_chunk++];
    struct pgf_chunk_header h;
    int same = pgr__read_chunk_header(r, ci->index, &h);
    if (same < 0)
        return -1;
    if (!same || h.seq != ci->seq || h.kind != ci->kind || h.thread != ci->thread ||
        pgr__first_record(r, &h) != ci->first_record || h.committed < ci->committed ||
        h.committed > r->hdr.chunk_size - ci->first_record) {
        r->skipped++;
        return 0;
    }
    ci->state = h.state;            /* a WRITING chunk may have been sealed since the scan */
    ci->committed = h.committed;
    ci->record_count = h.record_count;
    ci->last_tsc = h.last_tsc;
    uint32_t from = 0;
    if (r->resume && ci->kind == PGF_CHUNK_DATA) {
        from = r->resume(r->resume_ctx, ci);
        if (from >= ci->committed)
            return 0;               /* everything in it was read before */
    }
    uint64_t start = pgr__chunk_start(r, ci->index) + ci->first_record + from;
    uint32_t len = ci->committed - from;
    r->cut = 0;
    if (start + len > r->file_size) {
        len = start >= r->file_size ? 0 : (uint32_t)(r->file_size - start);
        r->cut = 1;
    }
    long got = pgr__read_at(r, r->buf, len, start);
    if (got < 0)
        return -1;
    if ((uint32_t)got < len) {
        len = (uint32_t)got;
        r->cut = 1;
    }
    if (!r->cut) {
        struct pgf_chunk_header after;
        READ_FENCE();
        int still = pgr__read_chunk_header(r, ci->index, &after);
        if (still < 0)
            return -1;
        if (!still || after.seq != ci->seq) {
            r->skipped++;
            return 0;
        }
    }
    /* version 2: a sealed chunk read whole must match its CRC-32C, else it is skipped and
     * counted (a flipped bit is never believed); WRITING chunks have none yet */
    if (r->hdr.version >= 2 && h.state == PGF_CSTATE_FULL && !from && !r->cut &&
        pgf_chunk_crc(&h, r->buf) != h.crc32c) {
        if (r->corrupt++ < 8)
            pgr__warn(r, pgr__chunk_start(r, ci->index), "chunk %u (seq %llu, %s): CRC-32C mismatch, "
                 "skipped", ci->index, (unsigned long long)ci->seq,
                 ci->kind == PGF_CHUNK_DEFS ? "definitions" : "data");
        return 0;
    }
    r->cur = ci;
    r->buf_off = start;
    r->from = from;
    r->pos = 0;
    r->end = len;
    r->parsed = 0;
    r->loaded = 1;
    return 1;
}

int pgr_next(pgr_reader *r, struct pgr_record *rec) {
    for (;;) {
        if (r->has_error)
            return -1;
        if (!r->loaded) {
            if (r->next_chunk >= r->nchunks) {
                if (r->corrupt > 8 && !r->warned_corrupt) {
                    r->warned_corrupt = 1;
                    pgr__warn(r, 0, "%llu chunk(s) in all failed their CRC-32C: skipped",
                         (unsigned long long)r->corrupt);
                }
                if (r->skipped && !r->warned_skipped) {
                    r->warned_skipped = 1;
                    pgr__warn(r, 0, "%llu chunk(s) recycled by the writer while being read: skipped",
                         (unsigned long long)r->skipped);
                }
                return 0;
            }
            int l = load_chunk(r);
            if (l < 0)
                return -1;
            if (l == 0)
                continue;
        }
        if (r->pos >= r->end) {
            finish_chunk(r);
            r->loaded = 0;
            continue;
        }
        int e = parse_record(r, rec);
        if (e == TRUNC) {
            if (!r->cut) {
                pgr__fail(r, r->buf_off + r->pos, "truncated record");
                return -1;
            }
            pgr__warn(r, r->buf_off + r->pos, "chunk cut by end of file: last record incomplete");
            r->loaded = 0;
            continue;
        }
        if (e < 0)
            return -1;
        r->parsed++;
        if (e == 1)
            return 1;
    }
}

