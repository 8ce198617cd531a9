/* SPDX-License-Identifier: MIT */
/*
 * rec_test.h — what test_record.c and test_record_proc.c share: the test directory, the
 * definitions and records a test writes (rec_util.c), and the process tests' entry points.
 */
#ifndef PERFGROUP_TESTS_REC_TEST_H
#define PERFGROUP_TESTS_REC_TEST_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"

extern char dir[256]; /* the test's own directory (make_dir), removed when it passes */
void make_dir(void);
void rm_dir(void);
void path_in(char *out, size_t cap, const char *name);
/* Definitions a test program makes: 3 groups, 2 functions. */
void define_some(void);
void write_intervals(struct perfgroup_rec_thread *w, uint64_t from, uint64_t n);
void write_event(struct perfgroup_rec_thread *w, uint32_t name, uint64_t t);

/* test_record_proc.c: processes and environments */
int test_fork(void);
int exec_parent(const char *self);
int exec_child(void);
int test_exec(const char *self);
int test_vfork(void);
int test_fork_lazy(void);
int notmp_child(void);
int test_notmp(const char *self);
int test_symlink(void);
int perm_child(void);
int test_perm(const char *self);
int test_badenv(const char *self);

#endif
