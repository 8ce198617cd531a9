/* SPDX-License-Identifier: MIT */
/*
 * metrics.c — `perfgroup metrics`: the group totals of recording programs as Prometheus
 * counters (text exposition format 0.0.4), from their live recording files (live.c).
 *
 *   --listen [HOST:]PORT  serve GET and HEAD /metrics over HTTP (HOST defaults to 127.0.0.1,
 *                         [IPV6]:PORT; port 0 picks a free one, printed on stderr); every
 *                         scrape reads what is new in the files first; many clients at once,
 *                         none able to stall another (http.c)
 *   --textfile PATH       rewrite PATH atomically (temporary + rename) every --every
 *                         seconds, for node_exporter's textfile collector
 *
 * A sidecar, not the runtime: the program's hot path and its threads stay as they are (no
 * timer, no file written by the program, nothing to configure in a setuid process); a
 * process that is killed still has its last totals exported from its file. docs/fleet.md
 * lists the series, their labels and what each label costs in cardinality.
 *
 * Series (labels program, pid; thread = thread name, threads of one name summed; group):
 *   perfgroup_group_{cpu,wall,blocked}_seconds_total, perfgroup_group_activations_total,
 *   perfgroup_group_events_total, perfgroup_group_jank_events_total{over_ms="1".."512"},
 *   perfgroup_group_task_cpu_seconds_total, perfgroup_group_tasks_total (tasks run on the
 *   thread on the group's behalf: only where some ran),
 *   perfgroup_thread_event_cpu_seconds_total, perfgroup_thread_events_total,
 *   perfgroup_records_dropped_total, perfgroup_chunks_recycled_total,
 *   perfgroup_reader_chunks_missed_total, perfgroup_process_running (gauge).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "http.h"
#include "live.h"
#include "tool.h"

/* A process's threads, those of one name summed (a pool of "worker" threads is one series). */
struct named {
    const char *name;
    struct pgc_row *rows;
    uint64_t cpu_ns, events;
};

/* A label value: valid UTF-8 (live.c keeps names so; a byte that starts no valid sequence
 * becomes U+FFFD here too, as promtool and Prometheus refuse the whole page otherwise),
 * backslash, double quote and newline escaped. */
static void label_value(FILE *o, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        const unsigned char *u = (const unsigned char *)s + i;
        size_t l = pgc_utf8_len(u, n - i);
        if (u[0] == '\\' || u[0] == '"')
            fprintf(o, "\\%c", u[0]);
        else if (u[0] == '\n')
            fputs("\\n", o);
        else if (l)
            fwrite(u, 1, l, o);
        else
            fputs("\xef\xbf\xbd", o);
        i += l ? l : 1;
    }
}

static void labels(FILE *o, const struct pgl_file *f, const char *thread, const char *group)
{
    fputs("{program=\"", o);
    label_value(o, f->program);
    fprintf(o, "\",pid=\"%" PRIu32 "\"", f->pid);
    if (thread) {
        fputs(",thread=\"", o);
        label_value(o, thread);
        fputc('"', o);
    }
    if (group) {
        fputs(",group=\"", o);
        label_value(o, group);
        fputc('"', o);
    }
}

/* canon[g]: the first group of f with g's name. Two names that differ only in bytes that
 * are not UTF-8 are one after U+FFFD took their place: one series, their totals summed (two
 * would be the same series twice, which Prometheus refuses). */
static const char *group_name(const struct pgl_file *f, uint32_t g)
{
    return f->groups[g] ? f->groups[g] : "?";
}

static const struct pgl_file *canon_file; /* qsort has no context argument */
static int by_group_name(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int c = strcmp(group_name(canon_file, x), group_name(canon_file, y));
    return c ? c : x < y ? -1 : x > y;
}

static uint32_t *canon_groups(const struct pgl_file *f)
{
    uint32_t *order = malloc((f->ngroups + 1) * sizeof(*order));
    uint32_t *canon = malloc((f->ngroups + 1) * sizeof(*canon));
    if (!order || !canon) {
        free(order);
        free(canon);
        return NULL;
    }
    for (uint32_t g = 0; g < f->ngroups; g++)
        order[g] = g;
    canon_file = f;
    qsort(order, f->ngroups, sizeof(*order), by_group_name);
    for (uint32_t k = 0; k < f->ngroups; k++)
        canon[order[k]] = k && !strcmp(group_name(f, order[k - 1]), group_name(f, order[k]))
                              ? canon[order[k - 1]] : order[k];
    free(order);
    return canon;
}

