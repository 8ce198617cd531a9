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
 * per-group totals with the summary's own code (perfgroup__rows_add_event). Chunks the
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
 */
#ifndef PGLIVE_H
#define PGLIVE_H

#include <stdint.h>
#include <sys/types.h>

#include "pgconv.h"

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
    struct pgc_map seen, seen_next;  /* data chunk seq -> committed bytes read */
    uint64_t records_dropped;   /* the writer's count (header) */
    uint64_t chunks_recycled;   /* the writer's count (header) */
    uint64_t chunks_missed;     /* recycled before this reader could read them */
    uint64_t refreshes;
};

struct pgl_set {
    struct pgl_file *files;
    size_t nfiles;
    char **dirs;                /* directories whole (every recording in them) */
    size_t ndirs;
    struct pgc_map not_ours;    /* inodes looked at: not a recording we follow */
};

/* Adds what a command-line argument names: a recording file, a directory of recordings, or
 * the pid of a recording process (the recording it maps, from /proc/PID/maps). Returns 0,
 * or -1 with a message in msg. */
int perfgroup__live_add(struct pgl_set *s, const char *arg, char *msg, size_t msglen);
/* Finds new recordings (children of followed pids, new files in followed directories),
 * then reads what is new in every file. */
void perfgroup__live_refresh(struct pgl_set *s);
void perfgroup__live_free(struct pgl_set *s);

/* Totals of file f over its threads, one row per group (rows: f->ngroups, zeroed by the
 * caller), and the file's event CPU and events. */
void perfgroup__live_file_totals(const struct pgl_file *f, struct pgc_row *rows,
                                 uint64_t *cpu_ns, uint64_t *events);
const char *perfgroup__live_state_name(enum pgl_state s);

#endif /* PGLIVE_H */
