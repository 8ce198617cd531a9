/* SPDX-License-Identifier: MIT */
/* bench/kvbench/hash.c — hash functions and the primary table: open addressing, linear
 * probing, tombstones, doubling at 70 % load (group hash). */
#include <stdlib.h>
#include <string.h>

#include "kv.h"

static uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static uint64_t load64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static uint64_t mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

static uint64_t tail_bytes(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

uint64_t hash_bytes(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    while (n >= 8) {
        h = rotl64(h ^ mix64(load64(p)), 27) * 5 + 0x52dce729;
        p += 8;
        n -= 8;
    }
    h ^= mix64(tail_bytes(p, n));
    return mix64(h);
}

uint32_t hash_fnv1a(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 16777619u;
    }
    return h;
}

/* ---- the table ---- */

#define TOMB ((struct rec *)1)

struct htab {
    struct rec **slot;
    uint32_t *tag; /* the top 32 bits of the key's hash, to skip most key compares */
    size_t cap, count, used; /* used: live + tombstones */
};

static int slot_live(const struct rec *r)
{
    return r != NULL && r != TOMB;
}

static uint32_t tag_of(uint64_t h)
{
    return (uint32_t)(h >> 32);
}

static size_t index_of(const struct htab *h, uint64_t hv)
{
    return (size_t)hv & (h->cap - 1);
}

static size_t next_index(const struct htab *h, size_t i)
{
    return (i + 1) & (h->cap - 1);
}

static int key_equals(const struct rec *r, const char *key, size_t n)
{
    return r->klen == n && memcmp(r->key, key, n) == 0;
}

static void alloc_slots(struct htab *h, size_t cap)
{
    h->slot = calloc(cap, sizeof *h->slot);
    h->tag = calloc(cap, sizeof *h->tag);
    if (!h->slot || !h->tag)
        abort();
    h->cap = cap;
}

struct htab *htab_new(size_t cap_pow2)
{
    struct htab *h = calloc(1, sizeof *h);
    if (!h)
        abort();
    alloc_slots(h, cap_pow2 < 16 ? 16 : cap_pow2);
    return h;
}

void htab_free(struct htab *h)
{
    if (!h)
        return;
    free(h->slot);
    free(h->tag);
    free(h);
}

static size_t find_slot(const struct htab *h, const char *key, size_t n, uint64_t hv, int *found)
{
    size_t i = index_of(h, hv), first_tomb = (size_t)-1;
    uint32_t tg = tag_of(hv);
    for (;;) {
        struct rec *r = h->slot[i];
        if (r == NULL) {
            *found = 0;
            return first_tomb != (size_t)-1 ? first_tomb : i;
        }
        if (r == TOMB) {
            if (first_tomb == (size_t)-1)
                first_tomb = i;
        } else if (h->tag[i] == tg && key_equals(r, key, n)) {
            *found = 1;
            return i;
        }
        i = next_index(h, i);
    }
}

static void insert_fresh(struct htab *h, struct rec *r)
{
    uint64_t hv = hash_bytes(r->key, r->klen);
    size_t i = index_of(h, hv);
    while (h->slot[i] != NULL)
        i = next_index(h, i);
    h->slot[i] = r;
    h->tag[i] = tag_of(hv);
}

static void rehash(struct htab *h, size_t cap)
{
    struct rec **old = h->slot;
    uint32_t *oldtag = h->tag;
    size_t oldcap = h->cap;
    alloc_slots(h, cap);
    for (size_t i = 0; i < oldcap; i++)
        if (slot_live(old[i]))
            insert_fresh(h, old[i]);
    h->used = h->count;
    free(old);
    free(oldtag);
}

static void maybe_grow(struct htab *h)
{
    if ((h->used + 1) * 10 < h->cap * 7)
        return;
    rehash(h, h->count * 2 * 10 >= h->cap * 7 ? h->cap * 2 : h->cap);
}

struct rec *htab_get(struct htab *h, const char *key, size_t n)
{
    int found;
    size_t i = find_slot(h, key, n, hash_bytes(key, n), &found);
    return found ? h->slot[i] : NULL;
}

int htab_put(struct htab *h, struct rec *r)
{
    maybe_grow(h);
    int found;
    uint64_t hv = hash_bytes(r->key, r->klen);
    size_t i = find_slot(h, r->key, r->klen, hv, &found);
    if (found) {
        h->slot[i] = r;
        return 0;
    }
    if (h->slot[i] == NULL)
        h->used++;
    h->slot[i] = r;
    h->tag[i] = tag_of(hv);
    h->count++;
    return 1;
}

struct rec *htab_del(struct htab *h, const char *key, size_t n)
{
    int found;
    size_t i = find_slot(h, key, n, hash_bytes(key, n), &found);
    if (!found)
        return NULL;
    struct rec *r = h->slot[i];
    h->slot[i] = TOMB;
    h->count--;
    return r;
}

size_t htab_count(const struct htab *h)
{
    return h->count;
}

void htab_each(struct htab *h, void (*fn)(struct rec *, void *), void *arg)
{
    for (size_t i = 0; i < h->cap; i++)
        if (slot_live(h->slot[i]))
            fn(h->slot[i], arg);
}
