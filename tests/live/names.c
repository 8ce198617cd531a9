/* SPDX-License-Identifier: MIT */
/*
 * names.c — a recording whose names are hostile: groups and a thread named with bytes that
 * are not UTF-8 (0xE9 alone, as Latin-1 writes "é"), with a terminal's escape sequences and
 * a newline, and two groups whose names differ only in such a byte. Its program name is what
 * the test passes as argv[0]. The live tests export it (promtool must accept the page) and
 * show it in `perfgroup top` in a terminal (no escape sequence may reach it).
 *   names THREAD_NAME SECONDS
 * Calls the hooks by hand (sites with those group names), so it builds without a plugin.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <time.h>

#include <perfgroup.h>
#include <perfgroup/abi.h>

static volatile unsigned sink;

#define SITE(var, groups)                                                                     \
    static struct perfgroup_site var __attribute__((aligned(8))) = {                          \
        PERFGROUP_ABI_VERSION, 0, __LINE__, groups "\0", #var "\0" __FILE__, 0, 0}

SITE(latin1, "sp\xe9ll");                       /* "spéll" in Latin-1: not UTF-8 */
SITE(escape, "esc\x1b[2J\x1b[31mred\x1b]0;owned\x07");  /* clear screen, red, window title */
SITE(newline, "two\nlines\r");
SITE(twin_a, "twin\xe9");                       /* twin_a and twin_b: one name once U+FFFD */
SITE(twin_b, "twin\xea");

static void work(struct perfgroup_site *s, unsigned n)
{
    uint64_t t = __perfgroup_enter(s);
    for (unsigned i = 0; i < n; i++)
        sink += i * 2654435761u;
    __perfgroup_exit(s, t);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    perfgroup_thread_name(argc > 1 ? argv[1] : "th\xe9\x1b[2J");
    double end = now() + (argc > 2 ? atof(argv[2]) : 1.0);
    do {
        perfgroup_event_begin("tick");
        work(&latin1, 20000);
        work(&escape, 20000);
        work(&newline, 20000);
        work(&twin_a, 10000);
        work(&twin_b, 10000);
        perfgroup_event_end();
        struct timespec pause = {0, 2000000};
        nanosleep(&pause, NULL);
    } while (now() < end);
    return 0;
}
