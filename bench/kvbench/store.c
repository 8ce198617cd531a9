/* SPDX-License-Identifier: MIT */
/* bench/kvbench/store.c — records and the execution of commands (group store): a record's
 * key and field strings live in one malloc'd block; the hash table is the primary index,
 * the B+tree the ordered one. */
#include <stdlib.h>
#include <string.h>

#include "kv.h"

#define SCAN_MAX 256
#define STR_MAX 160

struct store {
    struct htab *h;
    struct btree *bt;
    uint64_t clock; /* versions */
    struct rec **tmp;
    size_t tmpcap;
};

struct store *store_new(void)
{
    struct store *s = calloc(1, sizeof *s);
    if (!s)
        abort();
    s->h = htab_new(1024);
    s->bt = bt_new();
    return s;
}

static void rec_free(struct rec *r)
{
    free(r->arena_block);
    free(r);
}

static void free_cb(struct rec *r, void *arg)
{
    (void)arg;
    rec_free(r);
}

void store_free(struct store *s)
{
    htab_each(s->h, free_cb, NULL);
    htab_free(s->h);
    bt_free(s->bt);
    free(s->tmp);
    free(s);
}

size_t store_count(const struct store *s)
{
    return htab_count(s->h);
}

/* ---- record blocks ---- */

static size_t fields_size(const struct field *f, int nf)
{
    size_t n = 0;
    for (int i = 0; i < nf; i++)
        n += f[i].nlen + 1 + (f[i].is_int ? 0 : f[i].slen + 1);
    return n;
}

static char *put_str(char **p, const char *s, size_t n)
{
    char *dst = *p;
    memcpy(dst, s, n);
    dst[n] = '\0';
    *p += n + 1;
    return dst;
}

static void copy_fields(struct rec *r, char **p, const struct field *f, int nf)
{
    for (int i = 0; i < nf; i++) {
        r->f[i] = f[i];
        r->f[i].name = put_str(p, f[i].name, f[i].nlen);
        if (!f[i].is_int)
            r->f[i].sval = put_str(p, f[i].sval, f[i].slen);
    }
    r->nf = nf;
}

/* A new block for the record's key and fields (the old one freed after the copy). */
static void rec_rebuild(struct rec *r, const char *key, size_t klen, const struct field *f, int nf)
{
    char *block = malloc(klen + 1 + fields_size(f, nf));
    if (!block)
        abort();
    char *p = block;
    r->key = put_str(&p, key, klen);
    r->klen = klen;
    copy_fields(r, &p, f, nf);
    free(r->arena_block);
    r->arena_block = block;
}

static struct rec *rec_new(const char *key, size_t klen, const struct field *f, int nf)
{
    struct rec *r = calloc(1, sizeof *r);
    if (!r)
        abort();
    rec_rebuild(r, key, klen, f, nf);
    return r;
}

static int field_index(const struct rec *r, const char *name, size_t n)
{
    for (int i = 0; i < r->nf; i++)
        if (r->f[i].nlen == n && memcmp(r->f[i].name, name, n) == 0)
            return i;
    return -1;
}

/* ---- responses ---- */

static void put_field(struct buf *out, const struct field *f)
{
    buf_put_quoted(out, f->name, f->nlen);
    buf_putc(out, ':');
    if (f->is_int)
        buf_put_i64(out, f->ival);
    else
        buf_put_quoted(out, f->sval, f->slen);
}

static void put_record(struct buf *out, const struct rec *r)
{
    buf_puts(out, "{\"key\":");
    buf_put_quoted(out, r->key, r->klen);
    for (int i = 0; i < r->nf; i++) {
        buf_putc(out, ',');
        put_field(out, &r->f[i]);
    }
    buf_puts(out, ",\"v\":");
    buf_put_u64(out, r->version);
    buf_putc(out, '}');
}

static void put_ok(struct buf *out, const char *what, uint64_t n)
{
    buf_puts(out, "OK ");
    buf_puts(out, what);
    buf_putc(out, ' ');
    buf_put_u64(out, n);
}

