/* SPDX-License-Identifier: MIT */
/*
 * runtime/record_none.c — the recorder's interface (record.h) when no recorder is linked:
 * recording is off (perfgroup__rec_mode == 0) and every call does nothing. Replaced by
 * record.c when the file-backed recorder lands.
 */
#include "record.h"

int perfgroup__rec_mode;

void perfgroup__rec_init(void) {}
void perfgroup__rec_close(void) {}
void perfgroup__rec_group(uint32_t group_id, const char *name, int kind, int active)
{ (void)group_id, (void)name, (void)kind, (void)active; }
void perfgroup__rec_function(uint32_t function_id, const char *function, const char *file,
                             uint32_t line, const uint32_t *group_ids, unsigned ngroups)
{ (void)function_id, (void)function, (void)file, (void)line, (void)group_ids, (void)ngroups; }
uint32_t perfgroup__rec_string(const char *text) { (void)text; return 0; }
struct perfgroup_rec_thread *perfgroup__rec_thread_start(uint32_t thread_index, uint32_t tid,
                                                         const char *name)
{ (void)thread_index, (void)tid, (void)name; return 0; }
void perfgroup__rec_thread_name(struct perfgroup_rec_thread *w, const char *name) { (void)w, (void)name; }
void perfgroup__rec_thread_end(struct perfgroup_rec_thread *w, uint64_t tsc) { (void)w, (void)tsc; }
void perfgroup__rec_event(struct perfgroup_rec_thread *w, uint32_t name_string_id,
                          uint64_t begin_tsc, uint64_t end_tsc, uint64_t cpu_ns, unsigned flags,
                          const struct perfgroup_rec_group_share *groups, unsigned ngroups)
{ (void)w, (void)name_string_id, (void)begin_tsc, (void)end_tsc, (void)cpu_ns, (void)flags, (void)groups, (void)ngroups; }
void perfgroup__rec_interval(struct perfgroup_rec_thread *w, uint32_t function_id,
                             uint8_t group_mask, uint8_t depth, uint64_t start_tsc, uint64_t duration)
{ (void)w, (void)function_id, (void)group_mask, (void)depth, (void)start_tsc, (void)duration; }
void perfgroup__rec_overhead(struct perfgroup_rec_thread *w, uint64_t commit_ns,
                             uint64_t commits, uint64_t slow_paths, uint64_t resyncs)
{ (void)w, (void)commit_ns, (void)commits, (void)slow_paths, (void)resyncs; }
