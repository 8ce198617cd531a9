/* SPDX-License-Identifier: MIT */
/*
 * gecko_tables.c — a Gecko thread's string, frame and stack tables: unique entries interned
 * as records are read (hash maps over the rows), written after the thread's samples; and
 * the line a run out of memory ends with.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gecko.h"

int pgc_gecko_oom(struct gecko *prof)
{
    if (!prof->err->set) {
        prof->err->set = 1;
        snprintf(prof->err->msg, sizeof(prof->err->msg), "%s: byte 0: out of memory", prof->f->path);
    }
    return -1;
}

uint32_t pgc_intern_string(struct gthread *t, const char *s, size_t n)
{
    uint64_t h = pgc_hash_bytes(s, n);
    uint32_t v;
    /* chain on collision: probe h, h+1, ... until the string matches or is absent */
    for (uint64_t k = h;; k = (k + 0x9e3779b97f4a7c15ull) & ~(1ull << 63)) {
        if (!pgc_hash_get(&t->string_map, k, &v)) {
            if (grow((void **)&t->strings, &t->capstrings, t->nstrings + 1, sizeof(char *)))
                return UNKNOWN;
            char *c = malloc(n + 1);
            if (!c)
                return UNKNOWN;
            memcpy(c, s, n);
            c[n] = '\0';
            if (pgc_hash_put(&t->string_map, k, t->nstrings)) {
                free(c);
                return UNKNOWN;
            }
            t->strings[t->nstrings] = c;
            return t->nstrings++;
        }
        if (strlen(t->strings[v]) == n && memcmp(t->strings[v], s, n) == 0)
            return v;
    }
}

uint32_t pgc_intern_frame(struct gthread *t, uint32_t loc, uint32_t cat, uint32_t line)
{
    if (loc == UNKNOWN)
        return UNKNOWN;
    uint64_t key = ((uint64_t)loc << 24) ^ ((uint64_t)cat << 2) ^ ((uint64_t)line << 40);
    uint32_t v;
    /* key collisions are possible in theory: verify and probe */
    for (;; key = (key * 0x9e3779b97f4a7c15ull + 1) & ~(1ull << 63)) {
        if (!pgc_hash_get(&t->frame_map, key, &v))
            break;
        if (t->frame_loc[v] == loc && t->frame_cat[v] == cat && t->frame_line[v] == line)
            return v;
    }
    uint32_t cap = t->capframes;
    if (grow((void **)&t->frame_loc, &cap, t->nframes + 1, 4))
        return UNKNOWN;
    cap = t->capframes;
    if (grow((void **)&t->frame_cat, &cap, t->nframes + 1, 4))
        return UNKNOWN;
    if (grow((void **)&t->frame_line, &t->capframes, t->nframes + 1, 4))
        return UNKNOWN;
    if (pgc_hash_put(&t->frame_map, key, t->nframes))
        return UNKNOWN;
    t->frame_loc[t->nframes] = loc;
    t->frame_cat[t->nframes] = cat;
    t->frame_line[t->nframes] = line;
    return t->nframes++;
}

/* prefix UNKNOWN = a root stack */
uint32_t pgc_intern_stack(struct gthread *t, uint32_t prefix, uint32_t frame)
{
    if (frame == UNKNOWN)
        return UNKNOWN;
    uint64_t key = ((uint64_t)(prefix + 1u) << 32) | frame;
    uint32_t v;
    if (pgc_hash_get(&t->stack_map, key, &v))
        return v;
    uint32_t cap = t->capstacks;
    if (grow((void **)&t->stack_prefix, &cap, t->nstacks + 1, 4))
        return UNKNOWN;
    if (grow((void **)&t->stack_frame, &t->capstacks, t->nstacks + 1, 4))
        return UNKNOWN;
    if (pgc_hash_put(&t->stack_map, key, t->nstacks))
        return UNKNOWN;
    t->stack_prefix[t->nstacks] = prefix; /* always an earlier row (or none) */
    t->stack_frame[t->nstacks] = frame;
    return t->nstacks++;
}

uint32_t pgc_label_frame(struct gthread *t, const char *label, uint32_t cat)
{
    return pgc_intern_frame(t, pgc_intern_string(t, label, strlen(label)), cat, 0);
}

uint32_t pgc_group_category(struct gthread *t, uint32_t gidx)
{
    return gidx < t->f->ngroups
               ? pgc_category_of(&t->prof->cats, t->f->groups[gidx].name, t->f->groups[gidx].kind)
               : CAT_OTHER;
}

/* "function (in plugin-3.so)": a native function whose resource is the object its code is in
 * (the Firefox Profiler shows one add-on's `addon_run` apart from another's); "function
 * (file.c) (in lib)" where the lib has another function of that name in another file. */
uint32_t pgc_function_frame(struct gthread *t, uint32_t site, uint32_t cat)
{
    if (site >= t->f->nsites)
        return pgc_label_frame(t, "(unknown function)", cat);
    const struct pgc_site *s = &t->f->sites[site];
    const char *file = strrchr(s->file, '/');
    file = file ? file + 1 : s->file;
    size_t n = strlen(s->display) + strlen(file) + strlen(s->lib) + 16;
    char stackbuf[512];
    char *b = n <= sizeof(stackbuf) ? stackbuf : malloc(n);
    if (!b)
        return UNKNOWN;
    if (s->name_shared)
        snprintf(b, n, "%s (%s) (in %s)", s->display, file[0] ? file : "?", s->lib);
    else
        snprintf(b, n, "%s (in %s)", s->display, s->lib);
    uint32_t fr = pgc_intern_frame(t, pgc_intern_string(t, b, strlen(b)), cat, s->line);
    if (b != stackbuf)
        free(b);
    return fr;
}

/* The thread's frame, stack and string tables (unique entries only), after its samples. */
void pgc_tables_write(struct gthread *t)
{
    struct pgc_out *o = t->prof->out;
    PGC_LIT(o, ",\n\"frameTable\":{\"schema\":{\"location\":0,\"relevantForJS\":1,\"innerWindowID\":2,"
               "\"implementation\":3,\"line\":4,\"column\":5,\"category\":6,\"subcategory\":7},"
               "\"data\":[");
    for (uint32_t i = 0; i < t->nframes; i++) {
        PGC_SEP(o, i, "\n[");
        pgc_out_u64(o, t->frame_loc[i]);
        PGC_LIT(o, ",false,0,null,");
        if (t->frame_line[i])
            pgc_out_u64(o, t->frame_line[i]);
        else
            PGC_LIT(o, "null");
        PGC_LIT(o, ",null,");
        pgc_out_u64(o, t->frame_cat[i]);
        PGC_LIT(o, ",0]");
    }
    PGC_LIT(o, "]},\n\"stackTable\":{\"schema\":{\"prefix\":0,\"frame\":1},\"data\":[");
    for (uint32_t i = 0; i < t->nstacks; i++) {
        PGC_SEP(o, i, "\n[");
        if (t->stack_prefix[i] == UNKNOWN)
            PGC_LIT(o, "null");
        else
            pgc_out_u64(o, t->stack_prefix[i]);
        PGC_LIT(o, ",");
        pgc_out_u64(o, t->stack_frame[i]);
        PGC_LIT(o, "]");
    }
    PGC_LIT(o, "]},\n\"stringTable\":[");
    for (uint32_t i = 0; i < t->nstrings; i++) {
        if (i)
            PGC_LIT(o, ",\n");
        pgc_out_json_str(o, t->strings[i], strlen(t->strings[i]));
    }
}
