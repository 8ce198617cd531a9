/* SPDX-License-Identifier: MIT */
/*
 * rec_util.c — the recorder tests' shared pieces (rec_test.h).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "perfgroup.h"
#include "readback.h"
#include "record.h"
#include "clock.h"
#include "rec_test.h"

char dir[256];

void make_dir(void) {
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/pgrec.XXXXXX", t && *t ? t : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
}

void rm_dir(void) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

void path_in(char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s/%s", dir, name);
}

void define_some(void) {
    static const uint32_t g12[] = { 1, 2 }, g3[] = { 3 };
    perfgroup__rec_group(1, "addon", PERFGROUP_KIND_ATTRIBUTE, 1);
    perfgroup__rec_group(2, "core", PERFGROUP_KIND_FILE, 1);
    perfgroup__rec_group(3, "f", PERFGROUP_KIND_FUNCTION, 0);
    perfgroup__rec_function(1, "work", "work.c", 10, "", g12, 2);
    perfgroup__rec_function(2, "f", "f.c", 20, "/lib/libf.so", g3, 1);
}

void write_intervals(struct perfgroup_rec_thread *w, uint64_t from, uint64_t n) {
    for (uint64_t i = from; i < from + n; i++)
        perfgroup__rec_interval(w, 1, 1, (uint8_t)(i & 7), i, 100);
}

void write_event(struct perfgroup_rec_thread *w, uint32_t name, uint64_t t) {
    struct perfgroup_rec_group_share s[2] = { { 1, 1000, 500, 3, 300, 0 }, { 2, 400, 200, 1, 200, 2 } };
    perfgroup__rec_event(w, name, t, t + 1000, 700, 0, s, 2);
}

