/* SPDX-License-Identifier: MIT */
/*
 * clip.h — the clipping policy (clip.c) as input.c calls it: internal to shared/.
 */
#ifndef PGCLIP_H
#define PGCLIP_H

#include "pgshared.h"

/* The tick rate the clipping assumes: the file's TSC rate, or 1 GHz for a monotonic clock
 * (bounded to 1 MHz .. 1 THz). */
uint64_t pgc_clip_hz(const struct pgc_file *f);
/* Sets f's clipping bounds from its header and chunk index; following: a file read while
 * it grows (chunks being written have no ceiling). */
void pgc_clip_init(struct pgc_file *f, int following);
/* Brings r's times within f's clocks, counting what it changes (f->counts.clipped). */
void pgc_clip_record(struct pgc_file *f, struct pgr_record *r);

#endif /* PGCLIP_H */
