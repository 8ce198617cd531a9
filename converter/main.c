/* SPDX-License-Identifier: MIT */
/*
 * main.c — perfgroup-convert's command line: parse options, open and validate every input
 * before writing anything, write the chosen output to a temporary file next to the target
 * and rename it into place only on success (SIGINT/SIGTERM remove the temporary file; the old
 * output stays as it was on any failure). Exit 0 on success, 1 for usage errors, 2 for bad
 * input (one line on stderr: "<file>: byte <offset>: <what>"), 3 for output errors (cannot
 * create, ENOSPC, EIO: one line with strerror).
 */
#define _GNU_SOURCE /* O_TMPFILE */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pgconv.h"

static const char usage[] =
    "usage: perfgroup-convert FILE.pgm... [-o OUT] [--format gecko|chrome] [--interval MS]\n"
    "       perfgroup-convert FILE.pgm... --summary [--json] [--sort cpu|self]\n"
    "  FILE '-' reads the recording from stdin (once; not from a terminal)\n"
    "\n"
    "  -o OUT            output file ('-' for stdout); gecko and chrome need it\n"
    "  --format gecko    Gecko profile (version 36) for profiler.firefox.com (default)\n"
    "  --format chrome   Chrome trace-event JSON for ui.perfetto.dev / chrome://tracing\n"
    "  --summary         per-group table per process/thread and overall, on stdout\n"
    "  --json            with --summary: the same as JSON\n"
    "  --sort cpu|self   with --summary: rows by CPU (charged, the default) or by self time\n"
    "  --interval MS     sample interval of the Gecko profile in ms (default 1; 0.01..1000)\n"
    "  --max-samples N   at most N samples per thread (default 100000000); given, it also\n"
    "                    lifts the output bound (2^20 + 8 samples per input byte in all)\n"
    "  --no-interval-markers  Gecko: no marker per trace-mode group interval (the call tree\n"
    "                    and samples are unchanged; profiles are ~3x smaller)\n"
    "  --progress / --no-progress   force the progress line on stderr on or off\n"
    "                    (default: on when stderr is a terminal)\n"
    "\n"
    "Several files (a program and its forked children) become one profile.\n"
    "Exit status: 0 ok, 1 usage error, 2 bad input file, 3 output error (disk full, I/O).\n";

enum format { FMT_GECKO, FMT_CHROME, FMT_SUMMARY };

/* The temporary output, removed by SIGINT/SIGTERM (unlink is async-signal-safe). */
static volatile sig_atomic_t tmp_live;
static char *tmp_path;

