/* SPDX-License-Identifier: MIT */
/*
 * top.c — `perfgroup top FILE|PID|DIR…`: the about:performance table of running programs,
 * refreshed every second from their recording files (live.c): per process, its groups by
 * share of the process's CPU over the last interval, CPU ms per second, events per second,
 * jank (events in which the group used more than 16 ms of CPU) and blocked time in the interval,
 * and the totals since the start. A process that exits or dies keeps its last state on
 * screen, with what happened; the files of its fork() children appear as they are created.
 *
 * Rows by the interval's CPU, or by its self time (--sort self; on a terminal the keys c and
 * s switch, redrawing at once). On a terminal the screen is redrawn in place and `q` quits;
 * otherwise (a pipe, a file) each refresh prints a plain block, and top ends once every
 * process has ended.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "live.h"
#include "tool.h"

#define JANK_SHOWN 4 /* jank[4]: events with > 16 ms of the group's CPU (a 60 Hz frame) */
#define ROWS_SHOWN 30 /* groups per process; the lighter rest one line with their count */

struct top_file {
    struct pgc_row *prev;      /* totals at the previous refresh, by group index */
    uint32_t nprev;
    uint64_t prev_cpu, prev_events;
    int64_t prev_ns;           /* CLOCK_MONOTONIC of the previous refresh */
    uint64_t seen_refreshes;
    struct pgc_row *delta;     /* the last interval, by group index */
    uint64_t delta_cpu, delta_events;
    double delta_s;
};

/* Files of a followed directory not shown, and why (live.c tells each once): on stderr when
 * it is not the terminal, or at the foot of the screen. */
static struct {
    int tty;
    uint64_t n;
    char last[1024];
} skips;

static void skipped(void *ctx, const char *what)
{
    (void)ctx;
    if (!skips.tty) {
        fprintf(stderr, "perfgroup top: skipped %s\n", what);
        return;
    }
    skips.n++;
    snprintf(skips.last, sizeof(skips.last), "%s", what);
}

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The interval since the previous refresh of f, if f was read again since. */
static int update(struct top_file *t, const struct pgl_file *f, int64_t now)
{
    if (f->refreshes == t->seen_refreshes)
        return 0;  /* final (exited, gone) or unreadable: the last interval stays shown */
    t->seen_refreshes = f->refreshes;
    struct pgc_row *cur = calloc(f->ngroups + 1, sizeof(*cur));
    struct pgc_row *d = calloc(f->ngroups + 1, sizeof(*d));
    if (!cur || !d) {
        free(cur);
        free(d);
        return -1;
    }
    uint64_t cpu, events;
    pgl_file_totals(f, cur, &cpu, &events);
    /* the first interval starts with the process (same CLOCK_MONOTONIC, system-wide) */
    int64_t from = t->prev_ns ? t->prev_ns : f->start_monotonic_ns;
    if (from <= 0 || from > now || (!t->prev_ns && f->final))
        from = now; /* unknown start: a share needs no duration; rates show once known */
    for (uint32_t g = 0; g < f->ngroups; g++) {
        d[g] = cur[g];
        if (g < t->nprev) {
            const struct pgc_row *p = &t->prev[g];
            d[g].cpu_ns -= p->cpu_ns;
            d[g].self_ns -= p->self_ns;
            d[g].wall_ns -= p->wall_ns;
            d[g].blocked_ns -= p->blocked_ns;
            d[g].activations -= p->activations;
            d[g].events -= p->events;
            for (int k = 0; k < PGC_JANK_BUCKETS; k++)
                d[g].jank[k] -= p->jank[k];
        }
    }
    t->delta_cpu = cpu - t->prev_cpu;
    t->delta_events = events - t->prev_events;
    t->delta_s = (double)(now - from) / 1e9;
    free(t->prev);
    free(t->delta);
    t->prev = cur;
    t->nprev = f->ngroups;
    t->delta = d;
    t->prev_cpu = cpu;
    t->prev_events = events;
    t->prev_ns = now;
    return 0;
}

static int by_interval(const void *a, const void *b)
{
    const struct pgc_row *const *x = a, *const *y = b;
    if ((*x)->cpu_ns != (*y)->cpu_ns)
        return (*x)->cpu_ns < (*y)->cpu_ns ? 1 : -1;
    return strcmp((*x)->name, (*y)->name);
}

