/* SPDX-License-Identifier: MIT */
/*
 * fuzz_convert.c — libFuzzer target for the reader and the converter together: the input is
 * a recording file; it is opened (pgreader validation + definitions) and, when valid, written
 * as a Gecko profile, a summary (text and JSON), a Chrome trace, and (twice over, as two
 * processes) a Gecko profile again, into a sink that counts the bytes. Built with
 * clang -fsanitize=fuzzer,address,undefined; any crash, leak or UB report is a finding, and
 * so is an output over the documented bound (docs/converter.md, "Bounds"): the options are
 * the production defaults (max_samples 0: the per-thread default and the output bound), so
 * the fuzzer finds blow-ups, not only crashes. Run it with -timeout=10: a slow input is a
 * finding too.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pgconv.h"

static FILE *sink;
static uint64_t sink_bytes;

static ssize_t count_write(void *c, const char *buf, size_t n)
{
    (void)c;
    (void)buf;
    sink_bytes += n;
    return (ssize_t)n;
}

/* c.N + k for inputs of N bytes: every row that grows with time (samples, counter rows) at
 * most PGC_ROWS_BASE + PGC_ROWS_PER_BYTE * N of each kind, at most 64 bytes of JSON each; a
 * record (>= 2 bytes) makes at most one marker or trace event (< 1 KiB); 1 MiB of tables. */
static uint64_t bound(uint64_t n)
{
    return 2 * 64 * ((uint64_t)PGC_ROWS_BASE + PGC_ROWS_PER_BYTE * n) + 512 * n + (1u << 20);
}

/* which: 0 Gecko, 1 summary, 2 summary JSON, 3 Chrome, 4 Gecko of two copies (the
 * multi-process path: root choice, sub-processes, shared categories) */
static void convert(const char *path, int which)
{
    struct pgc_error err = {0};
    struct pgc_file f[2];
    struct pgc_options opt = {.interval_ns = 1000000, .max_samples = 0, .progress = 0,
                              .summary_json = which == 2};
    size_t n = which == 4 ? 2 : 1, opened = 0;
    int rc = 0;
    memset(f, 0, sizeof(f));
    for (; opened < n && rc == 0; opened++)
        rc = pgc_file_open(&f[opened], path, &err);
    if (rc == 0) {
        struct pgc_out *o = malloc(sizeof(*o));
        if (o) {
            sink_bytes = 0;
            pgc_out_init(o, sink);
            if (which == 0 || which == 4)
                pgc_gecko_write(f, n, &opt, o, &err);
            else if (which == 3)
                pgc_chrome_write(f, n, &opt, o, &err);
            else
                pgc_summary_write(f, n, &opt, o, &err);
            fflush(sink);
            uint64_t in = 0;
            for (size_t i = 0; i < n; i++)
                in += f[i].size;
            if (sink_bytes > bound(in)) {
                fprintf(stderr, "fuzz_convert: output %llu bytes from %llu bytes of input "
                        "(output %d): over the bound %llu\n", (unsigned long long)sink_bytes,
                        (unsigned long long)in, which, (unsigned long long)bound(in));
                abort();
            }
            free(o);
        }
    }
    for (size_t i = 0; i < opened; i++)
        pgc_file_close(&f[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!sink) {
        cookie_io_functions_t io = {.write = count_write};
        sink = fopencookie(NULL, "w", io);
        if (!sink)
            return 0;
    }
    int fd = memfd_create("pgm", 0);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) == (ssize_t)size) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        for (int which = 0; which < 5; which++)
            convert(path, which);
    }
    close(fd);
    return 0;
}
