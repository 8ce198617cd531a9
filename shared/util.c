/* SPDX-License-Identifier: MIT */
/*
 * util.c — the small pieces both programs share: a u64 hash map, a buffered writer with JSON
 * number/string formatting and UTF-8 text for terminals, C++ demangling, and the one error
 * line of a bad input (file, byte offset).
 */
#include <errno.h>
#include <stdio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "pgshared.h"
#include "reading.h"

/* ---- Hash map ------------------------------------------------------------------------ */
#define EMPTY UINT64_MAX

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

uint64_t pgc_hash_bytes(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ull;
    }
    return mix(h) & ~(1ull << 63); /* never EMPTY */
}

void pgc_hash_free(struct pgc_hash *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof(*m));
}

int pgc_hash_get(const struct pgc_hash *m, uint64_t key, uint32_t *val)
{
    if (m->cap == 0)
        return 0;
    size_t mask = m->cap - 1;
    for (size_t i = mix(key) & mask;; i = (i + 1) & mask) {
        if (m->keys[i] == key) {
            *val = m->vals[i];
            return 1;
        }
        if (m->keys[i] == EMPTY)
            return 0;
    }
}

static int map_grow(struct pgc_hash *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    uint64_t *nk = malloc(ncap * sizeof(*nk));
    uint32_t *nv = malloc(ncap * sizeof(*nv));
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return -ENOMEM;
    }
    for (size_t i = 0; i < ncap; i++)
        nk[i] = EMPTY;
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i] == EMPTY)
            continue;
        size_t j = mix(m->keys[i]) & (ncap - 1);
        while (nk[j] != EMPTY)
            j = (j + 1) & (ncap - 1);
        nk[j] = m->keys[i];
        nv[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = ncap;
    return 0;
}

int pgc_hash_put(struct pgc_hash *m, uint64_t key, uint32_t val)
{
    if (key == EMPTY)
        key = EMPTY - 1; /* callers never use this value; keep the sentinel free */
    if ((m->len + 1) * 4 >= m->cap * 3 && map_grow(m) != 0)
        return -ENOMEM;
    size_t mask = m->cap - 1;
    for (size_t i = mix(key) & mask;; i = (i + 1) & mask) {
        if (m->keys[i] == key) {
            m->vals[i] = val;
            return 0;
        }
        if (m->keys[i] == EMPTY) {
            m->keys[i] = key;
            m->vals[i] = val;
            m->len++;
            return 0;
        }
    }
}

/* ---- Writer -------------------------------------------------------------------------- */
void pgc_out_init(struct pgc_out *o, FILE *f)
{
    o->f = f;
    o->len = 0;
    o->err = 0;
}

void pgc_out_flush(struct pgc_out *o)
{
    if (!o->f) { /* a fixed buffer (marker payloads): nothing to flush to */
        o->err = ENOSPC;
        return;
    }
    if (o->len && !o->err && fwrite(o->buf, 1, o->len, o->f) != o->len)
        o->err = errno ? errno : EIO;
    o->len = 0;
}

void pgc_out_raw_slow(struct pgc_out *o, const char *s, size_t n)
{
    if (!o->f) { /* a full fixed buffer: drop, the payload builder checks room first */
        o->err = ENOSPC;
        return;
    }
    if (o->len + n > sizeof(o->buf)) {
        pgc_out_flush(o);
        if (n > sizeof(o->buf)) {
            if (!o->err && fwrite(s, 1, n, o->f) != n)
                o->err = errno ? errno : EIO;
            return;
        }
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
}

void pgc_out_str(struct pgc_out *o, const char *s)
{
    pgc_out_raw(o, s, strlen(s));
}

void pgc_out_json_str(struct pgc_out *o, const char *s, size_t n)
{
    pgc_out_raw(o, "\"", 1);
    pgc_out_json_chars(o, s, n);
    pgc_out_raw(o, "\"", 1);
}

size_t pgc_utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    uint32_t cp, min;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, cp = c & 0x1f, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, cp = c & 0x0f, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, cp = c & 0x07, min = 0x10000;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0; /* overlong, beyond Unicode, or a UTF-16 surrogate */
    return len;
}

