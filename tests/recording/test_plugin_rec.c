/* SPDX-License-Identifier: MIT */
/*
 * test_plugin_rec.c — a real program built with a real plugin (prog/rec_prog.c), run with
 * PERFGROUP_OUTPUT/PERFGROUP_MODE=trace, its recording read back: exact events and
 * intervals per thread, every interval's function is outer or inner from rec_prog.c, with
 * the depth and group mask the program's call structure gives, inside an event.
 * Usage: test_plugin_rec PROGRAM
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "pgreader.h"

static int str_is(struct pgr_str s, const char *c) {
    return s.len == strlen(c) && memcmp(s.ptr, c, s.len) == 0;
}

int main(int argc, char **argv) {
    if (argc != 2)
        return 2;
    char dir[256], tmpl[300], path[320];
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/pgplug.XXXXXX", t && *t ? t : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(tmpl, sizeof tmpl, "%s/prog.%%p.pgm", dir);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        setenv("PERFGROUP_OUTPUT", tmpl, 1);
        setenv("PERFGROUP_MODE", "trace", 1);
        execl(argv[1], argv[1], (char *)NULL);
        _exit(127);
    }
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 0);
    snprintf(path, sizeof path, "%s/prog.%d.pgm", dir, (int)pid);

    pgr_reader *r = pgr_open(path);
    CHECK(r != NULL);
    int64_t fid_outer = -1, fid_inner = -1;
    uint32_t tick = 0, done = 0;
    uint64_t events[8] = { 0 }, intervals[8] = { 0 }, bad = 0, markers = 0, ends = 0;
    uint32_t thread_of[8];
    unsigned nthreads = 0;
    struct pgr_record rec;
    while (pgr_next(r, &rec) > 0) {
        switch (rec.kind) {
        case PGF_REC_SITE:
            if (str_is(rec.u.site.function, "outer"))
                fid_outer = rec.u.site.function_id;
            if (str_is(rec.u.site.function, "inner"))
                fid_inner = rec.u.site.function_id;
            CHECK(rec.u.site.file.len >= 10 &&
                  memcmp(rec.u.site.file.ptr + rec.u.site.file.len - 10, "rec_prog.c", 10) == 0);
            break;
        case PGF_REC_STRING:
            if (str_is(rec.u.string.text, "tick"))
                tick = rec.u.string.string_id;
            if (str_is(rec.u.string.text, "done"))
                done = rec.u.string.string_id;
            break;
        default: {
            if (rec.thread == PGF_THREAD_DEFS)
                break;
            unsigned k;
            for (k = 0; k < nthreads && thread_of[k] != rec.thread; k++)
                ;
            if (k == nthreads) {
                CHECK(nthreads < 8);
                thread_of[nthreads++] = rec.thread;
            }
            if (rec.kind == PGF_REC_EVENT) {
                CHECK_EQ(rec.u.event.name_string_id, tick);
                events[k]++;
            } else if (rec.kind == PGF_REC_INTERVAL) {
                intervals[k]++;
                const __typeof__(rec.u.interval) *iv = &rec.u.interval;
                /* outer at depth 0 acquires "outer"; inner at depth 1 acquires "inner" */
                int ok = (iv->function_id == fid_outer && iv->depth == 0 && iv->group_mask == 1) ||
                         (iv->function_id == fid_inner && iv->depth == 1 && iv->group_mask == 1);
                bad += !ok;
            } else if (rec.kind == PGF_REC_MARKER) {
                CHECK_EQ(rec.u.marker.name_string_id, done);
                markers++;
            } else if (rec.kind == PGF_REC_THREAD_END) {
                ends++;
            }
        }
        }
    }
    if (pgr_error(r))
        fprintf(stderr, "%s: byte %llu: %s\n", path, (unsigned long long)pgr_error(r)->offset,
                pgr_error(r)->message);
    CHECK(pgr_error(r) == NULL);
    CHECK_EQ(pgr_warning_count(r), 0);
    CHECK_EQ(pgr_header(r)->state, PGF_STATE_CLOSED);
    CHECK_EQ(pgr_header(r)->records_dropped, 0);
    CHECK(fid_outer >= 0 && fid_inner >= 0);
    CHECK_EQ(bad, 0);
    CHECK_EQ(markers, 1);
    CHECK(ends >= 1); /* the worker's thread end at least */
    uint64_t total_ev = 0;
    int saw_1000 = 0, saw_500 = 0;
    for (unsigned k = 0; k < nthreads; k++) {
        total_ev += events[k];
        CHECK_EQ(intervals[k], 3 * events[k]);
        saw_1000 |= events[k] == 1000;
        saw_500 |= events[k] == 500;
    }
    CHECK_EQ(total_ev, 1500);
    CHECK(saw_1000 && saw_500);
    pgr_close(r);
    printf("ok: 1500 events, 4500 intervals over %u threads\n", nthreads);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ(system(cmd), 0);
    return 0;
}