static uint32_t by_name(const struct pgl_file *f, const uint32_t *canon, struct named *out)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < f->nthreads; i++) {
        const struct pgl_thread *t = &f->threads[i];
        const char *name = t->name ? t->name : "?";
        uint32_t k = 0;
        while (k < n && strcmp(out[k].name, name))
            k++;
        if (k == n) {
            out[n].name = name;
            out[n].rows = calloc(f->ngroups + 1, sizeof(*out[n].rows));
            out[n].cpu_ns = out[n].events = 0;
            if (!out[n].rows)
                continue;
            n++;
        }
        out[k].cpu_ns += t->cpu_ns;
        out[k].events += t->events;
        for (uint32_t g = 0; g < f->ngroups && t->rows; g++)
            pgc_row_add(&out[k].rows[canon[g]], &t->rows[g]);
    }
    return n;
}

enum field { F_CPU, F_SELF, F_WALL, F_BLOCKED, F_ACT, F_EVENTS, F_JANK, F_TASK_CPU, F_TASKS, NFIELDS };
static const struct {
    const char *name, *help;
} group_family[NFIELDS] = {
    {"perfgroup_group_cpu_seconds_total",
     "CPU time the thread spent in the group during events (seconds)"},
    {"perfgroup_group_self_cpu_seconds_total",
     "Of that, CPU time while the group was the innermost running one: its self time (seconds)"},
    {"perfgroup_group_wall_seconds_total",
     "Wall-clock time the group held the thread during events (seconds)"},
    {"perfgroup_group_blocked_seconds_total",
     "Wall-clock time the group held the thread without using a CPU (seconds)"},
    {"perfgroup_group_activations_total", "Times the group was entered (not re-entered)"},
    {"perfgroup_group_events_total", "Events in which the group ran"},
    {"perfgroup_group_jank_events_total",
     "Events in which the group used more than over_ms milliseconds of CPU (jank)"},
    {"perfgroup_group_task_cpu_seconds_total",
     "CPU time the thread spent in tasks on the group's behalf, not in its own CPU (seconds)"},
    {"perfgroup_group_tasks_total", "Tasks the thread ran on the group's behalf"},
};

static void group_series(FILE *o, const struct pgl_file *f, const struct named *t,
                         uint32_t g, enum field k)
{
    const struct pgc_row *r = &t->rows[g];
    if (!(r->events || r->activations || r->cpu_ns || r->tasks))
        return;
    if ((k == F_TASK_CPU || k == F_TASKS) && !r->tasks)
        return; /* series of tasks only where tasks ran */
    if (k == F_SELF && !pgc_row_self_known(r))
        return; /* unknown (an older writer's file): no series rather than a false 0 */
    if (k == F_JANK) {
        for (int j = 0; j < PGC_JANK_BUCKETS; j++) {
            fputs(group_family[k].name, o);
            labels(o, f, t->name, group_name(f, g));
            fprintf(o, ",over_ms=\"%d\"} %" PRIu64 "\n", 1 << j, r->jank[j]);
        }
        return;
    }
    fputs(group_family[k].name, o);
    labels(o, f, t->name, group_name(f, g));
    fputs("} ", o);
    switch (k) {
    case F_CPU: fprintf(o, "%.9f\n", (double)r->cpu_ns / 1e9); break;
    case F_SELF: fprintf(o, "%.9f\n", (double)r->self_ns / 1e9); break;
    case F_WALL: fprintf(o, "%.9f\n", (double)r->wall_ns / 1e9); break;
    case F_BLOCKED: fprintf(o, "%.9f\n", (double)r->blocked_ns / 1e9); break;
    case F_ACT: fprintf(o, "%" PRIu64 "\n", r->activations); break;
    case F_TASK_CPU: fprintf(o, "%.9f\n", (double)r->task_cpu_ns / 1e9); break;
    case F_TASKS: fprintf(o, "%" PRIu64 "\n", r->tasks); break;
    default: fprintf(o, "%" PRIu64 "\n", r->events); break;
    }
}

