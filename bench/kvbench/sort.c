/* SPDX-License-Identifier: MIT */
/* bench/kvbench/sort.c — sorting on arrays of any element size through a comparison callback
 * (group sort): merge sort (stable), quicksort (median of three, insertion sort below 12),
 * and a bounded heap for the top k. */
#include <stdlib.h>
#include <string.h>

#include "kv.h"

static char *at(void *base, size_t i, size_t size)
{
    return (char *)base + i * size;
}

static void swap_bytes(char *a, char *b, size_t size)
{
    char tmp[64];
    while (size) {
        size_t n = size < sizeof tmp ? size : sizeof tmp;
        memcpy(tmp, a, n);
        memcpy(a, b, n);
        memcpy(b, tmp, n);
        a += n;
        b += n;
        size -= n;
    }
}

static void copy_elem(char *dst, const char *src, size_t size)
{
    memcpy(dst, src, size);
}

void sort_insertion(void *base, size_t n, size_t size, cmp_fn cmp, void *arg)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && cmp(at(base, j - 1, size), at(base, j, size), arg) > 0; j--)
            swap_bytes(at(base, j - 1, size), at(base, j, size), size);
}

/* ---- merge sort ---- */

static void merge_runs(char *a, size_t nl, size_t nr, size_t size, char *tmp, cmp_fn cmp,
                       void *arg)
{
    size_t i = 0, j = 0, k = 0;
    char *r = a + nl * size;
    while (i < nl && j < nr) {
        if (cmp(r + j * size, a + i * size, arg) < 0)
            copy_elem(tmp + k++ * size, r + j++ * size, size);
        else
            copy_elem(tmp + k++ * size, a + i++ * size, size);
    }
    while (i < nl)
        copy_elem(tmp + k++ * size, a + i++ * size, size);
    while (j < nr)
        copy_elem(tmp + k++ * size, r + j++ * size, size);
    memcpy(a, tmp, (nl + nr) * size);
}

static void merge_rec(char *a, size_t n, size_t size, char *tmp, cmp_fn cmp, void *arg)
{
    if (n <= 8) {
        sort_insertion(a, n, size, cmp, arg);
        return;
    }
    size_t nl = n / 2;
    merge_rec(a, nl, size, tmp, cmp, arg);
    merge_rec(a + nl * size, n - nl, size, tmp, cmp, arg);
    if (cmp(a + (nl - 1) * size, a + nl * size, arg) <= 0)
        return; /* already in order */
    merge_runs(a, nl, n - nl, size, tmp, cmp, arg);
}

void sort_merge(void *base, size_t n, size_t size, cmp_fn cmp, void *arg)
{
    if (n < 2)
        return;
    char *tmp = malloc(n * size);
    if (!tmp)
        abort();
    merge_rec(base, n, size, tmp, cmp, arg);
    free(tmp);
}

/* ---- quicksort ---- */

static size_t median3(void *base, size_t a, size_t b, size_t c, size_t size, cmp_fn cmp,
                      void *arg)
{
    char *x = at(base, a, size), *y = at(base, b, size), *z = at(base, c, size);
    if (cmp(x, y, arg) < 0)
        return cmp(y, z, arg) < 0 ? b : (cmp(x, z, arg) < 0 ? c : a);
    return cmp(x, z, arg) < 0 ? a : (cmp(y, z, arg) < 0 ? c : b);
}

static size_t partition(void *base, size_t n, size_t size, cmp_fn cmp, void *arg)
{
    size_t p = median3(base, 0, n / 2, n - 1, size, cmp, arg);
    swap_bytes(at(base, p, size), at(base, n - 1, size), size);
    char *pivot = at(base, n - 1, size);
    size_t store = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        if (cmp(at(base, i, size), pivot, arg) < 0) {
            if (i != store)
                swap_bytes(at(base, i, size), at(base, store, size), size);
            store++;
        }
    }
    swap_bytes(at(base, store, size), pivot, size);
    return store;
}

void sort_quick(void *base, size_t n, size_t size, cmp_fn cmp, void *arg)
{
    while (n > 12) {
        size_t p = partition(base, n, size, cmp, arg);
        /* recurse into the smaller side, loop on the larger: O(log n) stack */
        if (p < n - p - 1) {
            sort_quick(base, p, size, cmp, arg);
            base = at(base, p + 1, size);
            n = n - p - 1;
        } else {
            sort_quick(at(base, p + 1, size), n - p - 1, size, cmp, arg);
            n = p;
        }
    }
    sort_insertion(base, n, size, cmp, arg);
}

/* ---- top k: a min-heap of the k best ---- */

static size_t parent_of(size_t i)
{
    return (i - 1) / 2;
}

static void sift_up(void **h, size_t i, cmp_fn cmp, void *arg)
{
    while (i > 0 && cmp(&h[i], &h[parent_of(i)], arg) < 0) {
        void *t = h[i];
        h[i] = h[parent_of(i)];
        h[parent_of(i)] = t;
        i = parent_of(i);
    }
}

static void sift_down(void **h, size_t n, size_t i, cmp_fn cmp, void *arg)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && cmp(&h[l], &h[m], arg) < 0)
            m = l;
        if (r < n && cmp(&h[r], &h[m], arg) < 0)
            m = r;
        if (m == i)
            return;
        void *t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* The k greatest items by cmp, greatest first, into out (k slots). */
size_t topk(void **items, size_t n, size_t k, cmp_fn cmp, void *arg, void **out)
{
    size_t m = 0;
    for (size_t i = 0; i < n && k > 0; i++) {
        if (m < k) {
            out[m] = items[i];
            sift_up(out, m++, cmp, arg);
        } else if (cmp(&items[i], &out[0], arg) > 0) {
            out[0] = items[i];
            sift_down(out, m, 0, cmp, arg);
        }
    }
    /* heap -> descending order: pop the minimum to the end */
    for (size_t e = m; e > 1; e--) {
        void *t = out[0];
        out[0] = out[e - 1];
        out[e - 1] = t;
        sift_down(out, e - 1, 0, cmp, arg);
    }
    return m;
}
