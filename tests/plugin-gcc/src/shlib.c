/* SPDX-License-Identifier: MIT */
/* shlib: a shared library with sites of its own (it registers them from its own module
 * constructor: the executable's __start_/__stop_ bounds do not cover them). */
#include <perfgroup.h>
#include <perfgroup/abi.h>

/* The library's own bounds (hidden: the linker defines them for this module only). */
extern struct perfgroup_site __start_perfgroup_sites[], __stop_perfgroup_sites[];

/* not static (hidden): a static one called only from its group would be elided, no site */
PERF_GROUP("lib") __attribute__((visibility("hidden"))) int lib_inner(int x) { return x + 40; }
PERF_GROUP("lib") __attribute__((visibility("default"))) int lib_work(int x) { return lib_inner(x); }

/* How many of this library's sites the runtime resolved, i.e. saw registered: all of them
 * once the library's constructor has run. */
__attribute__((visibility("default"))) PERF_GROUP_NONE int lib_sites_resolved(void)
{
    int n = 0;
    for (struct perfgroup_site *s = __start_perfgroup_sites; s < __stop_perfgroup_sites; s++)
        n += s->cache != 0;
    return n;
}
