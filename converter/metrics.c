/* SPDX-License-Identifier: MIT */
/*
 * metrics.c — `perfgroup metrics`: the group totals of recording programs as Prometheus
 * counters (text exposition format 0.0.4), from their live recording files (live.c).
 *
 *   --listen [HOST:]PORT  serve GET /metrics over HTTP (HOST defaults to 127.0.0.1; port 0
 *                         picks a free one, printed on stderr); every scrape reads what is
 *                         new in the files first
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
 *   perfgroup_thread_event_cpu_seconds_total, perfgroup_thread_events_total,
 *   perfgroup_records_dropped_total, perfgroup_chunks_recycled_total,
 *   perfgroup_reader_chunks_missed_total, perfgroup_process_running (gauge).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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

#include "live.h"
#include "tool.h"

/* A process's threads, those of one name summed (a pool of "worker" threads is one series). */
struct named {
    const char *name;
    struct pgc_row *rows;
    uint64_t cpu_ns, events;
};

static void label_value(FILE *o, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            fprintf(o, "\\%c", *s);
        else if (*s == '\n')
            fputs("\\n", o);
        else
            fputc(*s, o);
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

static uint32_t by_name(const struct pgl_file *f, struct named *out)
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
            perfgroup__row_add(&out[k].rows[g], &t->rows[g]);
    }
    return n;
}

enum field { F_CPU, F_WALL, F_BLOCKED, F_ACT, F_EVENTS, F_JANK, NFIELDS };
static const struct {
    const char *name, *help;
} group_family[NFIELDS] = {
    {"perfgroup_group_cpu_seconds_total",
     "CPU time the thread spent in the group during events (seconds)"},
    {"perfgroup_group_wall_seconds_total",
     "Wall-clock time the group held the thread during events (seconds)"},
    {"perfgroup_group_blocked_seconds_total",
     "Wall-clock time the group held the thread without using a CPU (seconds)"},
    {"perfgroup_group_activations_total", "Times the group was entered (not re-entered)"},
    {"perfgroup_group_events_total", "Events in which the group ran"},
    {"perfgroup_group_jank_events_total",
     "Events in which the group used more than over_ms milliseconds of CPU (jank)"},
};

