/* SPDX-License-Identifier: MIT */
/*
 * runtime_cases.h — what test_runtime.c (the accounting rules) and test_runtime_proc.c
 * (threads, processes, control, modules) share: the sites, one event, the snapshot.
 */
#ifndef PERFGROUP_TEST_RUNTIME_CASES_H
#define PERFGROUP_TEST_RUNTIME_CASES_H

#include "task.h"

#define MS 1000000ll

extern struct perfgroup_site site_a, site_b, site_c, site_ab; /* test_runtime.c */

/* One explicit event "ev" running `site` for ns of CPU. */
void one_event(struct perfgroup_site *site, int64_t ns);

static inline struct perfgroup_snapshot *snap(void) { return perfgroup_snapshot_take(); }

/* test_runtime_proc.c */
void case_thread_exit(void);
void case_threads(void);
void case_control(void);
void case_modules(void);
void case_fork(void);
void case_fork_threads(void);
void case_fork_in_event(void);
void case_spawn_started(void);

#endif