static int put_err(struct buf *out, const char *why)
{
    buf_puts(out, "ERR ");
    buf_puts(out, why);
    return -1;
}

/* ---- commands ---- */

static int exec_set(struct store *s, const struct cmd *c, struct buf *out)
{
    struct rec *r = htab_get(s->h, c->key, c->klen);
    if (r) {
        rec_rebuild(r, c->key, c->klen, c->f, c->nf);
        r->version = ++s->clock;
        put_ok(out, "replaced", r->version);
        return 0;
    }
    r = rec_new(c->key, c->klen, c->f, c->nf);
    r->version = ++s->clock;
    htab_put(s->h, r);
    bt_insert(s->bt, r->key, r->klen, r);
    put_ok(out, "new", r->version);
    return 0;
}

static int exec_get(struct store *s, const struct cmd *c, struct buf *out)
{
    struct rec *r = htab_get(s->h, c->key, c->klen);
    if (!r) {
        buf_puts(out, "NIL");
        return 1;
    }
    put_record(out, r);
    return 0;
}

static int exec_del(struct store *s, const struct cmd *c, struct buf *out)
{
    struct rec *r = htab_del(s->h, c->key, c->klen);
    if (!r) {
        buf_puts(out, "0");
        return 1;
    }
    bt_remove(s->bt, r->key, r->klen);
    rec_free(r);
    buf_puts(out, "1");
    return 0;
}

static int add_int_field(struct rec *r, const char *name, size_t n, int64_t v)
{
    if (r->nf >= MAX_FIELDS)
        return -1;
    struct field f[MAX_FIELDS];
    memcpy(f, r->f, sizeof(struct field) * (size_t)r->nf);
    f[r->nf].name = name;
    f[r->nf].nlen = n;
    f[r->nf].is_int = 1;
    f[r->nf].ival = v;
    f[r->nf].sval = NULL;
    f[r->nf].slen = 0;
    rec_rebuild(r, r->key, r->klen, f, r->nf + 1);
    return 0;
}

static int exec_incr(struct store *s, const struct cmd *c, struct buf *out)
{
    struct rec *r = htab_get(s->h, c->key, c->klen);
    if (!r)
        return put_err(out, "no such key");
    int i = field_index(r, c->by, c->bylen);
    if (i < 0) {
        if (add_int_field(r, c->by, c->bylen, c->n))
            return put_err(out, "too many fields");
        i = r->nf - 1;
    } else if (!r->f[i].is_int) {
        return put_err(out, "not an integer");
    } else {
        r->f[i].ival += c->n;
    }
    r->version = ++s->clock;
    buf_put_i64(out, r->f[i].ival);
    return 0;
}

static int exec_append(struct store *s, const struct cmd *c, struct buf *out)
{
    struct rec *r = htab_get(s->h, c->key, c->klen);
    if (!r)
        return put_err(out, "no such key");
    int i = field_index(r, c->by, c->bylen);
    if (i < 0 || r->f[i].is_int)
        return put_err(out, "not a string");
    size_t keep = r->f[i].slen + c->f[0].slen > STR_MAX ? 0 : r->f[i].slen;
    char tmp[2 * STR_MAX + 2];
    memcpy(tmp, r->f[i].sval, keep);
    memcpy(tmp + keep, c->f[0].sval, c->f[0].slen);
    struct field f[MAX_FIELDS];
    memcpy(f, r->f, sizeof(struct field) * (size_t)r->nf);
    f[i].sval = tmp;
    f[i].slen = keep + c->f[0].slen;
    rec_rebuild(r, r->key, r->klen, f, r->nf);
    r->version = ++s->clock;
    buf_put_u64(out, r->f[i].slen);
    return 0;
}

static int cmp_version_desc(const void *a, const void *b, void *arg)
{
    (void)arg;
    const struct rec *x = *(struct rec *const *)a, *y = *(struct rec *const *)b;
    return x->version < y->version ? 1 : x->version > y->version ? -1 : 0;
}