/* --sort self (key s): by the interval's self time; rows whose self time is unknown (an
 * older writer's file) after the known ones, those by CPU */
static int by_self(const void *a, const void *b)
{
    const struct pgc_row *const *x = a, *const *y = b;
    int kx = (*x)->self_unknown == 0, ky = (*y)->self_unknown == 0;
    if (kx != ky)
        return kx ? -1 : 1;
    if (kx && (*x)->self_ns != (*y)->self_ns)
        return (*x)->self_ns < (*y)->self_ns ? 1 : -1;
    return by_interval(a, b);
}

static int sort_self; /* rows by self time (--sort self, key s) rather than CPU (key c) */

/* A name on the terminal: valid UTF-8 with no control character (U+FFFD for a byte that
 * starts no valid sequence and for a control: an escape sequence in a thread or program name
 * must not reach the terminal, a newline must not break the table), cut to `width`
 * characters and padded to it (0: whole). */
static void put_name(FILE *o, const char *s, int width)
{
    char *c = pgc_utf8_dup(s ? s : "?", 1);
    const char *t = c ? c : "?";
    size_t n = strlen(t), i = 0;
    int cols = 0;
    while (i < n && (!width || cols < width)) {
        size_t l = pgc_utf8_len((const unsigned char *)t + i, n - i);
        fwrite(t + i, 1, l, o);
        i += l;
        cols++;
    }
    for (; cols < width; cols++)
        fputc(' ', o);
    free(c);
}

static void print_rate(FILE *o, int width, double v, double secs)
{
    if (secs > 0)
        fprintf(o, " %*.1f", width, v / secs);
    else
        fprintf(o, " %*s", width, "-");
}

/* The self-time share column (docs/accounting.md "Self time"): "?" where a part of it is
 * unknown (an older writer's file), never a false 0. */
static void print_self(FILE *o, int known, uint64_t self_ns, uint64_t cpu_ns)
{
    if (known)
        fprintf(o, " %6.1f", cpu_ns ? 100.0 * (double)self_ns / (double)cpu_ns : 0);
    else
        fprintf(o, " %6s", "?");
}

static void show_row(FILE *o, const struct top_file *t, const struct pgc_row *d, int tasks)
{
    const struct pgc_row *tot = &t->prev[d - t->delta];
    double pct = t->delta_cpu ? 100.0 * (double)d->cpu_ns / (double)t->delta_cpu : 0;
    fputs("  ", o);
    put_name(o, d->name, 18);
    fprintf(o, " %6.1f", pct);
    print_self(o, d->self_unknown == 0, d->self_ns, t->delta_cpu);
    print_rate(o, 8, (double)d->cpu_ns / 1e6, t->delta_s);
    print_rate(o, 8, (double)d->events, t->delta_s);
    fprintf(o, " %6" PRIu64, d->jank[JANK_SHOWN]);
    print_rate(o, 8, (double)d->blocked_ns / 1e6, t->delta_s);
    fprintf(o, " %9.3f %7" PRIu64, (double)tot->cpu_ns / 1e9, tot->jank[JANK_SHOWN]);
    if (tasks) /* CPU other threads spent on its behalf, whole run (docs/accounting.md "Tasks") */
        fprintf(o, " %9.3f", (double)tot->task_cpu_ns / 1e9);
    fputc('\n', o);
}

