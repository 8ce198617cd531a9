/* SPDX-License-Identifier: MIT */
/* sites: reads this executable's own site array through the ABI (__start_/__stop_ of
 * perfgroup_sites) and prints every descriptor, to check what the plugin emitted and that the
 * module constructor registered them (the runtime resolved each cache slot). Built with
 * -fplugin-arg-perfgroup-default=filegrp. */
#include <perfgroup.h>
#include <perfgroup/abi.h>
#include <stdio.h>
#include <string.h>

extern struct perfgroup_site __start_perfgroup_sites[], __stop_perfgroup_sites[];

PERF_GROUP("attrgrp") int with_attr(int x) { return x + 1; }
int file_only(int x) { return x + 2; }
static inline int in_line(int x) { return x + 3; }

static void dump(void) PERF_GROUP_NONE;
static void dump(void)
{
    for (struct perfgroup_site *s = __start_perfgroup_sites; s < __stop_perfgroup_sites; s++) {
        const char *file = s->where + strlen(s->where) + 1;
        const char *fgroup = s->groups + strlen(s->groups) + 1;
        /* cache and key: 0 as emitted; the runtime fills them when the module constructor
         * registers (a key: every one of these functions has an active group) */
        printf("site v=%u flags=0x%x line=%u groups=%s|%s where=%s|%s cache=%s key=%s\n",
               s->version, s->flags, s->line, s->groups, fgroup, s->where,
               strrchr(file, '/') ? strrchr(file, '/') + 1 : file,
               s->cache ? "resolved" : "null", s->key ? "set" : "0");
    }
}

int main(void) PERF_GROUP_NONE;
int main(void)
{
    volatile int x = 0;
    int r = with_attr(x) + file_only(x) + in_line(x);
    dump();
    return r == 6 ? 0 : 1;
}
