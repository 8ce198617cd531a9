/* SPDX-License-Identifier: MIT */
/*
 * tests/runtime/test_abi.c — a module built for another hook ABI: the runtime says so once
 * on stderr and stays off rather than miscount. ctest checks the message (see CMakeLists).
 * A module of ABI 2 (no lite frames: the Clang plugin's) is one this runtime runs.
 */
#include "task.h"

static struct perfgroup_site future[2] __attribute__((aligned(8))) = {
    {PERFGROUP_ABI_VERSION + 1, 0, 1, "F\0", "f1\0f.c", 0, 0},
    {PERFGROUP_ABI_VERSION + 1, 0, 2, "F\0", "f2\0f.c", 0, 0},
};
static struct perfgroup_site older[1] __attribute__((aligned(8))) = {
    {PERFGROUP_ABI_VERSION_NO_LITE, 0, 3, "F\0", "f3\0f.c", 0, 0},
};
SITE(site_a, "A", "fa");

int main(void)
{
    ASSERT(perfgroup_is_active());
    __perfgroup_register_module(PERFGROUP_ABI_VERSION_NO_LITE, older, older + 1);
    ASSERT(perfgroup_is_active());
    ASSERT(older[0].cache != NULL); /* resolved at its registration */
    __perfgroup_register_module(PERFGROUP_ABI_VERSION + 1, future, future + 2);
    __perfgroup_register_module(PERFGROUP_ABI_VERSION + 1, future, future + 2); /* once */
    ASSERT(!perfgroup_is_active());
    ASSERT_I64(perfgroup_start(), <, 0);
    ASSERT_U64(__perfgroup_enter(&site_a), ==, 0);
    ASSERT_U64(__perfgroup_enter(&future[0]), ==, 0);
    printf("ok abi\n");
    return 0;
}