static void show_file(FILE *o, const struct pgl_file *f, const struct top_file *t)
{
    put_name(o, f->program, 0);
    fprintf(o, " pid %" PRIu32 " (parent %" PRIu32 ") — %s — ", f->pid, f->ppid,
            pgl_state_name(f->state));
    put_name(o, f->path, 0);
    fputc('\n', o);
    if (f->state == PGL_GONE)
        fprintf(o, "  PROCESS GONE: it died without closing its recording (killed or "
                   "crashed); its last state:\n");
    else if (f->state == PGL_EXITED)
        fprintf(o, "  process exited (recording closed); its last state:\n");
    else if (f->state == PGL_ERROR) {
        fputs("  cannot read: ", o);
        put_name(o, f->error, 0);
        fputc('\n', o);
    }
    if (!t->delta) {
        fprintf(o, "  (not read yet)\n");
        return;
    }
    fprintf(o, "  events: CPU");
    print_rate(o, 0, (double)t->delta_cpu / 1e6, t->delta_s);
    fprintf(o, " ms/s in");
    print_rate(o, 0, (double)t->delta_events, t->delta_s);
    fprintf(o, " events/s; %" PRIu64 " records dropped, %" PRIu64 " chunks missed\n",
            f->records_dropped, f->chunks_missed);
    int tasks = 0; /* the "behalf s" column only where tasks ran */
    for (uint32_t g = 0; g < t->nprev; g++)
        tasks |= t->prev[g].tasks != 0;
    fprintf(o, "  %-18s %6s %6s %8s %8s %6s %8s %9s %7s%s\n", "group", "CPU%", "self%", "CPU ms/s",
            "events/s", "jank", "blk ms/s", "CPU s", "jank>16", tasks ? "  behalf s" : "");
    struct pgc_row **order = malloc((t->nprev + 1) * sizeof(*order));
    if (!order)
        return;
    uint32_t n = 0;
    for (uint32_t g = 0; g < t->nprev; g++)
        if (t->prev[g].events || t->prev[g].activations || t->prev[g].cpu_ns || t->prev[g].tasks)
            order[n++] = &t->delta[g];
    qsort(order, n, sizeof(*order), sort_self ? by_self : by_interval);
    if (n > ROWS_SHOWN) { /* 2,000 groups stay readable: the heaviest, then the rest folded */
        uint64_t cpu = 0, events = 0, self = 0, unknown = 0;
        for (uint32_t i = ROWS_SHOWN; i < n; i++)
            cpu += order[i]->cpu_ns, events += order[i]->events, self += order[i]->self_ns,
                unknown += order[i]->self_unknown;
        double pct = t->delta_cpu ? 100.0 * (double)cpu / (double)t->delta_cpu : 0;
        char more[40];
        snprintf(more, sizeof more, "(%" PRIu32 " more)", n - ROWS_SHOWN);
        n = ROWS_SHOWN;
        for (uint32_t i = 0; i < n; i++)
            show_row(o, t, order[i], tasks);
        fprintf(o, "  %-18.18s %6.1f", more, pct);
        print_self(o, unknown == 0, self, t->delta_cpu);
        print_rate(o, 8, (double)cpu / 1e6, t->delta_s);
        print_rate(o, 8, (double)events, t->delta_s);
        fputc('\n', o);
        free(order);
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        show_row(o, t, order[i], tasks);
    }
    if (!n)
        fprintf(o, "  (no group activity yet)\n");
    free(order);
}