/* Any bytes become a valid JSON string body: control characters, '"' and '\\' escaped, a
 * byte that does not start a valid UTF-8 sequence replaced by U+FFFD. */
void pgc_out_json_chars(struct pgc_out *o, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t run = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7f) {
            size_t l = c < 0x80 ? 1 : pgc_utf8_len((const unsigned char *)s + i, n - i);
            if (l) {
                i += l;
                continue;
            }
            pgc_out_raw(o, s + run, i - run);
            pgc_out_raw(o, "\xef\xbf\xbd", 3); /* U+FFFD */
            run = ++i;
            continue;
        }
        pgc_out_raw(o, s + run, i - run);
        run = ++i;
        char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        if (c == '"' || c == '\\') {
            e[1] = (char)c;
            pgc_out_raw(o, e, 2);
        } else {
            pgc_out_raw(o, e, 6);
        }
    }
    pgc_out_raw(o, s + run, n - run);
}

char *pgc_utf8_dup(const char *s, int controls)
{
    size_t n = strlen(s), k = 0;
    char *d = malloc(3 * n + 1); /* a byte becomes at most 3 (U+FFFD) */
    if (!d)
        return NULL;
    for (size_t i = 0; i < n;) {
        const unsigned char *u = (const unsigned char *)s + i;
        size_t l = pgc_utf8_len(u, n - i);
        int control = l == 1 ? u[0] < 0x20 || u[0] == 0x7f : l == 2 && u[0] == 0xc2 && u[1] < 0xa0;
        if (l && !(controls && control)) {
            memcpy(d + k, u, l);
            k += l;
            i += l;
        } else {
            memcpy(d + k, "\xef\xbf\xbd", 3); /* U+FFFD */
            k += 3;
            i += l ? l : 1;
        }
    }
    d[k] = 0;
    return d;
}

const char *pgc_text_safe(char *dst, size_t cap, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = strlen(s), k = 0;
    for (size_t i = 0; i < n && k + 5 < cap;) {
        const unsigned char *u = (const unsigned char *)s + i;
        size_t l = u[0] >= 0x20 && u[0] != 0x7f ? pgc_utf8_len(u, n - i) : 0;
        /* U+0080..U+009F (C2 80..C2 9F) are C1 controls: CSI is one of them */
        if (l && !(l == 2 && u[0] == 0xc2 && u[1] < 0xa0) && u[0] != '\\') {
            if (k + l + 1 > cap)
                break;
            memcpy(dst + k, u, l);
            k += l;
            i += l;
            continue;
        }
        dst[k++] = '\\';
        if (u[0] == '\\') {
            dst[k++] = '\\';
        } else {
            dst[k++] = 'x';
            dst[k++] = hex[u[0] >> 4];
            dst[k++] = hex[u[0] & 15];
        }
        i++;
    }
    dst[k] = 0;
    return dst;
}

/* Number formatting is most of the converter's time: digits go straight into the output
 * buffer, two at a time from a table, with 32-bit division once the value fits (a libc
 * memcpy per number from a scratch buffer cost more than the division). */
