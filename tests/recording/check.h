/* SPDX-License-Identifier: MIT */
/*
 * check.h — typed asserts for the recording tests (libuv test/task.h style): a failed
 * check prints both values and the line, and exits 1.
 */
#ifndef PERFGROUP_TESTS_CHECK_H
#define PERFGROUP_TESTS_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_U(a, op, b)                                                                   \
    do {                                                                                    \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                    \
        if (!(a_ op b_)) {                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s %s %s (%" PRIu64 " vs %" PRIu64 ")\n", \
                    __FILE__, __LINE__, #a, #op, #b, a_, b_);                               \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

#define CHECK_EQ(a, b) CHECK_U(a, ==, b)

#define CHECK_STR(a, b)                                                                     \
    do {                                                                                    \
        const char *a_ = (a), *b_ = (b);                                                    \
        if (strcmp(a_, b_) != 0) {                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (\"%s\" vs \"%s\")\n", __FILE__,  \
                    __LINE__, #a, #b, a_, b_);                                              \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

#define CHECK(c)                                                                            \
    do {                                                                                    \
        if (!(c)) {                                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c);          \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

#endif
