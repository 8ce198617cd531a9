/* SPDX-License-Identifier: MIT */
/* bench/kvbench/btree.c — a B+tree on byte-string keys: the store's ordered index (group
 * index). Leaves are linked for range scans; removal is lazy (no merging, empty leaves stay
 * linked), which keeps every path the same length. Keys are copied into the tree's own arena
 * (separators outlive the records they were taken from), freed with the tree. */
#include <stdlib.h>
#include <string.h>

#include "kv.h"

#define ORDER 16 /* max keys per node */

struct node {
    int leaf, n;
    const char *key[ORDER];
    size_t klen[ORDER];
    union {
        struct node *child[ORDER + 1];
        struct rec *val[ORDER];
    } u;
    struct node *next; /* leaves only */
};

struct chunk {
    struct chunk *prev;
    size_t used;
    char data[65536 - 2 * sizeof(size_t)];
};

struct btree {
    struct node *root;
    size_t count;
    int height;
    struct chunk *keys;
};

static char *key_copy(struct btree *t, const char *k, size_t n)
{
    if (n > sizeof t->keys->data)
        abort();
    if (!t->keys || t->keys->used + n > sizeof t->keys->data) {
        struct chunk *c = malloc(sizeof *c);
        if (!c)
            abort();
        c->prev = t->keys;
        c->used = 0;
        t->keys = c;
    }
    char *p = t->keys->data + t->keys->used;
    memcpy(p, k, n);
    t->keys->used += n;
    return p;
}

static struct node *node_new(int leaf)
{
    struct node *x = calloc(1, sizeof *x);
    if (!x)
        abort();
    x->leaf = leaf;
    return x;
}

static void node_free(struct node *x)
{
    if (!x->leaf)
        for (int i = 0; i <= x->n; i++)
            node_free(x->u.child[i]);
    free(x);
}

struct btree *bt_new(void)
{
    struct btree *t = calloc(1, sizeof *t);
    if (!t)
        abort();
    t->root = node_new(1);
    t->height = 1;
    return t;
}

void bt_free(struct btree *t)
{
    if (!t)
        return;
    node_free(t->root);
    while (t->keys) {
        struct chunk *c = t->keys;
        t->keys = c->prev;
        free(c);
    }
    free(t);
}

static int key_cmp(const struct node *x, int i, const char *k, size_t n)
{
    return text_cmp(x->key[i], x->klen[i], k, n);
}

