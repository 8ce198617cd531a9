/* SPDX-License-Identifier: MIT */
/*
 * tests/lite/mixed_lib.c — the Clang-built half of tests/lite/mixed.c: a shared object of ABI 2
 * (the Clang plugin makes no lite frames), called from the GCC-built program's lite frames
 * and calling back into them. Its work is the program's busy loop (uninstrumented), `per_ns`
 * iterations a ns.
 */
#include <stdint.h>

#include "perfgroup.h"
#include "perfgroup/abi.h"

static double per_ns;
static void (*burn)(uint64_t);
static void (*cb_r)(void);
static uint64_t calls_q;

PERF_GROUP_NONE static void spin_ns(double ns) { burn((uint64_t)(ns * per_ns)); }

/* S's group again from ABI 2 code, inside S's lite frame: a re-entry (the inline check reads
 * the mask a lite frame set). */
PERF_GROUP("S") __attribute__((noinline)) static void mx_s_again(void) { spin_ns(100); }

/* Q: called by S (lite frames, in_s) and by P; calls R (GCC: lite frames inside this runtime
 * frame) when i has bit 1, S's group again when called by S and i has bit 2. */
PERF_GROUP("Q") __attribute__((noinline)) void mx_q(unsigned i, int in_s)
{
    calls_q++;
    spin_ns(400);
    if (i & 2)
        cb_r();
    if (in_s && (i & 4))
        mx_s_again();
    spin_ns(200);
}

PERF_GROUP_NONE void mx_lib_init(double iters_per_ns, void (*b)(uint64_t), void (*r)(void))
{
    per_ns = iters_per_ns;
    burn = b;
    cb_r = r;
}

PERF_GROUP_NONE uint64_t mx_lib_calls(void) { return calls_q; }

/* The ABI version this object's sites say (its own section: the bounds resolve in it). */
extern struct perfgroup_site __start_perfgroup_sites[] __attribute__((visibility("hidden")));
extern struct perfgroup_site __stop_perfgroup_sites[] __attribute__((visibility("hidden")));
PERF_GROUP_NONE unsigned mx_lib_abi(void)
{
    unsigned v = 0;
    for (struct perfgroup_site *s = __start_perfgroup_sites; s < __stop_perfgroup_sites; s++)
        v = v == 0 || v == s->version ? s->version : 1000; /* 1000: mixed */
    return v;
}