static int64_t rec_sum(const struct rec *r)
{
    int64_t sum = 0;
    for (int i = 0; i < r->nf; i++)
        sum += r->f[i].is_int ? r->f[i].ival : (int64_t)r->f[i].slen;
    return sum;
}

static int exec_scan(struct store *s, const struct cmd *c, struct buf *out)
{
    struct rec *found[SCAN_MAX];
    size_t max = c->n > 0 && c->n < SCAN_MAX ? (size_t)c->n : SCAN_MAX;
    size_t n = bt_range(s->bt, c->key, c->klen, c->key2, c->k2len, found, max);
    sort_merge(found, n, sizeof found[0], cmp_version_desc, NULL);
    int64_t total = 0;
    buf_put_u64(out, n);
    for (size_t i = 0; i < n; i++) {
        buf_putc(out, i ? ',' : ':');
        buf_putn(out, found[i]->key, found[i]->klen);
        buf_putc(out, '=');
        buf_put_i64(out, rec_sum(found[i]));
        total += rec_sum(found[i]);
    }
    buf_puts(out, " sum=");
    buf_put_fixed(out, total);
    return 0;
}

struct by_field {
    const char *name;
    size_t n;
};

static int64_t field_value(const struct rec *r, const struct by_field *bf)
{
    int i = field_index(r, bf->name, bf->n);
    if (i < 0)
        return INT64_MIN;
    return r->f[i].is_int ? r->f[i].ival : (int64_t)r->f[i].slen;
}

static int cmp_by_field(const void *a, const void *b, void *arg)
{
    const struct rec *x = *(void *const *)a, *y = *(void *const *)b;
    int64_t u = field_value(x, arg), v = field_value(y, arg);
    if (u != v)
        return u < v ? -1 : 1;
    return text_cmp(y->key, y->klen, x->key, x->klen); /* ties: smaller key is "greater" */
}

struct collect {
    struct store *s;
    size_t n;
};

static void collect_cb(struct rec *r, void *arg)
{
    struct collect *c = arg;
    c->s->tmp[c->n++] = r;
}

static void ensure_tmp(struct store *s, size_t n)
{
    if (s->tmpcap >= n)
        return;
    free(s->tmp);
    s->tmpcap = n * 2;
    s->tmp = malloc(s->tmpcap * sizeof *s->tmp);
    if (!s->tmp)
        abort();
}

static int exec_top(struct store *s, const struct cmd *c, struct buf *out)
{
    size_t k = c->n > 0 && c->n <= 64 ? (size_t)c->n : 64;
    ensure_tmp(s, htab_count(s->h) + 1);
    struct collect col = {s, 0};
    htab_each(s->h, collect_cb, &col);
    struct by_field bf = {c->by, c->bylen};
    void *best[64];
    size_t m = topk((void **)s->tmp, col.n, k, cmp_by_field, &bf, best);
    for (size_t i = 0; i < m; i++) {
        const struct rec *r = best[i];
        buf_put_padded(out, r->key, r->klen, 16, 0);
        buf_put_i64(out, field_value(r, &bf));
        buf_putc(out, '\n');
    }
    return 0;
}

static int exec_count(struct store *s, struct buf *out)
{
    buf_puts(out, "htab=");
    buf_put_u64(out, htab_count(s->h));
    buf_puts(out, " index=");
    buf_put_u64(out, bt_count(s->bt));
    return 0;
}

int store_exec(struct store *s, const struct cmd *c, struct buf *out)
{
    switch (c->kind) {
    case C_SET: return exec_set(s, c, out);
    case C_GET: return exec_get(s, c, out);
    case C_DEL: return exec_del(s, c, out);
    case C_INCR: return exec_incr(s, c, out);
    case C_APPEND: return exec_append(s, c, out);
    case C_SCAN: return exec_scan(s, c, out);
    case C_TOP: return exec_top(s, c, out);
    case C_COUNT: return exec_count(s, out);
    default: return put_err(out, "bad command");
    }
}

int store_check(const struct store *s)
{
    if (htab_count(s->h) != bt_count(s->bt))
        return -1;
    return bt_check(s->bt);
}
