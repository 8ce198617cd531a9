/* SPDX-License-Identifier: MIT */
/*
 * tool.h — the `perfgroup` command (perfgroup.c) and its subcommands: `perfgroup top`
 * (top.c) and `perfgroup metrics` (metrics.c), both over the live follower (live.h).
 */
#ifndef PGTOOL_H
#define PGTOOL_H

int pgl_top_main(int argc, char **argv);
int pgl_metrics_main(int argc, char **argv);
int pgl_map_main(int argc, char **argv); /* map.c: `perfgroup map` */
/* usage.c: "perfgroup <cmd>: <message>" and the usage on stderr; returns PGC_EXIT_USAGE.
 * pgl_cmd_name: "perfgroup <cmd>", set by perfgroup.c's main. */
extern const char *pgl_cmd_name;
int pgl_usage(const char *usage, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* PGTOOL_H */
