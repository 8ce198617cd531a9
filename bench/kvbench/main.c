/* SPDX-License-Identifier: MIT */
/* bench/kvbench/main.c — the driver (group driver): each round generates a batch of command
 * lines from a fixed-seed PRNG, parses and executes them, and reports every response; every
 * 16 rounds the store's invariants are checked. Prints the summary (the same for every
 * build: the checksum is the workload's identity) and cpu_ns, the thread CPU time of the
 * rounds. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kv.h"

#define BATCH 2000
#define KEYSPACE 60000

struct rng {
    uint64_t s;
};

static uint64_t rng_next(struct rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

static unsigned rng_below(struct rng *r, unsigned n)
{
    return (unsigned)(rng_next(r) % n);
}

static unsigned skewed_key(struct rng *r)
{
    /* a hot tenth of the keys takes half the traffic */
    return rng_below(r, 2) ? rng_below(r, KEYSPACE / 10) : rng_below(r, KEYSPACE);
}

static void put_key(struct buf *b, unsigned k)
{
    static const char *const prefix[] = {"user:", "item:", "order:", "cart:"};
    buf_puts(b, prefix[k % 4]);
    buf_put_hex(b, k, 6);
}

static void put_word(struct buf *b, struct rng *r)
{
    static const char *const syll[] = {"ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi",
                                       "ber", "don", "\\\"q\\\"", "x"};
    unsigned n = 2 + rng_below(r, 4);
    for (unsigned i = 0; i < n; i++)
        buf_puts(b, syll[rng_below(r, sizeof syll / sizeof syll[0])]);
}

static void gen_set(struct buf *b, struct rng *r)
{
    static const char *const names[] = {"name", "age", "score", "city", "tags", "qty"};
    buf_puts(b, "SET ");
    put_key(b, skewed_key(r));
    buf_puts(b, " {");
    unsigned nf = 1 + rng_below(r, 5);
    for (unsigned i = 0; i < nf; i++) {
        if (i)
            buf_puts(b, ", ");
        buf_puts(b, names[(i + rng_below(r, 2)) % 6]);
        buf_puts(b, ": ");
        if (rng_below(r, 2)) {
            buf_put_i64(b, (int64_t)rng_below(r, 100000) - 5000);
        } else {
            buf_putc(b, '"');
            put_word(b, r);
            buf_putc(b, '"');
        }
    }
    buf_putc(b, '}');
}

static void gen_simple(struct buf *b, struct rng *r, const char *verb)
{
    buf_puts(b, verb);
    put_key(b, skewed_key(r));
}

static void gen_incr(struct buf *b, struct rng *r)
{
    gen_simple(b, r, "INCR ");
    buf_puts(b, rng_below(r, 2) ? " score " : " qty ");
    buf_put_i64(b, (int64_t)rng_below(r, 200) - 100);
}

static void gen_append(struct buf *b, struct rng *r)
{
    gen_simple(b, r, "APPEND ");
    buf_puts(b, " name \"");
    put_word(b, r);
    buf_putc(b, '"');
}

static void gen_scan(struct buf *b, struct rng *r)
{
    unsigned k = skewed_key(r);
    buf_puts(b, "SCAN ");
    put_key(b, k);
    buf_putc(b, ' ');
    put_key(b, k + 4 * (1 + rng_below(r, 64)));
    buf_puts(b, " LIMIT ");
    buf_put_u64(b, 8 + rng_below(r, 56));
}

static void gen_bad(struct buf *b, struct rng *r)
{
    static const char *const bad[] = {"SET x {", "GET", "SCAN a b LIMIT", "FROB x", "TOP x BY y",
                                      "SET k {a: \"unterminated}", "INCR k f 99999999999999999999"};
    buf_puts(b, bad[rng_below(r, sizeof bad / sizeof bad[0])]);
}

/* One command line into b (cleared first). */
static void gen_command(struct buf *b, struct rng *r, unsigned seq)
{
    buf_clear(b);
    if (seq % 997 == 996) {
        buf_puts(b, "TOP 10 BY ");
        buf_puts(b, seq % 2 ? "score" : "age");
        return;
    }
    unsigned x = rng_below(r, 100);
    if (x < 30)
        gen_set(b, r);
    else if (x < 62)
        gen_simple(b, r, "GET ");
    else if (x < 70)
        gen_simple(b, r, "DEL ");
    else if (x < 80)
        gen_incr(b, r);
    else if (x < 86)
        gen_append(b, r);
    else if (x < 97)
        gen_scan(b, r);
    else if (x < 99)
        buf_puts(b, "COUNT");
    else
        gen_bad(b, r);
}

static void run_one(struct store *s, struct report *rep, const struct buf *line, struct buf *out)
{
    struct cmd c;
    buf_clear(out);
    int rc;
    if (parse_command(line->p, line->len, &c) != 0) {
        buf_puts(out, "ERR parse");
        rc = -1;
    } else {
        rc = store_exec(s, &c, out);
    }
    report_response(rep, c.kind, out->p, out->len, rc);
}

static void run_round(struct store *s, struct report *rep, struct rng *r, unsigned round,
                      struct buf *line, struct buf *out)
{
    for (unsigned i = 0; i < BATCH; i++) {
        gen_command(line, r, round * BATCH + i);
        run_one(s, rep, line, out);
    }
}

static long long thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    unsigned rounds = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 500;
    struct rng r = {0x2545f4914f6cdd1dull};
    struct store *s = store_new();
    struct report *rep = report_new();
    struct buf line, out;
    buf_init(&line);
    buf_init(&out);
    long long t0 = thread_cpu_ns();
    for (unsigned i = 0; i < rounds; i++) {
        run_round(s, rep, &r, i, &line, &out);
        if (i % 16 == 15 && store_check(s) != 0) {
            fprintf(stderr, "kvbench: store invariants broken after round %u\n", i);
            return 2;
        }
    }
    long long cpu = thread_cpu_ns() - t0;
    buf_clear(&out);
    report_summary(rep, &out);
    printf("%srecords %zu\ncpu_ns=%lld\n", out.p, store_count(s), cpu);
    buf_free(&line);
    buf_free(&out);
    report_free(rep);
    store_free(s);
    return 0;
}
