/* SPDX-License-Identifier: MIT */
/* tests/runtime/dl_module.c — a module that is the only user of libperfgroup.so in its
 * process: test_dlclose dlopens it, runs an implicit event in it and dlcloses it. */
#include "task.h"

SITE(site, "dl", "mod_work");

int mod_work(void)
{
    uint64_t tok = __perfgroup_enter(&site); /* an implicit event: starts the sampler */
    spin_ns(15 * 1000000ll);
    __perfgroup_exit(&site, tok);
    return 0;
}
