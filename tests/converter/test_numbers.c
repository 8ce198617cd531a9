/* SPDX-License-Identifier: MIT */
/*
 * test_numbers.c — the converter's number writers (shared/util.c) against printf: every
 * time, duration and CPU figure in the Gecko, Chrome and summary outputs goes through them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgconv.h"

static struct pgc_out o; /* a fixed buffer (f = NULL): nothing is flushed */
static int failures;

static void expect(const char *what, const char *want)
{
    if (o.len != strlen(want) || memcmp(o.buf, want, o.len)) {
        if (failures++ < 10)
            fprintf(stderr, "%s: got \"%.*s\", want \"%s\"\n", what, (int)o.len, o.buf, want);
    }
}

static void u64(uint64_t v)
{
    char want[32];
    snprintf(want, sizeof(want), "%" PRIu64, v);
    o.len = 0;
    pgc_out_u64(&o, v);
    expect("out_u64", want);
}

/* v / div with its decimals (div a power of ten), no trailing zeros, no "." when whole */
static void fixed(int64_t v, int64_t div, int decimals)
{
    uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    char want[64];
    int n = snprintf(want, sizeof(want), "%s%" PRIu64, v < 0 ? "-" : "", a / (uint64_t)div);
    if (a % (uint64_t)div) {
        n += snprintf(want + n, sizeof(want) - (size_t)n, ".%0*" PRIu64, decimals,
                      a % (uint64_t)div);
        while (want[n - 1] == '0')
            want[--n] = '\0';
    }
    o.len = 0;
    pgc_out_fixed(&o, v, div);
    expect("out_fixed", want);
}

int main(void)
{
    uint64_t p = 1;
    for (int i = 0; i < 20; i++, p *= 10) { /* every length, both sides of each power */
        u64(p - 1);
        u64(p);
        u64(p + 1);
        fixed((int64_t)(p / 2), 1000, 3);
        fixed((int64_t)(p / 2), 1000000, 6);
        fixed(-(int64_t)(p / 2 + 7), 1000000000, 9);
    }
    u64(0);
    u64(UINT32_MAX);
    u64((uint64_t)UINT32_MAX + 1);
    u64(UINT64_MAX);
    fixed(0, 1000, 3);
    fixed(INT64_MAX, 1000000, 6);
    fixed(INT64_MIN, 1000, 3);
    fixed(1, 1000000000, 9); /* 0.000000001 */
    fixed(100, 1000, 3);     /* 0.1 */
    fixed(5, 10, 1);         /* a divisor without its own case */
    uint64_t x = 88172645463325252u; /* xorshift64: every magnitude, reproducibly */
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t v = x >> (x % 64);
        u64(v);
        fixed((int64_t)(v >> 1), 1000, 3);
        fixed(-(int64_t)(v >> 2), 1000000, 6);
        fixed((int64_t)(v % 3000000), 1000000, 6);
        fixed((int64_t)(v >> 1), 1000000000, 9);
    }
    if (failures) {
        fprintf(stderr, "FAIL: %d numbers written wrong\n", failures);
        return 1;
    }
    printf("ok: number writers agree with printf\n");
    return 0;
}
