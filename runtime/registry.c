/* SPDX-License-Identifier: MIT */
/*
 * runtime/registry.c — the registry: groups (by name and by id), functions (one per module,
 * name, file, line and groups: docs/architecture.md, "Function identity"), the loaded
 * modules their sites are in, module registration, group activation, and re-keying (every
 * function's re-entry key recomputed, every live module's sites rewritten: reentry.c has
 * the keys' state table). Everything here is created under `reg_lock`, in the registry's
 * arena, and never freed.
 *
 * Locks: `reg_lock` guards the registry; it is never taken on the hot path: a hook that
 * needs it (the first call of a site whose module did not register) only try-locks it and
 * skips the call if busy. Lock order: registry, dead pool (lifecycle.c), recorder.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

static _Atomic(struct pg_group *) group_blocks[PG_GROUP_BLOCKS];
static _Atomic uint32_t ngroups;
#define GROUP_HASH 4096
static struct pg_group *group_hash[GROUP_HASH];
#define FUNC_HASH 16384
static struct pg_func *func_hash[FUNC_HASH];
static struct pg_func *all_funcs;
static uint32_t nfuncs;
#define MODULES_MAX 1024
/* A registered module: one load of an object (executable or shared object). The same
 * address range may hold another object after a dlclose, or the same one loaded again: the
 * entry is that load's only while `probe` (its first resolved site) still holds `probe_fn`
 * — a new load's sites start with an empty cache slot. */
static struct module {
    struct perfgroup_site *start, *stop;
    const char *path;                 /* the object as the loader names it; "" the program */
    struct perfgroup_site *probe;
    struct pg_func *probe_fn;
} modules[MODULES_MAX];
static unsigned nmodules;

/* The registry's objects (groups, functions, module paths), under reg_lock. */
static struct pg_arena arena = {NULL, NULL, 1u << 20};

static void *arena_alloc(size_t size) { return perfgroup__arena_alloc(&arena, size); }
static char *arena_strdup(const char *s) { return perfgroup__arena_strdup(&arena, s); }

PG_HIDDEN void perfgroup__reg_lock(void) { pthread_mutex_lock(&reg_lock); }
PG_HIDDEN void perfgroup__reg_unlock(void) { pthread_mutex_unlock(&reg_lock); }


/* ---- groups ------------------------------------------------------------------------------ */

PG_HIDDEN struct pg_group *perfgroup__group_at(uint32_t id)
{
    struct pg_group *b = atomic_load_explicit(&group_blocks[id / PG_GROUP_BLOCK],
                                              memory_order_acquire);
    return b ? &b[id % PG_GROUP_BLOCK] : NULL;
}

PG_HIDDEN uint32_t perfgroup__group_count(void)
{
    return atomic_load_explicit(&ngroups, memory_order_acquire);
}

static struct pg_group *group_find_locked(const char *name)
{
    for (struct pg_group *g = group_hash[pg_hash_str(name, PG_HASH_SEED) % GROUP_HASH]; g; g = g->hash_next)
        if (strcmp(g->name, name) == 0)
            return g;
    return NULL;
}

static struct pg_group *group_get_locked(const char *name, int kind, int active)
{
    struct pg_group *g = group_find_locked(name);
    if (g)
        return g;
    uint32_t id = atomic_load(&ngroups);
    if (id >= PG_MAX_GROUPS)
        return NULL;
    struct pg_group *b = atomic_load(&group_blocks[id / PG_GROUP_BLOCK]);
    if (!b) {
        b = perfgroup__map(sizeof(struct pg_group) * PG_GROUP_BLOCK);
        if (!b)
            return NULL;
        atomic_store_explicit(&group_blocks[id / PG_GROUP_BLOCK], b, memory_order_release);
    }
    g = &b[id % PG_GROUP_BLOCK];
    g->name = arena_strdup(name);
    if (!g->name)
        return NULL;
    g->id = id;
    g->kind = (uint8_t)kind;
    atomic_store(&g->active, (uint8_t)active);
    uint32_t h = pg_hash_str(name, PG_HASH_SEED) % GROUP_HASH;
    g->hash_next = group_hash[h];
    group_hash[h] = g;
    atomic_store_explicit(&ngroups, id + 1, memory_order_release);
    perfgroup__rec_group(id, g->name, kind, active);
    return g;
}

