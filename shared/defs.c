/* SPDX-License-Identifier: MIT */
/*
 * defs.c — a recording's definitions: each definition record (process, group, function site,
 * thread, string) copied into pgc_file's tables and id maps, the sites' libs told apart, and
 * the lookups by id. input.c reads the records and calls it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "reading.h"

static char *dup_str(struct pgr_str s)
{
    char *p = malloc((size_t)s.len + 1);
    if (!p)
        return NULL;
    if (s.len)
        memcpy(p, s.ptr, s.len);
    p[s.len] = '\0';
    /* an embedded NUL would cut names short in C: show it as '?' */
    for (uint32_t i = 0; i < s.len; i++)
        if (p[i] == '\0')
            p[i] = '?';
    return p;
}

#define GROW(arr, n, elt)                                                                     \
    do {                                                                                      \
        if (((n) & ((n) - 1)) == 0) {                                                         \
            void *g__ = realloc((arr), ((n) ? (size_t)(n) * 2 : 8) * sizeof(elt));            \
            if (!g__)                                                                         \
                return pgc_read_oom(f, err);                                                           \
            (arr) = g__;                                                                      \
        }                                                                                     \
    } while (0)

/* A function group is named after its function, mangled for C++ ("_ZN3app5parseEv()"):
 * show it demangled. */
static void demangle_group(struct pgc_group *g)
{
    size_t n = strlen(g->name);
    if (n < 3 || g->name[0] != '_' || g->name[1] != 'Z')
        return;
    int parens = n > 2 && strcmp(g->name + n - 2, "()") == 0;
    if (parens)
        g->name[n - 2] = '\0';
    char *d = pgc_demangle(g->name);
    if (parens)
        g->name[n - 2] = '(';
    if (d) {
        free(g->name);
        g->name = d;
    }
}

