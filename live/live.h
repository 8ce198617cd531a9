/* SPDX-License-Identifier: MIT */
/*
 * live.h — following recordings while their programs write them: the state behind
 * `perfgroup top` (top.c) and `perfgroup metrics` (metrics.c).
 *
 * A follow set holds recordings (files named on the command line, the file a PID maps, every
 * recording in a directory) and finds the files of their fork() children as they appear
 * (a recording in the same directory whose ppid is a followed pid). Each refresh re-opens
 * each file with the shared reader (every definition, so groups and threads defined since
 * the last refresh show) and reads only the records committed since the last one
 * (pgr_set_resume, keyed by chunk seq), folding events into cumulative per-thread,
 * per-group totals with the summary's own code (pgc_rows_add_event). Chunks the
 * program recycled before they were read are counted (missed), never an error. A file with
 * whole-run totals (format version 3) has its rows from them instead, at every refresh:
 * nothing missed, and a reader started late has the counters from the program's start.
 *
 * File life (pgl_file.state), decided at each refresh:
 *
 *   state        header.state   process (kill(pid, 0) before the read)
 *   PGL_LIVE     RECORDING      alive
 *   PGL_EXITED   CLOSED         any      the program closed the file (exit, exec)
 *   PGL_GONE     RECORDING      gone     killed or crashed: the file holds its last state
 *   PGL_ERROR    (unreadable)   any      pgl_file.error says why; the last totals stay
 *
 * EXITED and GONE are final: the file is read once more, then no longer.
 *
 * Directories others can write (docs/fleet.md, "Threat model"): a file found in a directory
 * (DIR, or a fork child's file next to a followed one) is opened relative to the directory
 * (openat, O_NOFOLLOW | O_NONBLOCK | O_NOCTTY) after an lstat-like look (fstatat), only if
 * it is a regular file, and checked again with fstat after the open (the same inode, still
 * regular): a symlink, FIFO, device node or socket is never opened. Owner rule: a sidecar
 * that is not root reads only the files of its own user; as root, a file root owns, or one
 * owned by the user its writer runs as (the process the header names, if it is the one that
 * started the recording: /proc/PID/status), or a fork child's file owned by the owner of its
 * followed parent's file. Each file skipped is told once with why (on_skip); a skip that can
 * change (permission denied, an owner rule, a file too short yet) is looked at again when
 * the file changes (its ctime); one that cannot (not a regular file, not a recording) never.
 * A followed file is re-opened the same way at every refresh and must be the same inode.
 * Names read from files (program, thread, group) are kept as valid UTF-8 (U+FFFD for a
 * byte that starts no valid sequence).
 */
#ifndef PGLIVE_H
#define PGLIVE_H

#include <stdint.h>
#include <sys/types.h>

#include "pgshared.h"

enum pgl_state { PGL_LIVE, PGL_EXITED, PGL_GONE, PGL_ERROR };

struct pgl_thread {
    uint32_t index;             /* the recording's thread index */
    uint32_t tid;
    char *name;
    struct pgc_clock clk;       /* follows the thread's CLOCK records across refreshes */
    int clk_set;
    struct pgc_row *rows;       /* cumulative, by group index of the file */
    uint64_t cpu_ns, events;    /* cumulative, the thread's events */
    int from_totals, tot_seen;  /* from the file's whole-run totals (ever, this read) */
};

struct pgl_file {
    char *path;
    int dir;                    /* index in pgl_set.dirs (opened with openat), -1: by path */
    char *name;                 /* the name in that directory */
    uid_t uid;                  /* the file's owner */
    dev_t dev;
    ino_t ino;
    uint32_t pid, ppid;
    char *program;
    int64_t start_monotonic_ns; /* the process's start (CLOCK_MONOTONIC, system-wide) */
    enum pgl_state state;
    int final;                  /* EXITED or GONE and read after it: no more reads */
    char error[600];
    char **groups;              /* names by group index (stable: definitions only append) */
    uint32_t ngroups;
    struct pgl_thread *threads;
    uint32_t nthreads;
    struct pgc_hash seen, seen_next;  /* data chunk seq -> committed bytes read */
    uint64_t records_dropped;   /* the writer's count (header) */
    uint64_t chunks_recycled;   /* the writer's count (header) */
    uint64_t chunks_missed;     /* recycled before this reader could read them */
    uint64_t refreshes;
};

struct pgl_dir {
    char *path;
    int fd;                     /* O_DIRECTORY, opened once */
    dev_t dev;
    ino_t ino;
    int all;                    /* every recording in it (DIR), or only fork children's */
};

struct pgl_set {
    struct pgl_file *files;
    size_t nfiles;
    struct pgl_dir *dirs;       /* followed directories, and those of followed files */
    size_t ndirs;
    struct pgc_hash not_ours;    /* inodes looked at: never a recording we follow */
    struct pgc_hash retry;       /* inodes skipped for now -> their ctime: looked at again once
                                 * it changes (chmod, chown, written) */
    struct pgc_hash told;        /* inodes skipped -> the reason told (once per reason) */
    uint64_t skipped;           /* files skipped and told */
    /* "<dir>/<name>: <why>" for each file skipped, once (names escaped: \xNN); NULL: stderr */
    void (*on_skip)(void *ctx, const char *what);
    void *skip_ctx;
};

/* Adds what a command-line argument names: a recording file, a directory of recordings, or
 * the pid of a recording process (the recording it maps, from /proc/PID/maps). Returns 0,
 * or -1 with a message in msg. */
int pgl_set_add(struct pgl_set *s, const char *arg, char *msg, size_t msglen);
/* Finds new recordings (children of followed pids, new files in followed directories),
 * then reads what is new in every file. */
void pgl_set_refresh(struct pgl_set *s);
void pgl_set_free(struct pgl_set *s);

/* Totals of file f over its threads, one row per group (rows: f->ngroups, zeroed by the
 * caller), and the file's event CPU and events. */
void pgl_file_totals(const struct pgl_file *f, struct pgc_row *rows,
                     uint64_t *cpu_ns, uint64_t *events);
const char *pgl_state_name(enum pgl_state s);

/* find.c, for live.c: looks at directory s->dirs[di] for new recordings to follow */
void pgl_scan_dir(struct pgl_set *s, size_t di);
/* find.c, for live.c: process pid runs and is the one that started a recording at start_ns
 * (CLOCK_MONOTONIC): 1 = yes, 0 = no, -1 = cannot tell */
int pgl_writer_runs(uint32_t pid, int64_t start_ns);

#endif /* PGLIVE_H */
