/* SPDX-License-Identifier: MIT */
/*
 * tests/lite/abi2_runtime.c — a stand-in for a runtime of ABI 2 (before lite frames), for
 * tests/lite/abi2_prog.c: it defines what such a runtime exports (enter, exit, registration,
 * a 16-byte __perfgroup_cur) and nothing of ABI 3 (no __perfgroup_exit_lite), and refuses a
 * module of another version as runtime/registry.c of ABI 2 did (the message on stderr, the
 * runtime off: every hook returns 0). Past the 16 bytes of its cur lies what an older runtime
 * would have there, anything: here a NULL pointer where ABI 3 has cur.ctl, so code that read
 * it would crash. PGABI2_CUR=full: mask with every bit a runtime can set (0-62) and the
 * largest sp, the state in which ABI 3 code that ignored a key of 0 would make lite frames.
 * Not instrumented, no abi.h (its names are declared here as ABI 2 had them).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct site2 {
    uint16_t version, flags;
    uint32_t line;
    const char *groups, *where;
    void *cache;
    uint64_t key;
};
struct cur2 {
    uint64_t mask;
    uintptr_t sp;
    void *beyond[2]; /* not ABI 2's: what follows it in the thread's TLS */
};
__attribute__((visibility("default"), tls_model("initial-exec"))) __thread struct cur2 __perfgroup_cur;

static unsigned off_version, refused;
static unsigned long enters, exits;

static void refuse(unsigned v)
{
    if (!refused)
        fprintf(stderr, "perfgroup: a module was instrumented for hook ABI %u, this runtime "
                "implements 2 (rebuild it with this perfgroup)\n", v);
    refused = 1;
    off_version = v;
}

static void set_cur(void)
{
    const char *m = getenv("PGABI2_CUR");
    if (m && strcmp(m, "full") == 0) {
        __perfgroup_cur.mask = ~0ull >> 1;
        __perfgroup_cur.sp = UINTPTR_MAX;
    }
}

__attribute__((visibility("default"))) void __perfgroup_register_module(uint32_t v, struct site2 *start,
                                                                         struct site2 *stop)
{
    (void)start, (void)stop;
    set_cur();
    if (v != 2)
        refuse(v);
}

__attribute__((visibility("default"))) uint64_t __perfgroup_enter(struct site2 *site)
{
    enters++;
    if (site->version != 2)
        refuse(site->version);
    return 0; /* off */
}

__attribute__((visibility("default"))) void __perfgroup_exit(struct site2 *site, uint64_t token)
{
    (void)site, (void)token;
    exits++;
}

/* For the program's checks (not an ABI 2 name). */
__attribute__((visibility("default"))) void abi2_stats(unsigned *version, unsigned *was_refused,
                                                       unsigned long *n_enter, unsigned long *n_exit)
{
    *version = off_version;
    *was_refused = refused;
    *n_enter = enters;
    *n_exit = exits;
}
