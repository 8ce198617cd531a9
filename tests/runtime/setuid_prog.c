/* SPDX-License-Identifier: MIT */
/*
 * tests/runtime/setuid_prog.c — the program setuid_test.py installs setuid-root: it starts
 * the runtime (its constructor reads the PERFGROUP_* environment), runs one event and
 * reports whether a recording is open. Linked with the static runtime so that the dynamic
 * loader's own AT_SECURE rules (no LD_LIBRARY_PATH) play no part.
 */
#include <stdio.h>

#include "perfgroup.h"

int main(void)
{
    perfgroup_event_begin("setuid");
    perfgroup_event_end();
    int closed = perfgroup_record_close(); /* 0: a recording was open */
    printf("recording %s\n", closed == 0 ? "open" : "none");
    return 0;
}