/* First i with key[i] >= k (binary search). */
static int lower_bound(const struct node *x, const char *k, size_t n)
{
    int lo = 0, hi = x->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (key_cmp(x, mid, k, n) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Child to descend into for k: separators are the first key of the right subtree. */
static int child_index(const struct node *x, const char *k, size_t n)
{
    int i = lower_bound(x, k, n);
    if (i < x->n && key_cmp(x, i, k, n) == 0)
        i++;
    return i;
}

static void shift_right(struct node *x, int i)
{
    for (int j = x->n; j > i; j--) {
        x->key[j] = x->key[j - 1];
        x->klen[j] = x->klen[j - 1];
        if (x->leaf)
            x->u.val[j] = x->u.val[j - 1];
        else
            x->u.child[j + 1] = x->u.child[j];
    }
}

static void shift_left(struct node *x, int i)
{
    for (int j = i; j + 1 < x->n; j++) {
        x->key[j] = x->key[j + 1];
        x->klen[j] = x->klen[j + 1];
        x->u.val[j] = x->u.val[j + 1];
    }
}

static void set_key(struct node *x, int i, const char *k, size_t n)
{
    x->key[i] = k;
    x->klen[i] = n;
}

/* Split full child c = x->child[i] in two; x gets the separator. */
static void split_child(struct node *x, int i)
{
    struct node *c = x->u.child[i];
    struct node *r = node_new(c->leaf);
    int mid = ORDER / 2;
    if (c->leaf) {
        r->n = c->n - mid;
        for (int j = 0; j < r->n; j++) {
            set_key(r, j, c->key[mid + j], c->klen[mid + j]);
            r->u.val[j] = c->u.val[mid + j];
        }
        c->n = mid;
        r->next = c->next;
        c->next = r;
        shift_right(x, i);
        set_key(x, i, r->key[0], r->klen[0]);
    } else {
        r->n = c->n - mid - 1;
        for (int j = 0; j < r->n; j++)
            set_key(r, j, c->key[mid + 1 + j], c->klen[mid + 1 + j]);
        for (int j = 0; j <= r->n; j++)
            r->u.child[j] = c->u.child[mid + 1 + j];
        shift_right(x, i);
        set_key(x, i, c->key[mid], c->klen[mid]);
        c->n = mid;
    }
    x->u.child[i + 1] = r;
    x->n++;
}

static int leaf_insert(struct btree *t, struct node *x, const char *k, size_t n, struct rec *r)
{
    int i = lower_bound(x, k, n);
    if (i < x->n && key_cmp(x, i, k, n) == 0) {
        x->u.val[i] = r;
        return 0;
    }
    shift_right(x, i);
    set_key(x, i, key_copy(t, k, n), n);
    x->u.val[i] = r;
    x->n++;
    return 1;
}

static int insert_nonfull(struct btree *t, struct node *x, const char *k, size_t n,
                          struct rec *r)
{
    while (!x->leaf) {
        int i = child_index(x, k, n);
        if (x->u.child[i]->n == ORDER) {
            split_child(x, i);
            if (key_cmp(x, i, k, n) <= 0)
                i++;
        }
        x = x->u.child[i];
    }
    return leaf_insert(t, x, k, n, r);
}

int bt_insert(struct btree *t, const char *key, size_t n, struct rec *r)
{
    if (t->root->n == ORDER) {
        struct node *s = node_new(0);
        s->u.child[0] = t->root;
        t->root = s;
        t->height++;
        split_child(s, 0);
    }
    int added = insert_nonfull(t, t->root, key, n, r);
    t->count += (size_t)added;
    return added;
}

static struct node *find_leaf(const struct btree *t, const char *k, size_t n)
{
    struct node *x = t->root;
    while (!x->leaf)
        x = x->u.child[child_index(x, k, n)];
    return x;
}

int bt_remove(struct btree *t, const char *key, size_t n)
{
    struct node *x = find_leaf(t, key, n);
    int i = lower_bound(x, key, n);
    if (i >= x->n || key_cmp(x, i, key, n) != 0)
        return 0;
    shift_left(x, i);
    x->n--;
    t->count--;
    return 1;
}

static int in_range(const struct node *x, int i, const char *hi, size_t hn)
{
    return key_cmp(x, i, hi, hn) <= 0;
}

size_t bt_range(struct btree *t, const char *lo, size_t ln, const char *hi, size_t hn,
                struct rec **out, size_t max)
{
    struct node *x = find_leaf(t, lo, ln);
    int i = lower_bound(x, lo, ln);
    size_t got = 0;
    while (x && got < max) {
        for (; i < x->n && got < max; i++) {
            if (!in_range(x, i, hi, hn))
                return got;
            out[got++] = x->u.val[i];
        }
        x = x->next;
        i = 0;
    }
    return got;
}

size_t bt_count(const struct btree *t)
{
    return t->count;
}

static int check_node(const struct node *x, int depth, int height, size_t *leaves_keys)
{
    for (int i = 1; i < x->n; i++)
        if (text_cmp(x->key[i - 1], x->klen[i - 1], x->key[i], x->klen[i]) >= 0)
            return -1;
    if (x->leaf) {
        *leaves_keys += (size_t)x->n;
        return depth + 1 == height ? 0 : -1;
    }
    for (int i = 0; i <= x->n; i++)
        if (check_node(x->u.child[i], depth + 1, height, leaves_keys))
            return -1;
    return 0;
}

int bt_check(const struct btree *t)
{
    size_t keys = 0;
    if (check_node(t->root, 0, t->height, &keys))
        return -1;
    return keys == t->count ? 0 : -1;
}
