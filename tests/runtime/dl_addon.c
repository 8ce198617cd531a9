/* SPDX-License-Identifier: MIT */
/* tests/runtime/dl_addon.c — an add-on as a plugin emits one, by hand: its site in the
 * module's perfgroup_sites section, registered by a constructor. Built twice (ADDON_GROUP "a"
 * and "b"): the same function name, file and line, two groups, two objects. test_dlchurn
 * loads and unloads them. */
#include "task.h"

#ifndef ADDON_GROUP
#error ADDON_GROUP
#endif

static struct perfgroup_site site
    __attribute__((section(PERFGROUP_SITES_SECTION), aligned(8), used)) = {
        PERFGROUP_ABI_VERSION, PERFGROUP_SITE_F_ATTR, 12, ADDON_GROUP "\0", "addon_run\0addon.c",
        0, 0};
extern struct perfgroup_site __start_perfgroup_sites[] __attribute__((visibility("hidden")));
extern struct perfgroup_site __stop_perfgroup_sites[] __attribute__((visibility("hidden")));

__attribute__((constructor)) static void addon_register(void)
{
    PERFGROUP_MODULE_REGISTER(PERFGROUP_ABI_VERSION, __start_perfgroup_sites,
                              __stop_perfgroup_sites);
}

void addon_run(int64_t ns)
{
    uint64_t tok = PERFGROUP_HOOK_ENTER(&site);
    burn(ns);
    if (tok)
        PERFGROUP_HOOK_EXIT(&site, tok);
}
