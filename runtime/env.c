/* SPDX-License-Identifier: MIT */
/*
 * runtime/env.c — the one place the runtime reads its environment.
 *
 * Every PERFGROUP_* setting (and anything else the runtime would take from the environment)
 * goes through perfgroup__getenv(), which is secure_getenv(): in a process started with
 * AT_SECURE set — setuid or setgid, file capabilities, an LSM transition — it returns NULL,
 * so the settings of the user who started the program are ignored and the program runs as
 * if none were set. Without this, PERFGROUP_OUTPUT / PERFGROUP_TEXT would let any user make
 * a setuid-root program create, replace or truncate files of root's choosing and
 * PERFGROUP_BUFFER would let them allocate gigabytes there (issue 15). A privileged program
 * that wants a recording calls perfgroup_record_open() with a path of its own choosing.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/auxv.h>

#include "base.h"

PG_HIDDEN const char *perfgroup__getenv(const char *name)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 17))
    return secure_getenv(name);
#else
    return getauxval(AT_SECURE) ? NULL : getenv(name);
#endif
}