static const char two_digits[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static unsigned ndigits(uint64_t v)
{
    static const uint64_t pow10[20] = {
        1u, 10u, 100u, 1000u, 10000u, 100000u, 1000000u, 10000000u, 100000000u, 1000000000u,
        10000000000u, 100000000000u, 1000000000000u, 10000000000000u, 100000000000000u,
        1000000000000000u, 10000000000000000u, 100000000000000000u, 1000000000000000000u,
        10000000000000000000u};
    unsigned t = ((64u - (unsigned)__builtin_clzll(v | 1)) * 1233u) >> 12; /* ~ log10 */
    return v < pow10[t] ? (t ? t : 1) : t + 1;
}

/* The digits of v ending at w + n (n >= ndigits(v); the first n - ndigits(v) bytes are left
 * as they are); returns w + n. */
static char *put_digits(char *w, uint64_t v, unsigned n)
{
    char *p = w + n;
    while (v > UINT32_MAX) {
        *--p = (char)('0' + v % 10);
        v /= 10;
    }
    uint32_t x = (uint32_t)v;
    while (x >= 100) {
        const char *d = two_digits + 2 * (x % 100);
        x /= 100;
        *--p = d[1];
        *--p = d[0];
    }
    if (x >= 10) {
        *--p = two_digits[2 * x + 1];
        *--p = two_digits[2 * x];
    } else {
        *--p = (char)('0' + x);
    }
    return w + n;
}

void pgc_out_u64(struct pgc_out *o, uint64_t v)
{
    if (o->len + 20 > sizeof(o->buf))
        pgc_out_flush(o);
    if (o->len + 20 > sizeof(o->buf))
        return; /* a writer used as a fixed buffer (payloads): full */
    o->len = (size_t)(put_digits(o->buf + o->len, v, ndigits(v)) - o->buf);
}

void pgc_out_i64(struct pgc_out *o, int64_t v)
{
    if (v < 0) {
        pgc_out_raw(o, "-", 1);
        pgc_out_u64(o, (uint64_t)0 - (uint64_t)v);
    } else {
        pgc_out_u64(o, (uint64_t)v);
    }
}

void pgc_out_fixed(struct pgc_out *o, int64_t v, int64_t div)
{
    uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    if (o->len + 48 > sizeof(o->buf))
        pgc_out_flush(o);
    if (o->len + 48 > sizeof(o->buf))
        return;
    char *w = o->buf + o->len;
    if (v < 0)
        *w++ = '-';
    uint64_t q;
    uint32_t frac; /* div <= 1e9 */
    unsigned n;    /* the fraction's digits, zeros kept */
    switch (div) { /* the divisors in use, as constants: a multiplication, not a division */
    case 1000:
        q = a / 1000, frac = (uint32_t)(a % 1000), n = 3;
        break;
    case 1000000:
        q = a / 1000000, frac = (uint32_t)(a % 1000000), n = 6;
        break;
    default:
        q = a / (uint64_t)div, frac = (uint32_t)(a % (uint64_t)div);
        n = ndigits((uint64_t)div) - 1;
        break;
    }
    w = put_digits(w, q, ndigits(q));
    if (frac) {
        *w++ = '.';
        memset(w, '0', n); /* the fraction's leading zeros */
        w = put_digits(w, frac, n);
        while (w[-1] == '0') /* and no trailing ones (frac > 0: a digit is not 0) */
            w--;
    }
    o->len = (size_t)(w - o->buf);
}

void pgc_out_double(struct pgc_out *o, double v)
{
    char b[40];
    if (v != v || v > 1e300 || v < -1e300)
        v = 0; /* JSON has no NaN/Infinity */
    int n = snprintf(b, sizeof(b), "%.6g", v);
    pgc_out_raw(o, b, (size_t)n);
}

/* ---- Demangling ---------------------------------------------------------------------- */
/*
 * GCC's own demangler (libiberty's cp-demangle.c, as shipped in libstdc++ under the
 * Itanium ABI name __cxa_demangle): the one every GNU tool uses, maintained with the
 * compiler that produces the names. Declared here so the converter stays C; linking
 * libstdc++ adds no C++ code of ours.
 */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *pgc_demangle(const char *name)
{
    if (!name || name[0] != '_' || name[1] != 'Z')
        return NULL;
    int status = 0;
    char *d = __cxa_demangle(name, NULL, NULL, &status);
    if (status != 0) {
        free(d);
        return NULL;
    }
    return d;
}

/* ---- Errors: the one line (file, byte offset) ------------------------------------------ */

void pgc_read_fail(struct pgc_error *err, const char *path, uint64_t off, const char *what)
{
    if (err->set)
        return;
    err->set = 1;
    snprintf(err->msg, sizeof(err->msg), "%s: byte %" PRIu64 ": %s", path, off, what);
}

int pgc_read_oom(struct pgc_file *f, struct pgc_error *err)
{
    pgc_read_fail(err, f->path, 0, "out of memory");
    return -1;
}
