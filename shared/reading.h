/* SPDX-License-Identifier: MIT */
/*
 * reading.h — the reading code's internals across its files (input.c reads and streams a
 * recording, defs.c keeps its definitions, clip.c its clipping policy): internal to shared/.
 */
#ifndef PGREADING_H
#define PGREADING_H

#include "pgshared.h"

/* clip.c: the tick rate the clipping assumes: the file's TSC rate, or 1 GHz for a monotonic clock
 * (bounded to 1 MHz .. 1 THz). */
uint64_t pgc_clip_hz(const struct pgc_file *f);
/* clip.c: sets f's clipping bounds from its header and chunk index; following: a file read while
 * it grows (chunks being written have no ceiling). */
void pgc_clip_init(struct pgc_file *f, int following);
/* clip.c: brings r's times within f's clocks, counting what it changes (f->counts.clipped). */
void pgc_clip_record(struct pgc_file *f, struct pgr_record *r);

/* util.c: sets err to "<path>: byte <off>: <what>" (the first error wins) */
void pgc_read_fail(struct pgc_error *err, const char *path, uint64_t off, const char *what);
/* util.c: "out of memory" for f; returns -1 */
int pgc_read_oom(struct pgc_file *f, struct pgc_error *err);

/* defs.c: one definition record into f's tables; 0, or -1 with err set */
int pgc_def_add(struct pgc_file *f, const struct pgr_record *r, struct pgc_error *err);
/* defs.c: the index in f->threads of a thread index with data, defined (named "thread N") if
 * it has no PGF_REC_THREAD; -1 with err set when out of memory */
int pgc_thread_ensure(struct pgc_file *f, uint32_t index, struct pgc_error *err);
/* defs.c: each site's lib (pgc_site.lib, name_shared), once every definition is read */
void pgc_sites_libs(struct pgc_file *f);

#endif /* PGREADING_H */