int pgc_def_add(struct pgc_file *f, const struct pgr_record *r, struct pgc_error *err)
{
    uint32_t idx;
    switch (r->kind) {
    case PGF_REC_PROCESS: {
        free(f->program);
        for (uint32_t i = 0; i < f->nargs; i++)
            free(f->args[i]);
        free(f->args);
        f->args = NULL;
        f->nargs = 0;
        f->pid = r->u.process.pid;
        f->ppid = r->u.process.ppid;
        f->program = dup_str(r->u.process.program);
        if (!f->program)
            return pgc_read_oom(f, err);
        if (r->u.process.nargs) {
            f->args = calloc(r->u.process.nargs, sizeof(*f->args));
            if (!f->args)
                return pgc_read_oom(f, err);
            for (uint32_t i = 0; i < r->u.process.nargs; i++) {
                if (!(f->args[i] = dup_str(r->u.process.args[i])))
                    return pgc_read_oom(f, err);
                f->nargs = i + 1;
            }
        }
        f->start_realtime_ns = r->u.process.start_realtime_ns;
        f->start_monotonic_ns = r->u.process.start_monotonic_ns;
        f->start_tsc = r->u.process.start_tsc;
        if (r->u.process.tsc_hz)
            f->tsc_hz = r->u.process.tsc_hz;
        f->mode = r->u.process.mode;
        return 0;
    }
    case PGF_REC_GROUP: {
        if (pgc_hash_get(&f->group_ids, r->u.group.group_id, &idx)) {
            pgc_read_fail(err, f->path, r->offset, "group: duplicate group_id");
            return -1;
        }
        GROW(f->groups, f->ngroups, struct pgc_group);
        struct pgc_group *g = &f->groups[f->ngroups];
        g->id = r->u.group.group_id;
        g->kind = r->u.group.group_kind;
        g->active = (uint32_t)r->u.group.active;
        if (!(g->name = dup_str(r->u.group.name)))
            return pgc_read_oom(f, err);
        demangle_group(g);
        if (pgc_hash_put(&f->group_ids, g->id, f->ngroups))
            return pgc_read_oom(f, err);
        f->ngroups++;
        return 0;
    }
    case PGF_REC_SITE: {
        if (pgc_hash_get(&f->site_ids, r->u.site.function_id, &idx)) {
            /* the same function from another TU: the contract merges them; keep the first */
            return 0;
        }
        GROW(f->sites, f->nsites, struct pgc_site);
        struct pgc_site *s = &f->sites[f->nsites];
        memset(s, 0, sizeof(*s));
        s->id = r->u.site.function_id;
        s->line = r->u.site.line;
        if (!(s->function = dup_str(r->u.site.function)) || !(s->file = dup_str(r->u.site.file)) ||
            !(s->module = dup_str(r->u.site.module)))
            return pgc_read_oom(f, err);
        s->display = pgc_demangle(s->function);
        if (!s->display)
            s->display = s->function;
        if (r->u.site.ngroups) {
            s->groups = malloc(r->u.site.ngroups * sizeof(*s->groups));
            if (!s->groups)
                return pgc_read_oom(f, err);
        }
        for (uint32_t i = 0; i < r->u.site.ngroups; i++) {
            uint32_t gi;
            if (!pgc_hash_get(&f->group_ids, r->u.site.group_ids[i], &gi)) {
                pgc_read_fail(err, f->path, r->offset, "site: undefined group_id");
                f->nsites++; /* owned memory is freed at close */
                return -1;
            }
            s->groups[s->ngroups++] = gi;
        }
        if (pgc_hash_put(&f->site_ids, s->id, f->nsites))
            return pgc_read_oom(f, err);
        f->nsites++;
        return 0;
    }
    case PGF_REC_THREAD: {
        /* an older writer's unnamed thread: the runtime's fallback name */
        char unnamed[32];
        struct pgr_str ns = r->u.thread.name;
        if (!ns.len)
            ns = (struct pgr_str){unnamed, (uint32_t)snprintf(unnamed, sizeof unnamed, "thread %u",
                                                              r->u.thread.tid)};
        char *name = dup_str(ns);
        if (!name)
            return pgc_read_oom(f, err);
        if (pgc_hash_get(&f->thread_ids, r->u.thread.thread_index, &idx)) {
            /* renamed: the latest name is the one the program chose last */
            free(f->threads[idx].name);
            f->threads[idx].name = name;
            f->threads[idx].tid = r->u.thread.tid;
            return 0;
        }
        GROW(f->threads, f->nthreads, struct pgc_thread);
        f->threads[f->nthreads] = (struct pgc_thread){r->u.thread.thread_index, r->u.thread.tid, name};
        if (pgc_hash_put(&f->thread_ids, r->u.thread.thread_index, f->nthreads))
            return pgc_read_oom(f, err);
        f->nthreads++;
        return 0;
    }
    case PGF_REC_STRING: {
        if (pgc_hash_get(&f->string_ids, r->u.string.string_id, &idx))
            return 0;
        GROW(f->strings, f->nstrings, struct pgc_string);
        f->strings[f->nstrings].id = r->u.string.string_id;
        if (!(f->strings[f->nstrings].text = dup_str(r->u.string.text)))
            return pgc_read_oom(f, err);
        if (pgc_hash_put(&f->string_ids, r->u.string.string_id, f->nstrings))
            return pgc_read_oom(f, err);
        f->nstrings++;
        return 0;
    }
    default:
        pgc_read_fail(err, f->path, r->offset, "data record in a definitions chunk");
        return -1;
    }
}

/* A thread index that has data but no PGF_REC_THREAD: give it a name so it still shows. */
int pgc_thread_ensure(struct pgc_file *f, uint32_t index, struct pgc_error *err)
{
    uint32_t idx;
    if (pgc_hash_get(&f->thread_ids, index, &idx))
        return (int)idx;
    GROW(f->threads, f->nthreads, struct pgc_thread);
    char buf[32];
    snprintf(buf, sizeof(buf), "thread %u", index);
    char *name = strdup(buf);
    if (!name)
        return pgc_read_oom(f, err);
    f->threads[f->nthreads] = (struct pgc_thread){index, 0, name};
    if (pgc_hash_put(&f->thread_ids, index, f->nthreads))
        return pgc_read_oom(f, err);
    return (int)f->nthreads++;
}

