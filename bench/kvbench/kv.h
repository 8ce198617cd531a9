/* SPDX-License-Identifier: MIT */
/*
 * bench/kvbench/kv.h — a small in-memory key-value store driven by a text command language:
 * the project's own speedtest1-like fixed workload (issue 13). Deterministic (its own PRNG,
 * no time, no I/O in the work), single-threaded, many small static functions across files
 * that map= can split into groups (kv.map):
 *
 *   text.c    growable buffers, number and string formatting, escaping   (group text)
 *   parse.c   tokenizer and parser of the command language               (group parse)
 *   hash.c    hash functions and the primary open-addressing table       (group hash)
 *   btree.c   a B+tree: the ordered secondary index                      (group index)
 *   sort.c    merge sort, quicksort, insertion sort, heap top-k          (group sort)
 *   store.c   records, arena, executing commands                         (group store)
 *   report.c  aggregates, CRC-32 of every response, the summary           (group report)
 *   main.c    the driver: generates command text, runs rounds             (group driver)
 *
 * Usage: kvbench [rounds]   prints a checksum that must not depend on the build, and the
 * thread CPU time of the work ("cpu_ns=N") for bench/real_projects.py.
 */
#ifndef KV_H
#define KV_H

#include <stddef.h>
#include <stdint.h>

/* ---- text.c ---- */
struct buf {
    char *p;
    size_t len, cap;
};
void buf_init(struct buf *b);
void buf_free(struct buf *b);
void buf_clear(struct buf *b);
void buf_putc(struct buf *b, char c);
void buf_puts(struct buf *b, const char *s);
void buf_putn(struct buf *b, const char *s, size_t n);
void buf_put_u64(struct buf *b, uint64_t v);
void buf_put_i64(struct buf *b, int64_t v);
void buf_put_hex(struct buf *b, uint64_t v, int width);
void buf_put_fixed(struct buf *b, int64_t milli); /* 1234 -> "1.234" */
void buf_put_quoted(struct buf *b, const char *s, size_t n);
void buf_put_padded(struct buf *b, const char *s, size_t n, size_t width, int right);
const char *buf_cstr(struct buf *b);
size_t text_lower(char *dst, const char *src, size_t n);
int text_cmp(const char *a, size_t an, const char *b, size_t bn);
int text_has_prefix(const char *s, size_t n, const char *prefix, size_t pn);

/* ---- parse.c ---- */
enum tok_kind { T_END, T_WORD, T_INT, T_STR, T_LBRACE, T_RBRACE, T_COLON, T_COMMA, T_EQ, T_BAD };
struct tok {
    enum tok_kind kind;
    const char *s;
    size_t n;
    int64_t i;
};
enum cmd_kind { C_SET, C_GET, C_DEL, C_INCR, C_SCAN, C_TOP, C_COUNT, C_APPEND, C_BAD };
#define MAX_FIELDS 8
struct field {
    const char *name;
    size_t nlen;
    const char *sval;
    size_t slen;
    int64_t ival;
    int is_int;
};
struct cmd {
    enum cmd_kind kind;
    const char *key;
    size_t klen;
    const char *key2; /* SCAN's end */
    size_t k2len;
    int64_t n;        /* INCR amount, SCAN/TOP limit */
    const char *by;   /* TOP BY field */
    size_t bylen;
    struct field f[MAX_FIELDS];
    int nf;
};
int parse_command(const char *line, size_t n, struct cmd *c); /* 0 ok, -1 error */

/* ---- hash.c ---- */
uint64_t hash_bytes(const void *p, size_t n);
uint32_t hash_fnv1a(const void *p, size_t n);
struct rec;
struct htab;
struct htab *htab_new(size_t cap_pow2);
void htab_free(struct htab *h);
struct rec *htab_get(struct htab *h, const char *key, size_t n);
int htab_put(struct htab *h, struct rec *r);          /* 1 new, 0 replaced */
struct rec *htab_del(struct htab *h, const char *key, size_t n);
size_t htab_count(const struct htab *h);
void htab_each(struct htab *h, void (*fn)(struct rec *, void *), void *arg);

/* ---- btree.c ---- */
struct btree;
struct btree *bt_new(void);
void bt_free(struct btree *t);
int bt_insert(struct btree *t, const char *key, size_t n, struct rec *r);
int bt_remove(struct btree *t, const char *key, size_t n);
size_t bt_range(struct btree *t, const char *lo, size_t ln, const char *hi, size_t hn,
                struct rec **out, size_t max);
size_t bt_count(const struct btree *t);
int bt_check(const struct btree *t); /* invariants: 0 ok */

/* ---- sort.c ---- */
typedef int (*cmp_fn)(const void *a, const void *b, void *arg);
void sort_merge(void *base, size_t n, size_t size, cmp_fn cmp, void *arg);
void sort_quick(void *base, size_t n, size_t size, cmp_fn cmp, void *arg);
void sort_insertion(void *base, size_t n, size_t size, cmp_fn cmp, void *arg);
size_t topk(void **items, size_t n, size_t k, cmp_fn cmp, void *arg, void **out);

/* ---- store.c ---- */
struct rec {
    char *key;
    size_t klen;
    struct field f[MAX_FIELDS];
    int nf;
    uint64_t version;
    char *arena_block;
};
struct store;
struct store *store_new(void);
void store_free(struct store *s);
int store_exec(struct store *s, const struct cmd *c, struct buf *out);
size_t store_count(const struct store *s);
int store_check(const struct store *s);

/* ---- report.c ---- */
uint32_t crc32_update(uint32_t crc, const void *p, size_t n);
struct report;
struct report *report_new(void);
void report_free(struct report *r);
void report_response(struct report *r, enum cmd_kind k, const char *resp, size_t n, int rc);
void report_summary(const struct report *r, struct buf *out);
uint32_t report_crc(const struct report *r);

#endif
