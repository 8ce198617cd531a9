/* SPDX-License-Identifier: MIT */
/*
 * perfgroup.c — the `perfgroup` command: live views of recording programs.
 *   perfgroup top FILE|PID|DIR...       the about:performance table, refreshed every second
 *   perfgroup metrics ... FILE|PID|DIR  group totals for Prometheus (/metrics or a textfile)
 *   perfgroup map MAPFILE compile_commands.json   the file groups a map gives a build (map.c)
 * (perfgroup-convert turns recordings into profiles and summaries after the fact.)
 */
#include <stdio.h>
#include <string.h>

#include "pgshared.h"
#include "tool.h"

static const char usage[] =
    "usage: perfgroup top [-d SECONDS] [-n COUNT] FILE|PID|DIR...\n"
    "       perfgroup metrics [--listen [HOST:]PORT] [--textfile PATH] [--every SECONDS]\n"
    "                         FILE|PID|DIR...\n"
    "       perfgroup map [--default GROUP] MAPFILE compile_commands.json\n"
    "  top      a live table of each recording process's groups (perfgroup top --help)\n"
    "  metrics  group totals as Prometheus counters (perfgroup metrics --help)\n"
    "  map      each source file's group under a map file, and the globs matching nothing\n"
    "Recordings come from PERFGROUP_OUTPUT; perfgroup-convert makes profiles of them.\n";

int main(int argc, char **argv)
{
    if (argc < 2)
        return pgl_usage(usage, "which command?");
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(argv[1], "top")) {
        pgl_cmd_name = "perfgroup top";
        return pgl_top_main(argc - 1, argv + 1);
    }
    if (!strcmp(argv[1], "metrics")) {
        pgl_cmd_name = "perfgroup metrics";
        return pgl_metrics_main(argc - 1, argv + 1);
    }
    if (!strcmp(argv[1], "map")) {
        pgl_cmd_name = "perfgroup map";
        return pgl_map_main(argc - 1, argv + 1);
    }
    return pgl_usage(usage, "unknown command %s", argv[1]);
}