static void func_update_mask(struct pg_func *fn)
{
    unsigned m = 0;
    for (unsigned i = 0; i < fn->ngroups; i++)
        if (atomic_load_explicit(&perfgroup__group_at(fn->gid[i])->active, memory_order_relaxed))
            m |= 1u << i;
    atomic_store_explicit(&fn->active_mask, (uint8_t)m, memory_order_relaxed);
}

/* ---- modules: the loaded object an address is in ------------------------------------------- */

/* A module's path, interned (equal paths, one pointer), under reg_lock. */
static const char *path_intern_locked(const char *path)
{
    static struct path_node {
        struct path_node *next;
        const char *path;
    } *paths;
    for (struct path_node *p = paths; p; p = p->next)
        if (strcmp(p->path, path) == 0)
            return p->path;
    struct path_node *p = arena_alloc(sizeof *p);
    if (!p || !(p->path = arena_strdup(path)))
        return NULL;
    p->next = paths;
    paths = p;
    return p->path;
}

PG_HIDDEN int perfgroup__object_holds(const struct dl_phdr_info *info, const void *addr)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (uintptr_t)addr >= lo && (uintptr_t)addr - lo < ph->p_memsz)
            return 1;
    }
    return 0;
}

struct object_query {
    const void *addr;
    const char *path; /* interned; NULL: no object holds addr (or no memory) */
};

static int object_query_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct object_query *q = arg;
    if (!perfgroup__object_holds(info, q->addr))
        return 0;
    q->path = path_intern_locked(info->dlpi_name ? info->dlpi_name : "");
    return 1;
}

/*
 * reg_lock held: the path of the object whose segments hold `addr` — the loader's name of it,
 * "" for the program itself — or "?" if none does. Read inside dl_iterate_phdr, whose lock
 * keeps a concurrent dlclose from unmapping the object meanwhile. Cold: registration, and the
 * first call of a site whose module has not registered yet.
 */
static const char *module_path_locked(const void *addr)
{
    struct object_query q = {addr, NULL};
    dl_iterate_phdr(object_query_cb, &q);
    return q.path ? q.path : "?";
}

/* fn's re-entry key (reentry.c) from its groups. */
static void key_locked(struct pg_func *fn)
{
    struct pg_group *g[PG_SITE_GROUPS];
    for (unsigned i = 0; i < fn->ngroups; i++)
        g[i] = perfgroup__group_at(fn->gid[i]);
    perfgroup__key_locked(fn, g);
}

static void modules_walk_locked(int rekey);

/* ---- sites and functions ----------------------------------------------------------------- */

/* A module's (or a site's) ABI version this runtime runs (abi.h): ABI 2 code (either plugin
 * with weak-hooks, modules built before ABI 3) reads only cur.mask and cur.sp and calls the
 * hooks wherever ABI 3 code would make a lite frame, so the two mix in one event; nothing in
 * the runtime depends on which one a site is (it never hands a site a lite token: lite frames
 * are made inline only). */
static int pg_abi_accepted(uint32_t v)
{
    return v >= PERFGROUP_ABI_VERSION_MIN && v <= PERFGROUP_ABI_VERSION;
}

/* The function's site an entry of a module's section stands for: the entry itself, or for a
 * COMDAT function's indirect entry the site it points at (abi.h); NULL: an empty slot. */
static struct perfgroup_site *entry_site(struct perfgroup_site *s)
{
    if (s->version != 0 && (s->flags & PERFGROUP_SITE_F_INDIRECT))
        s = s->cache;
    return s && s->version != 0 ? s : NULL;
}

