/* SPDX-License-Identifier: MIT */
/*
 * main.c — perfgroup-convert's command line: parse options, open and validate every input
 * before writing anything, write the chosen output to a temporary file next to the target
 * and rename it into place only on success. Exit 0 on success, 1 for usage or output
 * errors, 2 for bad input (one line on stderr: "<file>: byte <offset>: <what>").
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pgconv.h"

static const char usage[] =
    "usage: perfgroup-convert FILE.pgm... [-o OUT] [--format gecko|chrome] [--interval MS]\n"
    "       perfgroup-convert FILE.pgm... --summary [--json]\n"
    "\n"
    "  -o OUT            output file ('-' for stdout); gecko and chrome need it\n"
    "  --format gecko    Gecko profile (version 36) for profiler.firefox.com (default)\n"
    "  --format chrome   Chrome trace-event JSON for ui.perfetto.dev / chrome://tracing\n"
    "  --summary         per-group table per process/thread and overall, on stdout\n"
    "  --json            with --summary: the same as JSON\n"
    "  --interval MS     sample interval of the Gecko profile in ms (default 1; 0.01..1000)\n"
    "  --max-samples N   at most N samples per thread (default 100000000); a damaged\n"
    "                    timestamp cannot make the profile explode\n"
    "  --no-interval-markers  Gecko: no marker per trace-mode group interval (the call tree\n"
    "                    and samples are unchanged; profiles are ~3x smaller)\n"
    "  --progress / --no-progress   force the progress line on stderr on or off\n"
    "                    (default: on when stderr is a terminal)\n"
    "\n"
    "Several files (a program and its forked children) become one profile.\n"
    "Exit status: 0 ok, 1 usage or output error, 2 bad input file.\n";

enum format { FMT_GECKO, FMT_CHROME, FMT_SUMMARY };

static int fail_usage(const char *msg)
{
    fprintf(stderr, "perfgroup-convert: %s\n%s", msg, usage);
    return PGC_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    struct pgc_options opt = {.interval_ns = 1000000, .progress = isatty(2)};
    enum format fmt = FMT_GECKO;
    const char *outpath = NULL;
    const char **inputs = calloc((size_t)argc, sizeof(*inputs));
    size_t ninputs = 0;
    int json = 0, summary = 0, chrome = 0;
    if (!inputs)
        return PGC_EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            free(inputs);
            return 0;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (++i >= argc)
                return fail_usage("-o needs a file name");
            outpath = argv[i];
        } else if (!strcmp(a, "--format")) {
            if (++i >= argc)
                return fail_usage("--format needs gecko or chrome");
            if (!strcmp(argv[i], "chrome"))
                chrome = 1;
            else if (strcmp(argv[i], "gecko"))
                return fail_usage("--format: unknown format (gecko or chrome)");
        } else if (!strcmp(a, "--summary")) {
            summary = 1;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--interval")) {
            char *end;
            if (++i >= argc)
                return fail_usage("--interval needs a number of milliseconds");
            double ms = strtod(argv[i], &end);
            if (*end || !(ms >= 0.01 && ms <= 1000))
                return fail_usage("--interval: milliseconds between 0.01 and 1000");
            opt.interval_ns = (int64_t)(ms * 1e6 + 0.5);
        } else if (!strcmp(a, "--max-samples")) {
            char *end;
            if (++i >= argc)
                return fail_usage("--max-samples needs a count");
            unsigned long long n = strtoull(argv[i], &end, 10);
            if (*end || n < 1000 || n > 1000000000ull)
                return fail_usage("--max-samples: a count between 1000 and 1000000000");
            opt.max_samples = n;
        } else if (!strcmp(a, "--no-interval-markers")) {
            opt.no_interval_markers = 1;
        } else if (!strcmp(a, "--progress")) {
            opt.progress = 1;
        } else if (!strcmp(a, "--no-progress")) {
            opt.progress = 0;
        } else if (a[0] == '-' && a[1]) {
            char m[300];
            snprintf(m, sizeof(m), "unknown option %s", a);
            return fail_usage(m);
        } else {
            inputs[ninputs++] = a;
        }
    }
    if (!ninputs)
        return fail_usage("no input file");
    if (summary && chrome)
        return fail_usage("--summary and --format chrome exclude each other");
    if (json && !summary)
        return fail_usage("--json goes with --summary");
    fmt = summary ? FMT_SUMMARY : chrome ? FMT_CHROME : FMT_GECKO;
    if (fmt != FMT_SUMMARY && !outpath)
        return fail_usage("-o OUT is needed for a profile ('-o -' for stdout)");
    opt.summary_json = json;

    /* Open and validate every input (header, chunk index, definitions) before any output. */
    struct pgc_error err = {0};
    struct pgc_file *files = calloc(ninputs, sizeof(*files));
    if (!files)
        return PGC_EXIT_USAGE;
    size_t nopen = 0;
    int status = 0;
    for (; nopen < ninputs; nopen++) {
        if (perfgroup__file_open(&files[nopen], inputs[nopen], &err)) {
            nopen++;
            status = PGC_EXIT_BADINPUT;
            break;
        }
        /* many inputs: only a small constant per file stays in memory until its turn */
        if (ninputs > 1 && perfgroup__file_park(&files[nopen])) {
            nopen++;
            fprintf(stderr, "perfgroup-convert: out of memory\n");
            status = PGC_EXIT_USAGE;
            break;
        }
    }

    FILE *out = NULL;
    char *tmp = NULL;
    int direct = 0, to_stdout = 0;
    if (!status) {
        struct stat st;
        if (!outpath || !strcmp(outpath, "-")) {
            /* stdout gets the output only once it is whole: bad input half-way prints nothing */
            out = tmpfile();
            to_stdout = 1;
            if (!out) {
                fprintf(stderr, "perfgroup-convert: cannot create a temporary file: %s\n",
                        strerror(errno));
                status = PGC_EXIT_USAGE;
            }
        } else if (stat(outpath, &st) == 0 && !S_ISREG(st.st_mode)) {
            /* a device or pipe (/dev/null, a FIFO): write to it as it is, no temp + rename */
            out = fopen(outpath, "w");
            direct = 1;
            if (!out) {
                fprintf(stderr, "perfgroup-convert: %s: cannot open: %s\n", outpath, strerror(errno));
                status = PGC_EXIT_USAGE;
            }
        } else {
            size_t n = strlen(outpath) + 16;
            tmp = malloc(n);
            if (tmp) {
                snprintf(tmp, n, "%s.tmpXXXXXX", outpath);
                int fd = mkstemp(tmp);
                if (fd >= 0) {
                    fchmod(fd, 0644 & ~(mode_t)0);
                    out = fdopen(fd, "w");
                    if (!out)
                        close(fd);
                }
            }
            if (!out) {
                fprintf(stderr, "perfgroup-convert: %s: cannot create: %s\n", outpath, strerror(errno));
                status = PGC_EXIT_USAGE;
                if (tmp)
                    unlink(tmp);
            }
        }
    }
    if (!status) {
        struct pgc_out *o = malloc(sizeof(*o));
        int rc = -ENOMEM;
        if (o) {
            perfgroup__out_init(o, out);
            if (fmt == FMT_GECKO)
                rc = perfgroup__gecko_write(files, nopen, &opt, o, &err);
            else if (fmt == FMT_CHROME)
                rc = perfgroup__chrome_write(files, nopen, &opt, o, &err);
            else
                rc = perfgroup__summary_write(files, nopen, &opt, o, &err);
            if (rc == 0 && o->err)
                rc = -o->err;
        }
        free(o);
        if (rc == -1 || (rc && err.set)) {
            status = PGC_EXIT_BADINPUT;
        } else if (rc) {
            fprintf(stderr, "perfgroup-convert: %s: write failed: %s\n", outpath ? outpath : "stdout",
                    strerror(-rc));
            status = PGC_EXIT_USAGE;
        }
        if (to_stdout) {
            if (!status) {
                char buf[1 << 16];
                size_t n;
                fflush(out);
                rewind(out);
                while ((n = fread(buf, 1, sizeof(buf), out)) > 0)
                    if (fwrite(buf, 1, n, stdout) != n)
                        break;
                if (ferror(out) || fflush(stdout) || ferror(stdout)) {
                    fprintf(stderr, "perfgroup-convert: stdout: write failed: %s\n", strerror(errno));
                    status = PGC_EXIT_USAGE;
                }
            }
            fclose(out);
        } else if (direct) {
            if ((fflush(out) || ferror(out)) && !status) {
                fprintf(stderr, "perfgroup-convert: %s: write failed: %s\n", outpath, strerror(errno));
                status = PGC_EXIT_USAGE;
            }
            fclose(out);
        } else if (out != stdout) {
            if (fflush(out) || ferror(out)) {
                if (!status) {
                    fprintf(stderr, "perfgroup-convert: %s: write failed: %s\n", outpath,
                            strerror(errno));
                    status = PGC_EXIT_USAGE;
                }
            }
            fclose(out);
            if (!status && rename(tmp, outpath)) {
                fprintf(stderr, "perfgroup-convert: %s: cannot rename: %s\n", outpath, strerror(errno));
                status = PGC_EXIT_USAGE;
            }
            if (status)
                unlink(tmp);
        }
    }
    if (!status)
        for (size_t i = 0; i < nopen; i++)
            perfgroup__file_warnings(&files[i]);
    if (status == PGC_EXIT_BADINPUT)
        fprintf(stderr, "perfgroup-convert: %s\n", err.set ? err.msg : "bad input");
    for (size_t i = 0; i < nopen; i++)
        perfgroup__file_close(&files[i]);
    free(files);
    free(tmp);
    free(inputs);
    return status;
}
