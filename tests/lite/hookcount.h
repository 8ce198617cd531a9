/* SPDX-License-Identifier: MIT */
/*
 * tests/lite/hookcount.h — the enter hook's calls, counted, for a program linked with
 * -Wl,--wrap=__perfgroup_enter (paths.c, exceptions.cc): the wrapper is a tail call (the hook
 * reads its caller's CFA and return address, which a wrapper's own frame would change).
 * HOOK_CALLS(): the calls so far, -1 where not counted (not x86-64: not checked). Include once
 * per program.
 */
#ifndef PERFGROUP_TEST_HOOKCOUNT_H
#define PERFGROUP_TEST_HOOKCOUNT_H

#include <stdint.h>

#if defined(__x86_64__)
#ifdef __cplusplus
extern "C" {
#endif
uint64_t pg_hook_calls;
#ifdef __cplusplus
}
#endif
__asm__(".text\n.globl __wrap___perfgroup_enter\n.type __wrap___perfgroup_enter,@function\n"
        "__wrap___perfgroup_enter:\n\taddq $1, pg_hook_calls(%rip)\n"
        "\tjmp __real___perfgroup_enter@PLT\n"
        ".size __wrap___perfgroup_enter, .-__wrap___perfgroup_enter\n");
#define HOOK_CALLS() ((long long)__atomic_load_n(&pg_hook_calls, __ATOMIC_RELAXED))
#else
#define HOOK_CALLS() (-1LL) /* not counted: not checked */
#endif

#endif