static struct pg_func *resolve_locked(struct perfgroup_site *site, const char *module)
{
    struct pg_func *fn = __atomic_load_n(&site->cache, __ATOMIC_ACQUIRE);
    if (fn)
        return fn;
    PG_TEST_POINT(19); /* the registry held: test_seam registry_busy */
    if (!pg_abi_accepted(site->version)) {
        char msg[160];
        snprintf(msg, sizeof msg, "a module was instrumented for hook ABI %u, this runtime "
                 "implements %u to %u (rebuild it with this perfgroup)", site->version,
                 PERFGROUP_ABI_VERSION_MIN, PERFGROUP_ABI_VERSION);
        perfgroup__disable(msg);
        return NULL;
    }
    const char *attr = site->groups ? site->groups : "";
    const char *fgroup = site->groups ? attr + strlen(attr) + 1 : "";
    const char *name = site->where ? site->where : "?";
    const char *file = site->where ? name + strlen(name) + 1 : "";

    /* One function per (module, name, file, line, groups) — docs/architecture.md, "Function
     * identity": the sites of an inline function emitted by N translation units of a module
     * merge, and so do a module's loads one after another (dlopen, dlclose, dlopen: the same
     * path); two static functions of one name in two files do not, nor two modules' functions
     * (every add-on's `addon_run` in its `plugin.c`, an inline function of one header in two
     * add-ons: each module runs its own copy), nor one spelling with other groups. `module` is
     * interned: one pointer per path. */
    uint32_t h = pg_hash_str(attr, pg_hash_str(file, pg_hash_str(name, PG_HASH_SEED) ^ site->line)) % FUNC_HASH;
    for (fn = func_hash[h]; fn; fn = fn->hash_next)
        if (fn->line == site->line && fn->module == module && strcmp(fn->name, name) == 0 &&
            strcmp(fn->file, file) == 0 && strcmp(fn->attr_group, attr) == 0 &&
            strcmp(fn->file_group, fgroup) == 0)
            goto found;

    fn = arena_alloc(sizeof *fn);
    if (!fn)
        return NULL;
    memset(fn, 0, sizeof *fn);
    fn->name = arena_strdup(name);
    fn->file = arena_strdup(file);
    fn->attr_group = arena_strdup(attr);
    fn->file_group = arena_strdup(fgroup);
    size_t nl = strlen(name);
    char *fname = arena_alloc(nl + 3);
    if (!fn->name || !fn->file || !fn->attr_group || !fn->file_group || !fname)
        return NULL;
    memcpy(fname, name, nl);
    memcpy(fname + nl, "()", 3);
    fn->line = site->line;
    fn->module = module;
    fn->flags = site->flags;
    if (strcmp(name, "main") == 0) /* every plugin emits the C/C++ `main` by that name */
        fn->flags |= PERFGROUP_SITE_F_ROOT;
    struct pg_group *g[PG_SITE_GROUPS];
    unsigned n = 0;
    if (*attr)
        g[n++] = group_get_locked(attr, PERFGROUP_KIND_ATTRIBUTE, 1);
    if (*fgroup && strcmp(fgroup, attr) != 0)
        g[n++] = group_get_locked(fgroup, PERFGROUP_KIND_FILE, 1);
    g[n++] = group_get_locked(fname, PERFGROUP_KIND_FUNCTION, 0);
    for (unsigned i = 0; i < n; i++) {
        if (!g[i])
            return NULL;
        fn->gid[i] = g[i]->id;
        if (g[i]->id > fn->max_gid)
            fn->max_gid = g[i]->id;
    }
    fn->ngroups = (uint8_t)n;
    fn->id = nfuncs++;
    fn->rec_head = perfgroup__rec_interval_head(fn->id);
    func_update_mask(fn);
    key_locked(fn);
    fn->hash_next = func_hash[h];
    func_hash[h] = fn;
    fn->all_next = all_funcs;
    all_funcs = fn;
    perfgroup__rec_function(fn->id, fn->name, fn->file, fn->line, fn->module, fn->gid,
                            fn->ngroups);
found:
    __atomic_store_n(&site->cache, fn, __ATOMIC_RELEASE);
    return fn;
}

