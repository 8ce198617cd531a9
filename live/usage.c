/* SPDX-License-Identifier: MIT */
/*
 * usage.c — what the `perfgroup` command and its subcommands say about a bad command line
 * (perfgroup.c names the subcommand that runs).
 */
#include <stdarg.h>
#include <stdio.h>

#include "pgshared.h"
#include "tool.h"

const char *pgl_cmd_name = "perfgroup";

int pgl_usage(const char *use, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", pgl_cmd_name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n%s", use);
    return PGC_EXIT_USAGE;
}