static void on_signal(int sig)
{
    if (tmp_live)
        unlink(tmp_path);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

/* Is the output one of the inputs (same device and inode)? Writing it would destroy the
 * recording at the rename. */
static const char *output_is_input(const char *outpath, const char **inputs, size_t n)
{
    struct stat so, si;
    if (stat(outpath, &so) != 0)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (stat(inputs[i], &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino)
            return inputs[i];
    return NULL;
}

/* '-': the recording from stdin, copied to an unlinked temporary file the reader opens as
 * /proc/self/fd/N (it reads at offsets, and may open a file twice). The copy stops at the
 * size the header declares (a header the reader will refuse stops it at once), so an endless
 * stdin cannot fill the disk. Returns 0, PGC_EXIT_USAGE (a terminal), PGC_EXIT_OUTPUT (the
 * copy could not be written: ENOSPC, with strerror). */
static char stdin_path[64];

static int spool_stdin(void)
{
    if (isatty(0)) {
        fprintf(stderr, "perfgroup-convert: -: stdin is a terminal: pipe a recording in\n");
        return PGC_EXIT_USAGE;
    }
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        char tmpl[4096];
        snprintf(tmpl, sizeof(tmpl), "%s/perfgroup-stdin.XXXXXX", dir);
        fd = mkstemp(tmpl);
        if (fd >= 0)
            unlink(tmpl);
    }
    if (fd < 0) {
        fprintf(stderr, "perfgroup-convert: -: cannot make a temporary copy in %s: %s\n", dir,
                strerror(errno));
        return PGC_EXIT_OUTPUT;
    }
    static char buf[1 << 16];
    uint64_t copied = 0, limit = sizeof(struct pgf_file_header);
    int have_header = 0;
    for (;;) {
        size_t want = sizeof(buf);
        if (want > limit - copied)
            want = (size_t)(limit - copied);
        if (!want)
            break;
        ssize_t n = read(0, buf, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fprintf(stderr, "perfgroup-convert: -: cannot read stdin: %s\n", strerror(errno));
            close(fd);
            return PGC_EXIT_BADINPUT;
        }
        if (n == 0)
            break;
        for (ssize_t w = 0; w < n;) {
            ssize_t k = write(fd, buf + w, (size_t)(n - w));
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0) {
                fprintf(stderr, "perfgroup-convert: -: cannot copy stdin to %s: %s\n", dir,
                        strerror(errno));
                close(fd);
                return PGC_EXIT_OUTPUT;
            }
            w += k;
        }
        if (!have_header && copied < sizeof(struct pgf_file_header) &&
            copied + (uint64_t)n >= sizeof(struct pgf_file_header)) {
            /* the header is in: read on to the size it declares (if it is a header) */
            struct pgf_file_header h;
            if (pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
                !memcmp(h.magic, PGF_MAGIC, PGF_MAGIC_LEN) && h.chunk_size <= (1u << 24) &&
                h.chunk_count <= (1u << 24) && h.chunks_offset <= (1u << 20))
                limit = h.chunks_offset + (uint64_t)h.chunk_count * h.chunk_size;
            if (limit < sizeof(struct pgf_file_header))
                limit = sizeof(struct pgf_file_header);
            have_header = 1;
        }
        copied += (uint64_t)n;
    }
    snprintf(stdin_path, sizeof(stdin_path), "/proc/self/fd/%d", fd);
    pgc_stdin_path = stdin_path;
    return 0;
}

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
    int json = 0, summary = 0, chrome = 0, by_self = 0;
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
        } else if (!strcmp(a, "--sort")) {
            if (++i >= argc)
                return fail_usage("--sort needs cpu or self");
            if (!strcmp(argv[i], "self"))
                by_self = 1;
            else if (strcmp(argv[i], "cpu"))
                return fail_usage("--sort: cpu or self");
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
        } else if (!strcmp(a, "-")) {
            for (size_t k = 0; k < ninputs; k++)
                if (!strcmp(inputs[k], "-"))
                    return fail_usage("'-' (stdin) can be given once");
            inputs[ninputs++] = a;
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
    if (by_self && !summary)
        return fail_usage("--sort goes with --summary");
    fmt = summary ? FMT_SUMMARY : chrome ? FMT_CHROME : FMT_GECKO;
    if (fmt != FMT_SUMMARY && !outpath)
        return fail_usage("-o OUT is needed for a profile ('-o -' for stdout)");
    opt.summary_json = json;
    opt.summary_by_self = by_self;
    if (outpath && strcmp(outpath, "-")) {
        const char *same = output_is_input(outpath, inputs, ninputs);
        if (same) {
            fprintf(stderr, "perfgroup-convert: -o %s is the input %s: refused (it would be "
                    "overwritten)\n", outpath, same);
            free(inputs);
            return PGC_EXIT_USAGE;
        }
    }

    for (size_t k = 0; k < ninputs; k++) {
        if (strcmp(inputs[k], "-"))
            continue;
        int rc = spool_stdin();
        if (rc) {
            free(inputs);
            return rc;
        }
    }

    /* Open and validate every input (header, chunk index, definitions) before any output. */
    struct pgc_error err = {0};
    struct pgc_file *files = calloc(ninputs, sizeof(*files));
    if (!files)
        return PGC_EXIT_USAGE;
    size_t nopen = 0;
    int status = 0;
    for (; nopen < ninputs; nopen++) {
        if (pgc_file_open(&files[nopen], inputs[nopen], &err)) {
            nopen++;
            status = PGC_EXIT_BADINPUT;
            break;
        }
        /* many inputs: only a small constant per file stays in memory until its turn */
        if (ninputs > 1 && pgc_file_park(&files[nopen])) {
            nopen++;
            fprintf(stderr, "perfgroup-convert: out of memory\n");
            status = PGC_EXIT_USAGE;
            break;
        }
    }

    FILE *out = NULL;
    char *tmp = NULL;
    int to_stdout = 0;
    if (!status) {
        struct stat st;
        if (!outpath || !strcmp(outpath, "-")) {
            /* streamed: every input was validated above (header, chunk index, definitions);
             * a record found damaged later is skipped and counted, not a reason to stop */
            out = stdout;
            to_stdout = 1;
        } else if (stat(outpath, &st) == 0 && !S_ISREG(st.st_mode)) {
            /* a device or pipe (/dev/null, a FIFO): write to it as it is, no temp + rename */
            out = fopen(outpath, "w");
            if (!out) {
                fprintf(stderr, "perfgroup-convert: %s: cannot open: %s\n", outpath, strerror(errno));
                status = PGC_EXIT_OUTPUT;
            }
        } else {
            size_t n = strlen(outpath) + 16;
            tmp = malloc(n);
            if (tmp) {
                snprintf(tmp, n, "%s.tmpXXXXXX", outpath);
                tmp_path = tmp;
                catch_signals();
                /* signals held from the file's creation until the handler knows of it: a
                 * SIGTERM between the two left the temporary behind */
                sigset_t all, old;
                sigfillset(&all);
                sigprocmask(SIG_BLOCK, &all, &old);
                int fd = mkstemp(tmp);
                if (fd >= 0)
                    tmp_live = 1;
                int mkstemp_errno = errno;
                sigprocmask(SIG_SETMASK, &old, NULL);
                errno = mkstemp_errno;
                if (fd >= 0) {
                    /* mkstemp makes 0600: give the file the mode open(2) would, the umask's */
                    mode_t mask = umask(0);
                    umask(mask);
                    fchmod(fd, 0666 & ~mask);
                    out = fdopen(fd, "w");
                    if (!out)
                        close(fd);
                }
            }
            if (!out) {
                fprintf(stderr, "perfgroup-convert: %s: cannot create: %s\n", outpath, strerror(errno));
                status = PGC_EXIT_OUTPUT;
                if (tmp && tmp_live)
                    unlink(tmp);
                tmp_live = 0;
            }
        }
    }
    if (!status) {
        struct pgc_out *o = malloc(sizeof(*o));
        int rc = -ENOMEM, out_failed = 0;
        if (o) {
            pgc_out_init(o, out);
            if (fmt == FMT_GECKO)
                rc = pgc_gecko_write(files, nopen, &opt, o, &err);
            else if (fmt == FMT_CHROME)
                rc = pgc_chrome_write(files, nopen, &opt, o, &err);
            else
                rc = pgc_summary_write(files, nopen, &opt, o, &err);
            if (o->err) { /* the output failed (ENOSPC, EIO): not the input's fault */
                rc = -o->err;
                out_failed = 1;
            }
        }
        free(o);
        if (!out_failed && (rc == -1 || (rc && err.set))) {
            status = PGC_EXIT_BADINPUT;
        } else if (rc) {
            fprintf(stderr, "perfgroup-convert: %s: write failed: %s\n", outpath ? outpath : "stdout",
                    strerror(-rc));
            status = PGC_EXIT_OUTPUT;
        }
        int ferr = fflush(out) || ferror(out) ? errno : 0;
        if (ferr && !status) {
            fprintf(stderr, "perfgroup-convert: %s: write failed: %s\n",
                    to_stdout ? "stdout" : outpath, strerror(ferr ? ferr : EIO));
            status = PGC_EXIT_OUTPUT;
        }
        if (!to_stdout && fclose(out) && !status) {
            fprintf(stderr, "perfgroup-convert: %s: write failed: %s\n", outpath, strerror(errno));
            status = PGC_EXIT_OUTPUT;
        }
        if (tmp) {
            sigset_t all, old;
            sigfillset(&all);
            sigprocmask(SIG_BLOCK, &all, &old); /* renamed and forgotten together */
            int rename_errno = 0;
            if (!status && rename(tmp, outpath)) {
                rename_errno = errno;
                status = PGC_EXIT_OUTPUT;
            }
            if (status)
                unlink(tmp);
            tmp_live = 0;
            sigprocmask(SIG_SETMASK, &old, NULL);
            if (rename_errno)
                fprintf(stderr, "perfgroup-convert: %s: cannot rename: %s\n", outpath,
                        strerror(rename_errno));
        }
    }
    if (!status)
        for (size_t i = 0; i < nopen; i++)
            pgc_file_warnings(&files[i]);
    if (status == PGC_EXIT_BADINPUT)
        fprintf(stderr, "perfgroup-convert: %s\n", err.set ? err.msg : "bad input");
    for (size_t i = 0; i < nopen; i++)
        pgc_file_close(&files[i]);
    free(files);
    free(tmp);
    free(inputs);
    return status;
}