PG_HIDDEN struct pg_func *perfgroup__site_resolve(struct perfgroup_site *site)
{
    /* (no perfgroup__init here: the hook that calls this has a thread entry, taken after
     * start-up: perfgroup__thread_slow) */
    /* Never block in a hook: try a bounded while (another thread resolving its first
     * sites holds the lock for microseconds; yield now and then so that, on a busy
     * machine, it gets the CPU to finish), then refuse this one call, counted
     * (perfgroup_snapshot_refused): on a loaded machine the holder can stay preempted
     * longer than the bound. Sites registered by their module's constructor never come
     * here. */
    int locked = 0;
    for (int i = 0; i < 20000 && !(locked = pthread_mutex_trylock(&reg_lock) == 0); i++) {
        struct pg_func *fn = __atomic_load_n(&site->cache, __ATOMIC_ACQUIRE);
        if (fn)
            return fn;
        if (i % 64 == 63)
            sched_yield();
#if defined(__x86_64__) || defined(__i386__)
        else
            __builtin_ia32_pause();
#endif
    }
    if (!locked) {
        pg_refuse();
        return NULL;
    }
    struct pg_func *fn = __atomic_load_n(&site->cache, __ATOMIC_ACQUIRE);
    if (!fn) /* the module has not registered (yet): which object holds the site */
        fn = resolve_locked(site, module_path_locked(site));
    pthread_mutex_unlock(&reg_lock);
    return fn;
}

/* A module's sites (its constructor, through PERFGROUP_MODULE_REGISTER: control.c). */
PG_HIDDEN void perfgroup__register_module(uint32_t abi_version, struct perfgroup_site *start,
                                          struct perfgroup_site *stop)
{
    if (!pg_abi_accepted(abi_version)) {
        char msg[160];
        snprintf(msg, sizeof msg, "a module was instrumented for hook ABI %u, this runtime "
                 "implements %u to %u (rebuild it with this perfgroup)", abi_version,
                 PERFGROUP_ABI_VERSION_MIN, PERFGROUP_ABI_VERSION);
        perfgroup__disable(msg);
        return;
    }
    if (!start || stop <= start)
        return;
    pthread_mutex_lock(&reg_lock);
    const char *path = module_path_locked(start);
    /* Every TU of a module registers it: once per load is enough. An entry at the same
     * address is another load when its path or extent differ, or when its probe site lost
     * its function (a new load's cache slots are empty): the entry is reused for this one. */
    struct module *m = NULL;
    for (unsigned i = 0; i < nmodules && !m; i++)
        if (modules[i].start == start) {
            m = &modules[i];
            if (m->path == path && m->stop == stop && m->probe &&
                __atomic_load_n(&m->probe->cache, __ATOMIC_ACQUIRE) == m->probe_fn)
                goto out;
        }
    if (!m && nmodules == MODULES_MAX)
        modules_walk_locked(0); /* drop the entries of unloaded objects */
    /* Only a module on the list is re-keyed (perfgroup__rekey): one past the limit gets no
     * keys, its calls always reach the hooks. */
    if (!m && nmodules < MODULES_MAX)
        m = &modules[nmodules++];
    if (m)
        *m = (struct module){start, stop, path, NULL, NULL};
    for (struct perfgroup_site *s = start; s < stop; s++) {
        struct perfgroup_site *site = entry_site(s);
        if (!site)
            continue;
        struct pg_func *fn = resolve_locked(site, path);
        if (!fn)
            break;
        if (m && !m->probe) {
            m->probe = site;
            m->probe_fn = fn;
        }
        if (m)
            __atomic_store_n(&site->key, __atomic_load_n(&fn->key, __ATOMIC_RELAXED),
                             __ATOMIC_RELAXED);
    }
out:
    pthread_mutex_unlock(&reg_lock);
}