/* The path's last `parts` components ("plugin-3/plugin.so" for 2), or the whole path. */
static const char *path_tail(const char *path, unsigned parts)
{
    const char *p = path + strlen(path);
    while (p > path) {
        if (p[-1] == '/' && --parts == 0)
            return p;
        p--;
    }
    return path;
}

/*
 * Each site's `lib`: its object's file name, or the program's for the program's own functions
 * ("" module). Two objects of one file name (every add-on a plugin.so in a directory of its
 * own) get as many directories as tell them apart. Bounded: past 256 objects in one file,
 * file names only.
 */
void pgc_sites_libs(struct pgc_file *f)
{
    enum { MAXMOD = 256 };
    const char *mods[MAXMOD];
    unsigned parts[MAXMOD], nm = 0, last = 0;
    const char *prog = f->program && f->program[0] ? path_tail(f->program, 1) : "(program)";
    /* a module's sites mostly come together: the last one found is tried first */
#define FIND_MOD(m, k)                                                                        \
    do {                                                                                      \
        k = last < nm && strcmp(mods[last], m) == 0 ? last : 0;                               \
        while (k < nm && strcmp(mods[k], m) != 0)                                             \
            k++;                                                                              \
        if (k < nm)                                                                           \
            last = k;                                                                         \
    } while (0)
    for (uint32_t i = 0; i < f->nsites; i++) {
        const char *m = f->sites[i].module;
        unsigned k;
        if (!m[0])
            continue;
        FIND_MOD(m, k);
        if (k == nm && nm < MAXMOD) {
            mods[nm] = m;
            parts[nm++] = 1;
        }
    }
    for (int changed = 1, rounds = 0; changed && rounds < 64; rounds++) {
        changed = 0;
        for (unsigned a = 0; a < nm; a++)
            for (unsigned b = a + 1; b < nm; b++) {
                const char *ta = path_tail(mods[a], parts[a]), *tb = path_tail(mods[b], parts[b]);
                if (strcmp(ta, tb) != 0)
                    continue;
                if (ta != mods[a]) {
                    parts[a]++;
                    changed = 1;
                }
                if (tb != mods[b]) {
                    parts[b]++;
                    changed = 1;
                }
            }
    }
    for (uint32_t i = 0; i < f->nsites; i++) {
        struct pgc_site *s = &f->sites[i];
        unsigned k = nm;
        if (s->module[0])
            FIND_MOD(s->module, k);
        s->lib = !s->module[0] ? prog : path_tail(s->module, k < nm ? parts[k] : 1);
    }
#undef FIND_MOD
    /* two functions of one name in one lib, from two files (static functions) */
    struct pgc_hash seen = {0};
    for (uint32_t i = 0; i < f->nsites; i++) {
        struct pgc_site *s = &f->sites[i];
        uint64_t key = pgc_hash_bytes(s->display, strlen(s->display)) * 1000003u ^
                       pgc_hash_bytes(s->lib, strlen(s->lib));
        uint32_t j;
        if (!pgc_hash_get(&seen, key, &j)) {
            if (pgc_hash_put(&seen, key, i))
                break; /* no memory: names as they are */
        } else if (strcmp(f->sites[j].file, s->file) != 0) {
            s->name_shared = f->sites[j].name_shared = 1;
        }
    }
    pgc_hash_free(&seen);
}

uint32_t pgc_group_index(const struct pgc_file *f, uint32_t id)
{
    uint32_t v;
    if (id < PGC_DIRECT_IDS && f->group_direct)
        return f->group_direct[id];
    return pgc_hash_get(&f->group_ids, id, &v) ? v : UINT32_MAX;
}

uint32_t pgc_thread_slot(const struct pgc_file *f, uint32_t thread_index)
{
    uint32_t v;
    return pgc_hash_get(&f->thread_ids, thread_index, &v) ? v : UINT32_MAX;
}

uint32_t pgc_site_index(const struct pgc_file *f, uint32_t id)
{
    uint32_t v;
    return pgc_hash_get(&f->site_ids, id, &v) ? v : UINT32_MAX;
}

const char *pgc_string_text(const struct pgc_file *f, uint32_t id)
{
    uint32_t v;
    return id && pgc_hash_get(&f->string_ids, id, &v) ? f->strings[v].text : NULL;
}