static void draw(FILE *o, const struct pgl_set *s, struct top_file *tf, int tty, double every)
{
    char when[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(when, sizeof(when), "%H:%M:%S", localtime_r(&now, &tm));
    if (tty)
        fputs("\033[H\033[2J", o);
    size_t live = 0;
    for (size_t i = 0; i < s->nfiles; i++)
        live += s->files[i].state == PGL_LIVE;
    fprintf(o, "perfgroup top — %s — %zu process(es), %zu running — every %.1f s — sorted by %s"
               "%s\n", when, s->nfiles, live, every, sort_self ? "self" : "CPU",
            tty ? " — keys: q quit, c CPU, s self" : "");
    fprintf(o, "CPU%% = share of the process's CPU in events over the interval; jank = events "
               "with > 16 ms CPU\n\n");
    for (size_t i = 0; i < s->nfiles; i++) {
        show_file(o, &s->files[i], &tf[i]);
        fputc('\n', o);
    }
    if (!s->nfiles)
        fputs("(no recording yet)\n", o);
    if (skips.n)
        fprintf(o, "%" PRIu64 " file(s) skipped; the last: %s\n", skips.n, skips.last);
    fflush(o);
}

static const char usage[] =
    "usage: perfgroup top [-d SECONDS] [-n COUNT] [--sort cpu|self] FILE|PID|DIR...\n"
    "\n"
    "  A live about:performance table of recording programs (PERFGROUP_OUTPUT), read from\n"
    "  their recording files as they are written: each process's groups by share of its\n"
    "  CPU over the last interval, CPU ms/s, events/s, jank (events > 16 ms CPU), blocked\n"
    "  ms/s in the interval, total CPU s and jank since the start.\n"
    "  FILE  a recording; PID  the recording that process maps; DIR  every recording in it.\n"
    "  Files of fork() children appear as they are created.\n"
    "  -d SECONDS  refresh interval (default 1; 0.1..3600)\n"
    "  -n COUNT    stop after COUNT refreshes\n"
    "  -s, --sort cpu|self  rows by the interval's CPU (default) or self time\n"
    "  On a terminal the table is redrawn in place (q quits, c / s sort by CPU / self time);\n"
    "  otherwise a plain block per refresh, until every process has ended.\n";

int pgl_top_main(int argc, char **argv)
{
    double every = 1.0;
    long count = -1;
    struct pgl_set s = {.on_skip = skipped};
    int nargs = 0;
    skips.tty = isatty(1);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "-d") || !strcmp(a, "-n")) {
            char *end;
            if (++i >= argc)
                return pgl_usage(usage, "%s needs a number", a);
            double v = strtod(argv[i], &end);
            if (*end || (a[1] == 'd' ? !(v >= 0.1 && v <= 3600) : !(v >= 1 && v <= 1e9)))
                return pgl_usage(usage, "%s: bad number %s", a, argv[i]);
            if (a[1] == 'd')
                every = v;
            else
                count = (long)v;
        } else if (!strcmp(a, "-s") || !strcmp(a, "--sort")) {
            if (++i >= argc)
                return pgl_usage(usage, "%s needs cpu or self", a);
            if (strcmp(argv[i], "cpu") && strcmp(argv[i], "self"))
                return pgl_usage(usage, "%s: unknown key %s (cpu or self)", a, argv[i]);
            sort_self = argv[i][0] == 's';
        } else if (a[0] == '-' && a[1]) {
            return pgl_usage(usage, "unknown option %s", a);
        } else {
            char msg[700];
            if (pgl_set_add(&s, a, msg, sizeof(msg))) {
                fprintf(stderr, "perfgroup top: %s\n", msg);
                pgl_set_free(&s);
                return PGC_EXIT_USAGE;
            }
            nargs++;
        }
    }
    if (!nargs)
        return pgl_usage(usage, "no recording, pid or directory");

    int tty = isatty(1);
    struct termios saved;
    int raw = tty && isatty(0) && tcgetattr(0, &saved) == 0;
    if (raw) {
        struct termios t = saved;
        t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        t.c_cc[VMIN] = 0;
        t.c_cc[VTIME] = 0;
        tcsetattr(0, TCSANOW, &t);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    struct top_file *tf = NULL;
    size_t ntf = 0;
    int rc = 0;
    for (long round = 0; !stop && (count < 0 || round < count); round++) {
        pgl_set_refresh(&s);
        if (s.nfiles > ntf) {
            struct top_file *n = realloc(tf, s.nfiles * sizeof(*n));
            if (!n) {
                rc = PGC_EXIT_USAGE;
                break;
            }
            memset(n + ntf, 0, (s.nfiles - ntf) * sizeof(*n));
            tf = n;
            ntf = s.nfiles;
        }
        int64_t t = now_ns();
        int ended = 1;
        for (size_t i = 0; i < s.nfiles; i++) {
            update(&tf[i], &s.files[i], t);
            ended &= s.files[i].final;
        }
        draw(stdout, &s, tf, tty, every);
        if (!tty && ended && s.nfiles)
            break;
        /* sleep until the next refresh; on a terminal, a q ends it */
        int64_t until = t + (int64_t)(every * 1e9);
        while (!stop) {
            int64_t left = until - now_ns();
            if (left <= 0)
                break;
            struct pollfd p = {raw ? 0 : -1, POLLIN, 0};
            int n = poll(&p, raw ? 1 : 0, (int)(left / 1000000) + 1);
            if (n > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))) {
                char c;
                ssize_t got = read(0, &c, 1);
                if (got < 0 && (errno == EINTR || errno == EAGAIN))
                    continue;
                if (got != 1) { /* EOF or EIO: the terminal hung up (without a SIGHUP to us:
                                 * not its session leader) — nobody to show; polling it
                                 * again would return at once, a busy loop */
                    stop = 1;
                    break;
                }
                if (c == 'q' || c == 'Q')
                    stop = 1;
                else if ((c == 's' || c == 'c') && sort_self != (c == 's')) {
                    sort_self = c == 's'; /* the same interval again, in the new order */
                    draw(stdout, &s, tf, tty, every);
                }
            }
        }
    }
    if (raw)
        tcsetattr(0, TCSANOW, &saved);
    for (size_t i = 0; i < ntf; i++) {
        free(tf[i].prev);
        free(tf[i].delta);
    }
    free(tf);
    pgl_set_free(&s);
    return rc;
}
