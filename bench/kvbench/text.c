/* SPDX-License-Identifier: MIT */
/* bench/kvbench/text.c — growable buffers, number and string formatting (group text). */
#include <stdlib.h>
#include <string.h>

#include "kv.h"

static void die_oom(void)
{
    abort();
}

static size_t grow_to(size_t cap, size_t need)
{
    size_t c = cap ? cap : 64;
    while (c < need)
        c *= 2;
    return c;
}

static void reserve(struct buf *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    size_t c = grow_to(b->cap, need);
    char *p = realloc(b->p, c);
    if (!p)
        die_oom();
    b->p = p;
    b->cap = c;
}

void buf_init(struct buf *b)
{
    b->p = NULL;
    b->len = b->cap = 0;
    reserve(b, 0);
    b->p[0] = '\0';
}

void buf_free(struct buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

void buf_clear(struct buf *b)
{
    b->len = 0;
    b->p[0] = '\0';
}

void buf_putc(struct buf *b, char c)
{
    reserve(b, 1);
    b->p[b->len++] = c;
    b->p[b->len] = '\0';
}

void buf_putn(struct buf *b, const char *s, size_t n)
{
    reserve(b, n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void buf_puts(struct buf *b, const char *s)
{
    buf_putn(b, s, strlen(s));
}

const char *buf_cstr(struct buf *b)
{
    return b->p;
}

/* ---- numbers ---- */

static char digit_char(unsigned d)
{
    return (char)('0' + d);
}

static char hex_char(unsigned d)
{
    return "0123456789abcdef"[d & 15];
}

static size_t u64_digits(uint64_t v, char *tmp)
{
    size_t n = 0;
    do {
        tmp[n++] = digit_char((unsigned)(v % 10));
        v /= 10;
    } while (v);
    return n;
}

static void reverse_into(struct buf *b, const char *tmp, size_t n)
{
    reserve(b, n);
    for (size_t i = 0; i < n; i++)
        b->p[b->len + i] = tmp[n - 1 - i];
    b->len += n;
    b->p[b->len] = '\0';
}

void buf_put_u64(struct buf *b, uint64_t v)
{
    char tmp[24];
    reverse_into(b, tmp, u64_digits(v, tmp));
}

static uint64_t magnitude(int64_t v)
{
    return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

void buf_put_i64(struct buf *b, int64_t v)
{
    if (v < 0)
        buf_putc(b, '-');
    buf_put_u64(b, magnitude(v));
}

void buf_put_hex(struct buf *b, uint64_t v, int width)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = hex_char((unsigned)(v & 15));
        v >>= 4;
    } while (v);
    while ((int)n < width && n < sizeof tmp)
        tmp[n++] = '0';
    reverse_into(b, tmp, n);
}

static void put_frac3(struct buf *b, uint64_t frac)
{
    buf_putc(b, digit_char((unsigned)(frac / 100)));
    buf_putc(b, digit_char((unsigned)(frac / 10 % 10)));
    buf_putc(b, digit_char((unsigned)(frac % 10)));
}

void buf_put_fixed(struct buf *b, int64_t milli)
{
    if (milli < 0)
        buf_putc(b, '-');
    uint64_t m = magnitude(milli);
    buf_put_u64(b, m / 1000);
    buf_putc(b, '.');
    put_frac3(b, m % 1000);
}

/* ---- strings ---- */

static int needs_escape(unsigned char c)
{
    return c < 0x20 || c == '"' || c == '\\' || c >= 0x7f;
}

static void put_escape(struct buf *b, unsigned char c)
{
    switch (c) {
    case '"': buf_putn(b, "\\\"", 2); break;
    case '\\': buf_putn(b, "\\\\", 2); break;
    case '\n': buf_putn(b, "\\n", 2); break;
    case '\t': buf_putn(b, "\\t", 2); break;
    default:
        buf_putn(b, "\\x", 2);
        buf_put_hex(b, c, 2);
    }
}

void buf_put_quoted(struct buf *b, const char *s, size_t n)
{
    buf_putc(b, '"');
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (needs_escape(c)) {
            buf_putn(b, s + i - run, run);
            run = 0;
            put_escape(b, c);
        } else {
            run++;
        }
    }
    buf_putn(b, s + n - run, run);
    buf_putc(b, '"');
}

static void put_spaces(struct buf *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        buf_putc(b, ' ');
}

void buf_put_padded(struct buf *b, const char *s, size_t n, size_t width, int right)
{
    size_t pad = n < width ? width - n : 0;
    if (right)
        put_spaces(b, pad);
    buf_putn(b, s, n);
    if (!right)
        put_spaces(b, pad);
}

static char lower_char(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

size_t text_lower(char *dst, const char *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = lower_char(src[i]);
    return n;
}

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

int text_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    size_t n = min_size(an, bn);
    for (size_t i = 0; i < n; i++) {
        unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
        if (x != y)
            return x < y ? -1 : 1;
    }
    return an < bn ? -1 : an > bn;
}

int text_has_prefix(const char *s, size_t n, const char *prefix, size_t pn)
{
    return n >= pn && text_cmp(s, pn, prefix, pn) == 0;
}
