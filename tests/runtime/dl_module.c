/* SPDX-License-Identifier: MIT */
/* tests/runtime/dl_module.c — a module that is the only user of libperfgroup.so in its
 * process: test_dlclose dlopens it, runs an implicit event in it and dlcloses it. */
#include <time.h>

#include "perfgroup/abi.h"

static struct perfgroup_site site __attribute__((aligned(8))) = {
    PERFGROUP_ABI_VERSION, 0, __LINE__, "dl\0", "mod_work\0" __FILE__, 0};

static void spin_ms(long ms)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

int mod_work(void)
{
    uint64_t tok = __perfgroup_enter(&site); /* an implicit event: starts the sampler */
    spin_ms(15);
    __perfgroup_exit(&site, tok);
    return 0;
}
