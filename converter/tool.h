/* SPDX-License-Identifier: MIT */
/*
 * tool.h — the `perfgroup` command (perfgroup.c) and its subcommands: `perfgroup top`
 * (top.c) and `perfgroup metrics` (metrics.c), both over the live follower (live.h).
 */
#ifndef PGTOOL_H
#define PGTOOL_H

int perfgroup__top_main(int argc, char **argv);
int perfgroup__metrics_main(int argc, char **argv);
int perfgroup__map_main(int argc, char **argv); /* map.c: `perfgroup map` */
/* "perfgroup <cmd>: <message>" and the usage on stderr; returns PGC_EXIT_USAGE. */
int perfgroup__tool_usage(const char *usage, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* PGTOOL_H */