static void group_series(FILE *o, const struct pgl_file *f, const struct named *t,
                         uint32_t g, enum field k)
{
    const struct pgc_row *r = &t->rows[g];
    if (!(r->events || r->activations || r->cpu_ns))
        return;
    if (k == F_JANK) {
        for (int j = 0; j < PGC_JANK; j++) {
            fputs(group_family[k].name, o);
            labels(o, f, t->name, f->groups[g]);
            fprintf(o, ",over_ms=\"%d\"} %" PRIu64 "\n", 1 << j, r->jank[j]);
        }
        return;
    }
    fputs(group_family[k].name, o);
    labels(o, f, t->name, f->groups[g]);
    fputs("} ", o);
    switch (k) {
    case F_CPU: fprintf(o, "%.9f\n", (double)r->cpu_ns / 1e9); break;
    case F_WALL: fprintf(o, "%.9f\n", (double)r->wall_ns / 1e9); break;
    case F_BLOCKED: fprintf(o, "%.9f\n", (double)r->blocked_ns / 1e9); break;
    case F_ACT: fprintf(o, "%" PRIu64 "\n", r->activations); break;
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
    if (!per || !nper) {
        free(per);
        free(nper);
        return;
    }
    for (size_t i = 0; i < s->nfiles; i++) {
        if (shadowed(s, i))
            continue; /* per[i] NULL, nper[i] 0: no series */
        per[i] = calloc(s->files[i].nthreads + 1, sizeof(**per));
        if (per[i])
            nper[i] = by_name(&s->files[i], per[i]);
    }
    for (int k = 0; k < NFIELDS; k++) {
        family(o, group_family[k].name, "counter", group_family[k].help);
        for (size_t i = 0; i < s->nfiles; i++)
            for (uint32_t t = 0; t < nper[i]; t++)
                for (uint32_t g = 0; g < s->files[i].ngroups; g++)
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
    }
    free(per);
    free(nper);
}

/* The exposition in a malloc'd buffer. */
static char *render_mem(const struct pgl_set *s, size_t *len)
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

static int write_textfile(const char *path, const struct pgl_set *s)
{
    size_t len;
    char *buf = render_mem(s, &len);
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

static void send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

/* One HTTP request (GET /metrics), then the connection is closed. */
static void serve(int fd, struct pgl_set *s)
{
    struct timeval tv = {2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    char req[8192];
    size_t got = 0;
    while (got < sizeof(req) - 1) {
        ssize_t n = recv(fd, req + got, sizeof(req) - 1 - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
        req[got] = '\0';
        if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
            break;
    }
    req[got] = '\0';
    char hdr[256];
    if (strncmp(req, "GET /metrics ", 13) && strncmp(req, "GET /metrics?", 13)) {
        static const char body[] = "perfgroup metrics: GET /metrics\n";
        int n = snprintf(hdr, sizeof(hdr), "HTTP/1.0 404 Not Found\r\nContent-Type: text/plain"
                         "\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", sizeof(body) - 1);
        send_all(fd, hdr, (size_t)n);
        send_all(fd, body, sizeof(body) - 1);
        return;
    }
    perfgroup__live_refresh(s);
    size_t len;
    char *body = render_mem(s, &len);
    if (!body) {
        static const char err[] = "HTTP/1.0 500 Internal Server Error\r\nContent-Length: 0\r\n"
                                  "Connection: close\r\n\r\n";
        send_all(fd, err, sizeof(err) - 1);
        return;
    }
    int n = snprintf(hdr, sizeof(hdr), "HTTP/1.0 200 OK\r\nContent-Type: text/plain; "
                     "version=0.0.4; charset=utf-8\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n", len);
    send_all(fd, hdr, (size_t)n);
    send_all(fd, body, len);
    free(body);
}

static int listen_on(const char *spec)
{
    char host[64] = "127.0.0.1";
    const char *colon = strrchr(spec, ':');
    const char *port_s = spec;
    if (colon) {
        size_t hl = (size_t)(colon - spec);
        if (hl == 0 || hl >= sizeof(host))
            return -1;
        memcpy(host, spec, hl);
        host[hl] = '\0';
        port_s = colon + 1;
    }
    char *end;
    long port = strtol(port_s, &end, 10);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    if (!*port_s || *end || port < 0 || port > 65535 || inet_pton(AF_INET, host, &a.sin_addr) != 1)
        return -1;
    a.sin_port = htons((uint16_t)port);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 16)) {
        fprintf(stderr, "perfgroup metrics: cannot listen on %s:%ld: %s\n", host, port,
                strerror(errno));
        close(fd);
        return -2;
    }
    socklen_t al = sizeof(a);
    getsockname(fd, (struct sockaddr *)&a, &al);
    fprintf(stderr, "perfgroup metrics: serving http://%s:%u/metrics\n", host,
            (unsigned)ntohs(a.sin_port));
    return fd;
}

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
    "                        one, printed on stderr)\n"
    "  --textfile PATH       rewrite PATH atomically every --every seconds, for\n"
    "                        node_exporter's textfile collector (PATH ends in .prom)\n"
    "  --every SECONDS       textfile interval (default 15; 0.1..3600)\n"
    "  --once                with --textfile: write it once and exit\n"
    "  Without --listen or --textfile: print the metrics once on stdout.\n";

int perfgroup__metrics_main(int argc, char **argv)
{
    const char *listen_spec = NULL, *textfile = NULL;
    double every = 15;
    int once = 0, nargs = 0;
    struct pgl_set s = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "--listen") || !strcmp(a, "--textfile") || !strcmp(a, "--every")) {
            if (++i >= argc)
                return perfgroup__tool_usage(usage, "%s needs a value", a);
            if (a[2] == 'l') {
                listen_spec = argv[i];
            } else if (a[2] == 't') {
                textfile = argv[i];
            } else {
                char *end;
                every = strtod(argv[i], &end);
                if (*end || !(every >= 0.1 && every <= 3600))
                    return perfgroup__tool_usage(usage, "--every: seconds from 0.1 to 3600");
            }
        } else if (!strcmp(a, "--once")) {
            once = 1;
        } else if (a[0] == '-' && a[1]) {
            return perfgroup__tool_usage(usage, "unknown option %s", a);
        } else {
            char msg[700];
            if (perfgroup__live_add(&s, a, msg, sizeof(msg))) {
                fprintf(stderr, "perfgroup metrics: %s\n", msg);
                perfgroup__live_free(&s);
                return PGC_EXIT_USAGE;
            }
            nargs++;
        }
    }
    if (!nargs)
        return perfgroup__tool_usage(usage, "no recording, pid or directory");
    if (!listen_spec && !textfile) {
        perfgroup__live_refresh(&s);
        render(stdout, &s);
        perfgroup__live_free(&s);
        return fflush(stdout) ? PGC_EXIT_USAGE : 0;
    }
    if (textfile && once) {
        perfgroup__live_refresh(&s);
        int rc = write_textfile(textfile, &s);
        perfgroup__live_free(&s);
        return rc ? PGC_EXIT_USAGE : 0;
    }
    int lfd = -1;
    if (listen_spec) {
        lfd = listen_on(listen_spec);
        if (lfd == -1)
            return perfgroup__tool_usage(usage, "--listen: [HOST:]PORT with an IPv4 HOST");
        if (lfd < 0) {
            perfgroup__live_free(&s);
            return PGC_EXIT_USAGE;
        }
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int64_t next = now_ms();
    while (!stop) {
        if (textfile && now_ms() >= next) {
            perfgroup__live_refresh(&s);
            write_textfile(textfile, &s);
            next += (int64_t)(every * 1000);
            if (next < now_ms())
                next = now_ms() + (int64_t)(every * 1000);
        }
        int timeout = textfile ? (int)(next - now_ms()) : -1;
        if (textfile && timeout < 0)
            timeout = 0;
        struct pollfd p = {lfd, POLLIN, 0};
        int n = poll(&p, lfd >= 0 ? 1 : 0, timeout);
        if (n > 0 && (p.revents & POLLIN)) {
            int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
            if (c >= 0) {
                serve(c, &s);
                close(c);
            }
        }
    }
    if (lfd >= 0)
        close(lfd);
    perfgroup__live_free(&s);
    return 0;
}
