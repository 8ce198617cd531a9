/* SPDX-License-Identifier: MIT */
/*
 * tests/lite/mixed_lib.c — the ABI 2 half of tests/lite/mixed.c: a shared object built with
 * the other plugin than the program's in weak-hooks mode (ABI 2's sequence: every call through
 * the hooks, sites of version 2), called from the program's lite frames and calling back into
 * them; and one function, mx_s_again, instrumented by hand with ABI 2's inline sequence
 * exactly as include/perfgroup/abi.h gives it (the inline re-entry check reading only mask and
 * sp), which no plugin emits any more but modules built before ABI 3 hold. Its work is the
 * program's busy loop (uninstrumented), `per_ns` iterations a ns.
 */
#include <stdint.h>

#include "perfgroup.h"
#include "perfgroup/abi.h"

static double per_ns;
static void (*burn)(uint64_t);
static void (*cb_r)(void);
static uint64_t calls_q, calls_s_inline;

PERF_GROUP_NONE static void spin_ns(double ns) { burn((uint64_t)(ns * per_ns)); }

/* S's group again from ABI 2 code, inside S's lite frame: a re-entry (the inline check reads
 * the mask and sp a lite frame set). ABI 2's sequence by hand: a site of version 2 in this
 * module's section (its constructor, the plugin's, registers it with the others), the check,
 * the hooks. */
static struct perfgroup_site site_s_again
    __attribute__((section(PERFGROUP_SITES_SECTION), aligned(8), used)) = {
        PERFGROUP_ABI_VERSION_NO_LITE, PERFGROUP_SITE_F_ATTR, __LINE__ + 2, "S\0",
        "mx_s_again\0" __FILE__, 0, 0};
PERF_GROUP_NONE __attribute__((noinline)) static void mx_s_again(void)
{
    uint64_t tok = 0;
    if ((site_s_again.key | PERFGROUP_TLS_CUR.mask) != ~0ull ||
        (uintptr_t)__builtin_dwarf_cfa() > PERFGROUP_TLS_CUR.sp)
        tok = PERFGROUP_HOOK_ENTER(&site_s_again);
    else
        calls_s_inline++;
    spin_ns(100);
    if (tok != 0)
        PERFGROUP_HOOK_EXIT(&site_s_again, tok);
}

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
/* mx_s_again's calls that its inline check let pass without a hook call */
PERF_GROUP_NONE uint64_t mx_lib_inline(void) { return calls_s_inline; }

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
