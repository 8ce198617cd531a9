/* SPDX-License-Identifier: MIT */
/*
 * runtime/memory.c — the runtime's memory: anonymous mappings and a bump arena over them
 * (base.h). Nothing is ever given back: groups, functions, strings and writers live as long
 * as the process. Never malloc: it may be the program's (instrumented), or hold its lock in
 * the code a signal interrupted while the handler's hook registers a thread or a name.
 */
#define _GNU_SOURCE
#include <string.h>
#include <sys/mman.h>

#include "base.h"

PG_HIDDEN void *perfgroup__map(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

PG_HIDDEN void *perfgroup__arena_alloc(struct pg_arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (!a->cur || (size_t)(a->end - a->cur) < size) {
        size_t chunk = size > a->chunk ? size : a->chunk;
        char *p = perfgroup__map(chunk);
        if (!p)
            return NULL;
        a->cur = p;
        a->end = p + chunk;
    }
    void *p = a->cur;
    a->cur += size;
    return p;
}

PG_HIDDEN char *perfgroup__arena_strdup(struct pg_arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = perfgroup__arena_alloc(a, n);
    if (p)
        memcpy(p, s, n);
    return p;
}
