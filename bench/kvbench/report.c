/* SPDX-License-Identifier: MIT */
/* bench/kvbench/report.c — what the run answered (group report): a CRC-32 over every
 * response, counts and byte totals per command, a log2 histogram of response sizes. */
#include <stdlib.h>
#include <string.h>

#include "kv.h"

#define KINDS (C_BAD + 1)
#define HIST 16

struct report {
    uint32_t crc;
    uint64_t count[KINDS], bytes[KINDS], errors[KINDS], misses[KINDS];
    uint64_t hist[HIST];
};

static uint32_t crc_table[256];
static int crc_ready;

static uint32_t crc_entry(uint32_t c)
{
    for (int k = 0; k < 8; k++)
        c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
    return c;
}

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++)
        crc_table[i] = crc_entry(i);
    crc_ready = 1;
}

static uint32_t crc_byte(uint32_t crc, unsigned char b)
{
    return crc_table[(crc ^ b) & 0xff] ^ (crc >> 8);
}

uint32_t crc32_update(uint32_t crc, const void *data, size_t n)
{
    if (!crc_ready)
        crc_init();
    const unsigned char *p = data;
    crc = ~crc;
    for (size_t i = 0; i < n; i++)
        crc = crc_byte(crc, p[i]);
    return ~crc;
}

struct report *report_new(void)
{
    struct report *r = calloc(1, sizeof *r);
    if (!r)
        abort();
    return r;
}

void report_free(struct report *r)
{
    free(r);
}

static unsigned log2_bucket(size_t n)
{
    unsigned b = 0;
    while (n > 1 && b + 1 < HIST) {
        n >>= 1;
        b++;
    }
    return b;
}

void report_response(struct report *r, enum cmd_kind k, const char *resp, size_t n, int rc)
{
    unsigned i = (unsigned)k < KINDS ? (unsigned)k : C_BAD;
    r->count[i]++;
    r->bytes[i] += n;
    if (rc < 0)
        r->errors[i]++;
    else if (rc > 0)
        r->misses[i]++;
    r->hist[log2_bucket(n)]++;
    r->crc = crc32_update(r->crc, resp, n);
}

uint32_t report_crc(const struct report *r)
{
    return r->crc;
}

static const char *kind_name(unsigned k)
{
    static const char *const names[KINDS] = {"SET", "GET", "DEL", "INCR", "SCAN",
                                             "TOP", "COUNT", "APPEND", "BAD"};
    return names[k];
}

static void summary_line(const struct report *r, unsigned k, struct buf *out)
{
    buf_put_padded(out, kind_name(k), strlen(kind_name(k)), 8, 0);
    struct buf num;
    buf_init(&num);
    buf_put_u64(&num, r->count[k]);
    buf_put_padded(out, num.p, num.len, 10, 1);
    buf_clear(&num);
    buf_put_u64(&num, r->bytes[k]);
    buf_put_padded(out, num.p, num.len, 12, 1);
    buf_puts(out, "  miss ");
    buf_put_u64(out, r->misses[k]);
    buf_puts(out, " err ");
    buf_put_u64(out, r->errors[k]);
    buf_putc(out, '\n');
    buf_free(&num);
}

void report_summary(const struct report *r, struct buf *out)
{
    for (unsigned k = 0; k < KINDS; k++)
        if (r->count[k])
            summary_line(r, k, out);
    buf_puts(out, "sizes");
    for (unsigned b = 0; b < HIST; b++) {
        buf_putc(out, ' ');
        buf_put_u64(out, r->hist[b]);
    }
    buf_puts(out, "\ncrc32 ");
    buf_put_hex(out, r->crc, 8);
    buf_putc(out, '\n');
}
