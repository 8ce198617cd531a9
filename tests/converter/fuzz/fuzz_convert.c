/* SPDX-License-Identifier: MIT */
/*
 * fuzz_convert.c — libFuzzer target for the reader and the converter together: the input is
 * a recording file; it is opened (pgreader validation + definitions) and, when valid, written
 * as a Gecko profile, a summary (text and JSON), a Chrome trace, and (twice over, as two
 * processes) a Gecko profile again, to /dev/null. Built with
 * clang -fsanitize=fuzzer,address,undefined; any crash, leak or UB report is a finding.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pgconv.h"

static FILE *devnull;

/* which: 0 Gecko, 1 summary, 2 summary JSON, 3 Chrome, 4 Gecko of two copies (the
 * multi-process path: root choice, sub-processes, shared categories) */
static void convert(const char *path, int which)
{
    struct pgc_error err = {0};
    struct pgc_file f[2];
    struct pgc_options opt = {.interval_ns = 1000000, .max_samples = 20000, .progress = 0,
                              .summary_json = which == 2};
    size_t n = which == 4 ? 2 : 1, opened = 0;
    int rc = 0;
    memset(f, 0, sizeof(f));
    for (; opened < n && rc == 0; opened++)
        rc = perfgroup__file_open(&f[opened], path, &err);
    if (rc == 0) {
        struct pgc_out *o = malloc(sizeof(*o));
        if (o) {
            perfgroup__out_init(o, devnull);
            if (which == 0 || which == 4)
                perfgroup__gecko_write(f, n, &opt, o, &err);
            else if (which == 3)
                perfgroup__chrome_write(f, n, &opt, o, &err);
            else
                perfgroup__summary_write(f, n, &opt, o, &err);
            free(o);
        }
    }
    for (size_t i = 0; i < opened; i++)
        perfgroup__file_close(&f[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!devnull)
        devnull = fopen("/dev/null", "w");
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