static void family(FILE *o, const char *name, const char *type, const char *help)
{
    fprintf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Two files of one program and pid (a program that exec()s itself, a pid reused within a
 * followed directory) would be the same series twice, which Prometheus rejects: the file
 * of the latest start is exported. */
static int shadowed(const struct pgl_set *s, size_t i)
{
    const struct pgl_file *f = &s->files[i];
    for (size_t j = 0; j < s->nfiles; j++) {
        const struct pgl_file *g = &s->files[j];
        if (j != i && g->pid == f->pid && !strcmp(g->program, f->program) &&
            (g->start_monotonic_ns > f->start_monotonic_ns ||
             (g->start_monotonic_ns == f->start_monotonic_ns && j > i)))
            return 1;
    }
    return 0;
}

/* The whole exposition of set s. */
static void render(FILE *o, const struct pgl_set *s)
{
    struct named **per = calloc(s->nfiles + 1, sizeof(*per));
    uint32_t *nper = calloc(s->nfiles + 1, sizeof(*nper));
    uint32_t **canon = calloc(s->nfiles + 1, sizeof(*canon));
    if (!per || !nper || !canon) {
        free(per);
        free(nper);
        free(canon);
        return;
    }
    for (size_t i = 0; i < s->nfiles; i++) {
        if (shadowed(s, i) || !(canon[i] = canon_groups(&s->files[i])))
            continue; /* per[i] NULL, nper[i] 0: no series */
        per[i] = calloc(s->files[i].nthreads + 1, sizeof(**per));
        if (per[i])
            nper[i] = by_name(&s->files[i], canon[i], per[i]);
    }
    for (int k = 0; k < NFIELDS; k++) {
        family(o, group_family[k].name, "counter", group_family[k].help);
        for (size_t i = 0; i < s->nfiles; i++)
            for (uint32_t t = 0; t < nper[i]; t++)
                for (uint32_t g = 0; g < s->files[i].ngroups; g++)
                    if (canon[i][g] == g)
                        group_series(o, &s->files[i], &per[i][t], g, (enum field)k);
    }
    family(o, "perfgroup_thread_event_cpu_seconds_total", "counter",
           "CPU time of the thread's events, all groups and ungrouped code (seconds)");
    for (size_t i = 0; i < s->nfiles; i++)
        for (uint32_t t = 0; t < nper[i]; t++) {
            fputs("perfgroup_thread_event_cpu_seconds_total", o);
            labels(o, &s->files[i], per[i][t].name, NULL);
            fprintf(o, "} %.9f\n", (double)per[i][t].cpu_ns / 1e9);
        }
    family(o, "perfgroup_thread_events_total", "counter", "Events of the thread");
    for (size_t i = 0; i < s->nfiles; i++)
        for (uint32_t t = 0; t < nper[i]; t++) {
            fputs("perfgroup_thread_events_total", o);
            labels(o, &s->files[i], per[i][t].name, NULL);
            fprintf(o, "} %" PRIu64 "\n", per[i][t].events);
        }
    static const struct {
        const char *name, *type, *help;
    } proc[] = {
        {"perfgroup_records_dropped_total", "counter",
         "Records the recorder lost (its buffer recycled them, or was full)"},
        {"perfgroup_chunks_recycled_total", "counter",
         "Chunks of the recording's buffer the recorder recycled"},
        {"perfgroup_reader_chunks_missed_total", "counter",
         "Chunks recycled before this exporter read them (their events are not counted)"},
        {"perfgroup_process_running", "gauge",
         "1 while the process records; 0 once it exited, died, or its file is unreadable"},
    };
    for (size_t k = 0; k < sizeof(proc) / sizeof(proc[0]); k++) {
        family(o, proc[k].name, proc[k].type, proc[k].help);
        for (size_t i = 0; i < s->nfiles; i++) {
            const struct pgl_file *f = &s->files[i];
            if (!per[i])
                continue;
            uint64_t v = k == 0 ? f->records_dropped : k == 1 ? f->chunks_recycled
                       : k == 2 ? f->chunks_missed : f->state == PGL_LIVE;
            fputs(proc[k].name, o);
            labels(o, f, NULL, NULL);
            fprintf(o, "} %" PRIu64 "\n", v);
        }
    }
    for (size_t i = 0; i < s->nfiles; i++) {
        for (uint32_t t = 0; per[i] && t < nper[i]; t++)
            free(per[i][t].rows);
        free(per[i]);
        free(canon[i]);
    }
    free(canon);
    free(per);
    free(nper);
}

/* The exposition in a malloc'd buffer. */
static char *metrics_render(const struct pgl_set *s, size_t *len)
{
    char *buf = NULL;
    FILE *o = open_memstream(&buf, len);
    if (!o)
        return NULL;
    render(o, s);
    if (fclose(o)) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* A scrape (http.c): the files refreshed, then the exposition. */
static char *scrape(void *arg, size_t *len)
{
    pgl_set_refresh(arg);
    return metrics_render(arg, len);
}

static int write_textfile(const char *path, const struct pgl_set *s)
{
    size_t len;
    char *buf = metrics_render(s, &len);
    if (!buf)
        return -1;
    size_t n = strlen(path) + 16;
    char *tmp = malloc(n);
    int rc = -1;
    if (tmp) {
        snprintf(tmp, n, "%s.tmpXXXXXX", path);
        int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd >= 0) {
            size_t off = 0;
            while (off < len) {
                ssize_t w = write(fd, buf + off, len - off);
                if (w < 0 && errno == EINTR)
                    continue;
                if (w <= 0)
                    break;
                off += (size_t)w;
            }
            /* node_exporter runs as its own user: the file is world-readable, like /metrics */
            if (off == len && fchmod(fd, 0644) == 0 && close(fd) == 0) {
                rc = rename(tmp, path);
            } else {
                close(fd);
            }
            if (rc)
                unlink(tmp);
        }
    }
    if (rc)
        fprintf(stderr, "perfgroup metrics: %s: cannot write: %s\n", path, strerror(errno));
    free(tmp);
    free(buf);
    return rc;
}

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static const char usage[] =
    "usage: perfgroup metrics [--listen [HOST:]PORT] [--textfile PATH] [--every SECONDS]\n"
    "                         [--once] FILE|PID|DIR...\n"
    "\n"
    "  Group totals of recording programs (per process, thread name and group: CPU, wall and\n"
    "  blocked seconds, activations, events, jank events over 1..512 ms, dropped records) as\n"
    "  Prometheus counters, read from their recording files as they are written.\n"
    "  FILE  a recording; PID  the recording that process maps; DIR  every recording in it\n"
    "  (new ones included). Files of fork() children are found as they appear.\n"
    "  --listen [HOST:]PORT  serve GET /metrics (HOST default 127.0.0.1; PORT 0: any free\n"
    "                        one, printed on stderr); [IPV6]:PORT for IPv6 ([::1]:9477)\n"
    "  --textfile PATH       rewrite PATH atomically every --every seconds, for\n"
    "                        node_exporter's textfile collector (PATH ends in .prom)\n"
    "  --every SECONDS       textfile interval (default 15; 0.1..3600)\n"
    "  --once                with --textfile: write it once and exit\n"
    "  Without --listen or --textfile: print the metrics once on stdout.\n";

/* A file of a followed directory not exported, and why: said once, on stderr (the log). */
static void skipped(void *ctx, const char *what)
{
    (void)ctx;
    fprintf(stderr, "perfgroup metrics: skipped %s\n", what);
}

int pgl_metrics_main(int argc, char **argv)
{
    const char *listen_spec = NULL, *textfile = NULL;
    double every = 15;
    int once = 0, nargs = 0;
    struct pgl_set s = {.on_skip = skipped};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "--listen") || !strcmp(a, "--textfile") || !strcmp(a, "--every")) {
            if (++i >= argc)
                return pgl_usage(usage, "%s needs a value", a);
            if (a[2] == 'l') {
                listen_spec = argv[i];
            } else if (a[2] == 't') {
                textfile = argv[i];
            } else {
                char *end;
                every = strtod(argv[i], &end);
                if (*end || !(every >= 0.1 && every <= 3600))
                    return pgl_usage(usage, "--every: seconds from 0.1 to 3600");
            }
        } else if (!strcmp(a, "--once")) {
            once = 1;
        } else if (a[0] == '-' && a[1]) {
            return pgl_usage(usage, "unknown option %s", a);
        } else {
            char msg[700];
            if (pgl_set_add(&s, a, msg, sizeof(msg))) {
                fprintf(stderr, "perfgroup metrics: %s\n", msg);
                pgl_set_free(&s);
                return PGC_EXIT_USAGE;
            }
            nargs++;
        }
    }
    if (!nargs)
        return pgl_usage(usage, "no recording, pid or directory");
    if (!listen_spec && !textfile) {
        pgl_set_refresh(&s);
        render(stdout, &s);
        pgl_set_free(&s);
        return fflush(stdout) ? PGC_EXIT_USAGE : 0;
    }
    if (textfile && once) {
        pgl_set_refresh(&s);
        int rc = write_textfile(textfile, &s);
        pgl_set_free(&s);
        return rc ? PGC_EXIT_USAGE : 0;
    }
    struct pgl_http sv = {.lfd = -1, .render = scrape, .arg = &s};
    if (listen_spec) {
        sv.lfd = pgl_http_listen(listen_spec);
        if (sv.lfd == -1) {
            pgl_set_free(&s);
            return pgl_usage(usage, "--listen: [HOST:]PORT or [IPV6]:PORT, numeric "
                                         "(%s)", listen_spec);
        }
        if (sv.lfd < 0) {
            pgl_set_free(&s);
            return PGC_EXIT_USAGE;
        }
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int64_t next = pgl_now_ms();
    while (!stop) {
        if (textfile && pgl_now_ms() >= next) {
            pgl_set_refresh(&s);
            write_textfile(textfile, &s);
            next += (int64_t)(every * 1000);
            if (next < pgl_now_ms())
                next = pgl_now_ms() + (int64_t)(every * 1000);
        }
        if (sv.lfd >= 0) {
            pgl_http_turn(&sv, textfile ? next : -1);
        } else {
            int64_t left = next - pgl_now_ms();
            if (left > 0)
                poll(NULL, 0, (int)left);
        }
    }
    pgl_http_close(&sv);
    pgl_set_free(&s);
    return 0;
}