/*
 * The registered modules still loaded, walked inside dl_iterate_phdr (its lock keeps dlclose
 * from unmapping an object meanwhile): an entry is live while an object of its path holds its
 * section and its probe site still holds its function (the same load). rekey: every live
 * module's sites get their function's key again. The entries of unloaded objects are
 * dropped (when the table is full, at registration): their memory is never touched.
 */
struct modules_walk {
    int rekey;
    uint8_t live[MODULES_MAX];
};

static void site_rekey(struct perfgroup_site *site)
{
    struct pg_func *fn = site ? __atomic_load_n(&site->cache, __ATOMIC_ACQUIRE) : NULL;
    if (fn)
        __atomic_store_n(&site->key, __atomic_load_n(&fn->key, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
}

static int modules_walk_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct modules_walk *w = arg;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    for (unsigned i = 0; i < nmodules; i++) {
        struct module *m = &modules[i];
        if (w->live[i] || !m->probe || strcmp(m->path, name) != 0 ||
            !perfgroup__object_holds(info, m->start) ||
            !perfgroup__object_holds(info, (const char *)m->stop - 1) ||
            !perfgroup__object_holds(info, m->probe) ||
            __atomic_load_n(&m->probe->cache, __ATOMIC_ACQUIRE) != m->probe_fn)
            continue;
        w->live[i] = 1;
        for (struct perfgroup_site *s = m->start; w->rekey && s < m->stop; s++)
            site_rekey(entry_site(s));
    }
    return 0;
}

static void modules_walk_locked(int rekey)
{
    static struct modules_walk w; /* reg_lock held */
    memset(&w, 0, sizeof w);
    w.rekey = rekey;
    dl_iterate_phdr(modules_walk_cb, &w);
    unsigned n = 0;
    for (unsigned i = 0; i < nmodules; i++)
        if (w.live[i])
            modules[n++] = modules[i];
    nmodules = n;
}

/* Re-keying (reentry.c): every function's key recomputed, every site of every registered
 * module still loaded rewritten. */
static void rekey_locked(void)
{
    for (struct pg_func *fn = all_funcs; fn; fn = fn->all_next)
        key_locked(fn);
    modules_walk_locked(1);
}

/* The recording mode changed (control.c, after the recorder let go of its lock): trace mode
 * has no keys. */
PG_HIDDEN void perfgroup__rekey(void)
{
    pthread_mutex_lock(&reg_lock);
    rekey_locked();
    pthread_mutex_unlock(&reg_lock);
}

/* Group `name` (or the function group "name()") on or off (perfgroup_group_activate). */
PG_HIDDEN int perfgroup__group_set_active(const char *name, int on)
{
    pthread_mutex_lock(&reg_lock);
    struct pg_group *g = group_find_locked(name);
    if (!g) { /* "parse" finds the function group "parse()" */
        char buf[512];
        if (snprintf(buf, sizeof buf, "%s()", name) < (int)sizeof buf)
            g = group_find_locked(buf);
    }
    if (g) {
        atomic_store(&g->active, (uint8_t)(on != 0));
        for (struct pg_func *fn = all_funcs; fn; fn = fn->all_next)
            for (unsigned i = 0; i < fn->ngroups; i++)
                if (fn->gid[i] == g->id)
                    func_update_mask(fn);
        rekey_locked(); /* the functions' active groups changed */
    }
    pthread_mutex_unlock(&reg_lock);
    return g ? 0 : -ENOENT;
}

/* Start-up: the top group, id 0 == PG_TOP_GROUP. */
PG_HIDDEN void perfgroup__registry_init(void)
{
    pthread_mutex_lock(&reg_lock);
    group_get_locked("top", PERFGROUP_KIND_TOP, 1);
    pthread_mutex_unlock(&reg_lock);
}
