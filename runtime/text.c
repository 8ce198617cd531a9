/* SPDX-License-Identifier: MIT */
/*
 * runtime/text.c — PERFGROUP_TEXT=<path|->: a debug trace, one line per hook call,
 *
 *     <thread>\t> <function>\t<attribute group>|<file group>
 *     <thread>\t< <function>
 *
 * written with one write(2) per line (O_APPEND), so exit() and abort() lose nothing and
 * threads never interleave within a line. <thread> is the name given with
 * perfgroup_thread_name(), "main" for the main thread, else "t<tid>". Used by the plugins'
 * shared test corpus; far too slow for anything else.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

PG_HIDDEN int perfgroup__text_on; /* PERFGROUP_TEXT: set once at start-up (control.c) */

static int text_fd = -1;

/* The descriptor a path names when it only stands for a descriptor the process already has
 * open: /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N. Those are symbolic links, which
 * O_NOFOLLOW (below) rightly refuses for any other path; for these the runtime writes to the
 * open descriptor itself and never resolves a link into the filesystem. (A setuid program
 * never gets here: its environment is ignored, runtime/env.c.) Returns -1 for other paths. */
static int open_fd_path(const char *path)
{
    static const char *const prefixes[] = {"/dev/fd/", "/proc/self/fd/"};
    if (strcmp(path, "/dev/stdout") == 0)
        return 1;
    if (strcmp(path, "/dev/stderr") == 0)
        return 2;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t n = strlen(prefixes[i]);
        if (strncmp(path, prefixes[i], n) == 0 && path[n] >= '0' && path[n] <= '9') {
            char *end;
            long fd = strtol(path + n, &end, 10);
            if (*end == '\0' && fd >= 0 && fd < (1L << 20))
                return (int)fd;
        }
    }
    return -1;
}

PG_HIDDEN int perfgroup__text_init(const char *path)
{
    if (strcmp(path, "-") == 0) {
        text_fd = 2;
        return 0;
    }
    int fd = open_fd_path(path);
    if (fd >= 0) {
        /* an open descriptor is required: a closed one is an error, never a file to create */
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) {
            fprintf(stderr, "perfgroup: PERFGROUP_TEXT: %s is not open for writing\n", path);
            return -1;
        }
        text_fd = fd;
        return 0;
    }
    text_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (text_fd < 0) {
        fprintf(stderr, "perfgroup: PERFGROUP_TEXT: cannot open %s: %m\n", path);
        return -1;
    }
    return 0;
}

static void put(struct pg_thread *t, const char *dir, const struct pg_func *fn, int groups)
{
    char line[1024];
    char tname[32];
    const char *name = t->name;
    if (!name[0]) {
        snprintf(tname, sizeof tname, "t%u", t->tid);
        name = tname;
    }
    int n;
    if (groups)
        n = snprintf(line, sizeof line, "%s\t%s %s\t%s|%s\n", name, dir, fn->name,
                     fn->attr_group, fn->file_group);
    else
        n = snprintf(line, sizeof line, "%s\t%s %s\n", name, dir, fn->name);
    if (n >= (int)sizeof line) {
        n = sizeof line;
        line[n - 1] = '\n';
    }
    if (n > 0 && write(text_fd, line, (size_t)n) < 0) {
        /* a debug trace that cannot be written is not worth failing the host for */
    }
}

PG_HIDDEN void perfgroup__text_enter(struct pg_thread *t, const struct pg_func *fn)
{
    put(t, ">", fn, 1);
}

PG_HIDDEN void perfgroup__text_exit(struct pg_thread *t, const struct pg_func *fn)
{
    put(t, "<", fn, 0);
}
