/* SPDX-License-Identifier: MIT */
/*
 * runtime/core.c — everything around the hooks: start-up, the registry of groups and
 * functions, module registration, events and their commits, control. Threads, fork and
 * process exit are lifecycle.c's.
 *
 * Locks: `reg_lock` guards the registry (groups, functions, modules); lifecycle.c's
 * `dead_lock` guards the totals of exited threads. Neither is ever taken on the hot path: a hook that needs the registry (first call of a
 * site whose module did not register) only try-locks it and skips the call if busy.
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

PG_HIDDEN _Atomic uint32_t perfgroup__gate = PG_GATE_OFF;
PG_HIDDEN __thread struct pg_thread *perfgroup__tls __attribute__((tls_model("initial-exec")));
PG_HIDDEN __thread uint32_t perfgroup__tls_state __attribute__((tls_model("initial-exec")));
PG_HIDDEN _Atomic uint64_t perfgroup__refused;
PG_HIDDEN _Atomic uint64_t perfgroup__clamped;
/* 0: exact (the default); PG_EST_WINDOW with PERFGROUP_ACCOUNTING=adaptive (opt-in while a
 * long hook-free gap before an estimated start can still land in one event's group:
 * docs/accounting.md, "Hot threads") */
PG_HIDDEN uint32_t perfgroup__est_window;
PG_HIDDEN _Atomic uint64_t perfgroup__estimated;
PG_HIDDEN _Atomic uint32_t perfgroup__reset_epoch = 1;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

static _Atomic int user_on = 1;     /* perfgroup_start / perfgroup_stop */
static _Atomic int disabled;        /* ABI mismatch: off for good */
PG_HIDDEN int perfgroup__text_on; /* PERFGROUP_TEXT: set once at start-up */

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


/* ---- memory: mmap only (malloc may be the host's and instrumented) -------------------- */

/* The registry's objects (groups, functions, module paths), under reg_lock. */
static struct pg_arena arena = {NULL, NULL, 1u << 20};

static void *arena_alloc(size_t size) { return perfgroup__arena_alloc(&arena, size); }
static char *arena_strdup(const char *s) { return perfgroup__arena_strdup(&arena, s); }

/* ---- gate -------------------------------------------------------------------------------- */

static void gate_update(void)
{
    uint32_t g = PG_GATE_OFF;
    if (perfgroup__owner) /* another copy owns the process: every hook forwards (owner.c) */
        g = PG_GATE_SPECIAL;
    else if (!atomic_load(&disabled) && atomic_load(&user_on))
        g = perfgroup__text_on || !pg_clocks_fast() ? PG_GATE_SPECIAL : PG_GATE_ON;
    atomic_store(&perfgroup__gate, g);
}

static void disable(const char *why)
{
    int was = atomic_exchange(&disabled, 1);
    if (!was)
        fprintf(stderr, "perfgroup: %s; the runtime stays off\n", why);
    gate_update();
}

PG_HIDDEN int perfgroup__disabled(void) { return atomic_load(&disabled) || perfgroup__owner; }
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

static void modules_walk_locked(int rekey);

/* ---- sites and functions ----------------------------------------------------------------- */

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
    if (site->version != PERFGROUP_ABI_VERSION) {
        char msg[160];
        snprintf(msg, sizeof msg, "a module was instrumented for hook ABI %u, this runtime "
                 "implements %u (rebuild it with this perfgroup)", site->version,
                 PERFGROUP_ABI_VERSION);
        disable(msg);
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
    perfgroup__key_locked(fn);
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
    perfgroup__init();
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

void PERFGROUP_MODULE_REGISTER(uint32_t abi_version, struct perfgroup_site *start,
                               struct perfgroup_site *stop)
{
    perfgroup__init();
    if (perfgroup__owner) { /* registered with the copy that owns the process (owner.c) */
        perfgroup__forward_register(abi_version, start, stop);
        return;
    }
    if (abi_version != PERFGROUP_ABI_VERSION) {
        char msg[160];
        snprintf(msg, sizeof msg, "a module was instrumented for hook ABI %u, this runtime "
                 "implements %u (rebuild it with this perfgroup)", abi_version,
                 PERFGROUP_ABI_VERSION);
        disable(msg);
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

/* This copy's own registration, for the mark another copy forwards through (owner.c). */
extern __typeof__(perfgroup__register_own) perfgroup__register_own
    __attribute__((alias(PERFGROUP_MODULE_REGISTER_NAME)));

/* ---- threads ----------------------------------------------------------------------------- */

/* The group table, and with it the list of groups executed in an event (at most one entry
 * per group) and the groups' off-CPU ticks in the event (cold: only cputime.c's settling
 * and commits touch them): the exit hook never has to grow anything. The first
 * PG_GROUPS_INLINE groups' live in the thread's entry; beyond, a mapping each for the group
 * table and for exec + goff + shares (an event's groups for its record), doubled as needed. */
PG_HIDDEN int perfgroup__grow_groups(struct pg_thread *t, uint32_t max_gid)
{
    if (t->cap == 0) { /* a new entry: the tables inside it, no mapping of their own */
        t->g = t->g0;
        t->exec = t->exec0;
        t->goff = t->goff0;
        t->shares = t->shares0;
        t->cap = t->exec_cap = PG_GROUPS_INLINE;
    }
    if (max_gid < t->cap)
        return 0;
    uint32_t cap = t->cap;
    while (cap <= max_gid)
        cap *= 2;
    struct pg_gstate *g = perfgroup__map(sizeof *g * cap);
    /* exec[i], goff[i], shares[i] */
    const size_t esz = sizeof(uint32_t) + sizeof(uint64_t) + sizeof(struct perfgroup_rec_group_share);
    uint32_t *e = perfgroup__map(esz * cap);
    if (!g || !e) {
        if (g)
            munmap(g, sizeof *g * cap);
        if (e)
            munmap(e, esz * cap);
        return -ENOMEM;
    }
    uint64_t *goff = (uint64_t *)(void *)(e + cap); /* cap >= 64, a power of 2: aligned */
    struct perfgroup_rec_group_share *shares = (void *)(goff + cap);
    memcpy(g, t->g, sizeof *g * t->cap);
    memcpy(e, t->exec, sizeof *e * t->nexec);
    memcpy(goff, t->goff, sizeof *goff * t->cap);
    if (t->g != t->g0)
        munmap(t->g, sizeof *g * t->cap);
    if (t->exec != t->exec0)
        munmap(t->exec, esz * t->exec_cap);
    t->g = g;
    t->exec = e;
    t->goff = goff;
    t->shares = shares;
    t->exec_cap = cap;
    t->cap = cap;
    return 0;
}

static struct pg_totals *totals_for(struct pg_thread *t, uint32_t gid)
{
    struct pg_totals *b = atomic_load_explicit(pg_tslot(t, gid / PG_GROUP_BLOCK), memory_order_relaxed);
    if (!b) {
        b = gid < PG_GROUP_BLOCK ? t->tot0 : perfgroup__map(sizeof *b * PG_GROUP_BLOCK);
        if (!b)
            return NULL;
        atomic_store_explicit(pg_tslot(t, gid / PG_GROUP_BLOCK), b, memory_order_release);
    }
    if (gid >= t->tot_hi)
        t->tot_hi = gid + 1;
    return &b[gid % PG_GROUP_BLOCK];
}

static struct pg_thread *self(void)
{
    struct pg_thread *t = perfgroup__tls;
    return t ? t : perfgroup__thread_slow();
}

/* ---- events and commits ------------------------------------------------------------------ */

static void event_open(struct pg_thread *t, uint64_t tsc, int kind, const char *name)
{
    struct pg_thread *latch = pg_latch_take();
    PG_TEST_POINT(1);
    t->iter++;
    t->event_stamp++;
    pg_exec_clear(t);
    t->event_open = (uint8_t)kind;
    t->event_name = name;
    t->event_begin_tsc = tsc;
    t->event_flags = kind == PG_EV_IMPLICIT ? PGF_EVENT_F_IMPLICIT : 0;
    /* every event starts exact (a rate window from its first stopwatch, hooks.c) */
    t->est_on = 0;
    t->est_left = perfgroup__est_window ? perfgroup__est_window : UINT32_MAX;
    t->est_win = 0;
    if (kind == PG_EV_EXPLICIT) {
        /* CPU clock first, then the counter: the event's cycles lie inside its CPU-clock
         * window; the reading also settles the thread's off-CPU time (cputime.c). */
        t->event_begin_cpu_ns = perfgroup__cputime_read(t, &t->event_begin_tsc);
        perfgroup__implicit_own(t, t->event_begin_tsc, t->event_begin_cpu_ns);
    } else {
        t->imp_off = t->off; /* `tsc` has every deschedule before it settled */
        perfgroup__implicit_arm(t, tsc);
    }
    if (perfgroup__rec_mode_now())
        perfgroup__progress_open(t, 1);
    t->last_tsc = t->event_begin_tsc;
    pg_cur_refresh(t); /* a new iteration: every frame's stopwatch is stale */
    PG_TEST_POINT(2);
    pg_latch_drop(latch);
}

/* Totals are written by their thread only, read word by word by snapshots. Release stores
 * keep every one after the odd `seq` store (no fence: TSan follows this), plain movs on x86. */
#define TSET(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELEASE)
#define TADD(field, v) TSET(field, (field) + (v))

/* A thread's totals back to zero, for the next thread to take its entry (or a reset):
 * only the entries it wrote, below its highest group (tot_hi), are stored to — an entry
 * never written is still on the zero page, and storing zeros there would make every
 * block's 152 KiB resident in every thread (issue 34). The owner thread, or its entry
 * freed / forked away (no writer). */
PG_HIDDEN void perfgroup__thread_totals_zero(struct pg_thread *t)
{
    uint32_t hi = t->tot_hi;
    for (uint32_t b = 0; b * PG_GROUP_BLOCK < hi; b++) {
        struct pg_totals *blk = atomic_load_explicit(pg_tslot(t, b), memory_order_relaxed);
        if (!blk)
            continue;
        uint32_t n = hi - b * PG_GROUP_BLOCK < PG_GROUP_BLOCK ? hi - b * PG_GROUP_BLOCK : PG_GROUP_BLOCK;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t *w = (uint64_t *)&blk[i], any = 0;
            for (size_t k = 0; k < sizeof *blk / sizeof(uint64_t); k++)
                any |= __atomic_load_n(&w[k], __ATOMIC_RELAXED);
            if (!any)
                continue;
            for (size_t k = 0; k < sizeof *blk / sizeof(uint64_t); k++)
                __atomic_store_n(&w[k], 0, __ATOMIC_RELEASE);
        }
    }
    t->tot_hi = 0;
}

static void totals_add(struct pg_totals *tot, uint64_t cycles, uint64_t cpu_ns, uint64_t wall_ns,
                       uint64_t acts, uint64_t discarded)
{
    TADD(tot->cycles, cycles);
    TADD(tot->cpu_ns, cpu_ns);
    TADD(tot->wall_ns, wall_ns);
    TADD(tot->blocked_ns, wall_ns > cpu_ns ? wall_ns - cpu_ns : 0);
    TADD(tot->activations, acts);
    TADD(tot->events, 1);
    TADD(tot->discarded, discarded);
    if (cpu_ns > tot->max_event_ns)
        TSET(tot->max_event_ns, cpu_ns);
    if (tot->events == 1 || cpu_ns < tot->min_event_ns)
        TSET(tot->min_event_ns, cpu_ns);
    if (wall_ns > tot->max_wall_ns)
        TSET(tot->max_wall_ns, wall_ns);
    unsigned m = perfgroup__jank_mask(cpu_ns);
    for (unsigned i = 0; m; i++, m >>= 1)
        TADD(tot->jank[i], m & 1);
}

/* Close the thread's current event at `end_tsc` with `cpu_ns` of CPU time, the top group's.
 * Every group that executed gets the CPU time its thread spent while the group's stopwatch
 * ran (wall - off-CPU, cputime.c); on a thread without rseq, n = cycles_g / cycles_event of
 * the event's (the estimate, docs/accounting.md). */
static void commit(struct pg_thread *t, uint64_t end_tsc, uint64_t cpu_ns)
{
    /* its own cost, for the recording's overhead records: two counter reads, ~20 ns of an
     * implicit event's ~70 on an Intel Xeon host (docs/benchmarks.md), read only while
     * recording */
    uint64_t t0 = perfgroup__rec_mode_now() ? pg_clock_now() : 0;
    struct pg_thread *latch = pg_latch_take();
    PG_TEST_POINT(3);
    uint32_t epoch = atomic_load_explicit(&perfgroup__reset_epoch, memory_order_relaxed);
    const char *ename = t->event_name ? t->event_name : "(implicit)";
    uint64_t ev_cycles = end_tsc - t->event_begin_tsc;
    int ev_ok = (int64_t)ev_cycles > 0;

    uint32_t seq = atomic_load_explicit(&t->seq, memory_order_relaxed);
    atomic_store_explicit(&t->seq, seq + 1, memory_order_relaxed);
    if (atomic_load_explicit(&t->reset_epoch, memory_order_relaxed) != epoch) {
        perfgroup__thread_totals_zero(t);
        atomic_store_explicit(&t->reset_epoch, epoch, memory_order_relaxed);
    }

    struct perfgroup_rec_group_share *shares = t->shares; /* room for every group */
    unsigned nshares = 0;
    uint64_t ev_wall = ev_ok ? perfgroup__ticks_to_ns(ev_cycles) : 0;
    if (ev_ok && cpu_ns > ev_wall) {
        /* more CPU than wall time (an explicit event's CPU is the difference of two CPU-clock
         * readings, its wall the counter's): at most its wall. Each end reads the CPU clock,
         * then the counter (cputime_read), so each interval holds the part of one read the
         * other does not: an excess within two reads' cost (+ 0.01 % for the counter's
         * rate) is the reads', not the clocks'. Only a larger one, a real disagreement, is
         * counted (perfgroup_snapshot_clamped; docs/accounting.md). */
        if (cpu_ns - ev_wall > 2 * perfgroup__cpu_read_ns + ev_wall / 10000)
            atomic_fetch_add_explicit(&perfgroup__clamped, 1, memory_order_relaxed);
        cpu_ns = ev_wall;
    }
    struct pg_totals *top = totals_for(t, PG_TOP_GROUP);
    if (top && ev_ok)
        totals_add(top, ev_cycles, cpu_ns, ev_wall, 1, 0);
    else if (top)
        TADD(top->discarded, 1);
    PG_TEST_POINT(4);

    for (uint32_t i = 0; i < t->nexec; i++) {
        uint32_t gid = t->exec[i];
        struct pg_gstate *s = &t->g[gid];
        struct pg_totals *tot = totals_for(t, gid);
        /* estimated starts (hooks.c): `recent` less the sampled corrections, which can
         * leave it below 0 (modulo 2^64) in an event of few starts: nothing then */
        uint64_t recent = (int64_t)s->recent < 0 ? 0 : s->recent;
        if (recent == 0 && s->acts == 0 && s->discarded == 0)
            tot = NULL; /* only settled off-CPU time (a stopwatch that went stale): no event */
        if (tot) {
            if (!ev_ok || recent > ev_cycles) {
                /* n > 1 or a counter that went backwards: discard, as Firefox does; every
                 * stopwatch of the group in the event counts (at least one) */
                TADD(tot->discarded, (s->acts ? s->acts : 1) + s->discarded);
                t->event_flags |= PGF_EVENT_F_DISCARDED;
            } else {
                uint64_t gwall = perfgroup__ticks_to_ns(recent);
                uint64_t gcpu = t->measured
                    ? perfgroup__ticks_to_ns(perfgroup__cputime_on(0, recent, 0, t->goff[gid]))
                    : (uint64_t)((double)recent / (double)ev_cycles * (double)cpu_ns);
                if (gcpu > gwall)
                    gcpu = gwall;
                if (gcpu > cpu_ns) /* a stopwatch lies inside its event: so does its CPU time */
                    gcpu = cpu_ns;
                totals_add(tot, recent, gcpu, gwall, s->acts, s->discarded);
                if (s->discarded)
                    t->event_flags |= PGF_EVENT_F_DISCARDED;
                perfgroup__alerts_check(t, ename, gid, gcpu, gwall, cpu_ns);
                shares[nshares++] = (struct perfgroup_rec_group_share){gid, recent, gcpu, s->acts};
            }
        }
        s->recent = 0;
        t->goff[gid] = 0;
        s->acts = 0;
        s->discarded = 0;
        PG_TEST_POINT(5);
    }
    atomic_store_explicit(&t->seq, seq + 2, memory_order_release);
    PG_TEST_POINT(6);

    if (perfgroup__rec_mode_now() && t->rec) {
        if (t->rec_name_ptr != ename) {
            t->rec_name_ptr = ename;
            t->rec_name_id = perfgroup__rec_string(ename);
        }
        perfgroup__rec_event(t->rec, t->rec_name_id, t->event_begin_tsc, end_tsc, cpu_ns,
                             t->event_flags, shares, nshares);
        /* the whole-run totals of the event's groups into the file (format.h): as the
         * snapshot has them, so the file keeps them whatever is recycled */
        if (top)
            perfgroup__rec_totals(t->rec, PG_TOP_GROUP, (const struct pgf_totals *)(void *)top);
        for (uint32_t i = 0; i < t->nexec; i++) {
            const struct pg_totals *tot = totals_for(t, t->exec[i]);
            if (tot && (tot->events || tot->discarded))
                perfgroup__rec_totals(t->rec, t->exec[i], (const struct pgf_totals *)(void *)tot);
        }
    }
    pg_exec_clear(t);
    t->event_open = PG_EV_NONE;
    if (atomic_load_explicit(&t->pub_open, memory_order_relaxed)) /* published: progress.c */
        perfgroup__progress_close(t);
    t->iter++;
    pg_cur_refresh(t); /* no event: off */
    t->ov_commits++;
    if (t0)
        t->ov_commit_ns += perfgroup__ticks_to_ns(pg_clock_now() - t0);
    if (perfgroup__rec_mode_now() && t->rec && (t->ov_commits & 1023) == 0) {
        perfgroup__rec_overhead(t->rec, t->ov_commit_ns, t->ov_commits, t->ov_slow, t->ov_resyncs,
                                t->ov_dropped);
        t->ov_commit_ns = t->ov_commits = t->ov_slow = t->ov_resyncs = t->ov_dropped = 0;
    }
    PG_TEST_POINT(7);
    pg_latch_drop(latch);
}

PG_HIDDEN void perfgroup__implicit_begin(struct pg_thread *t, uint64_t tsc)
{
    event_open(t, tsc, PG_EV_IMPLICIT, NULL);
    t->implicit_frame = t->depth;
}

/*
 * An implicit event's CPU time comes from implicit.c: exact when rseq shows the thread was
 * never descheduled, else interpolated from the sampler thread's readings of its CPU clock.
 * Inside a hook (own_read == 0) nothing reads the CPU clock; callers outside the hooks
 * (thread exit, event_begin, nested loops) read it once for an exact end.
 */
static void implicit_commit(struct pg_thread *t, uint64_t tsc, int own_read)
{
    int64_t own = own_read && !t->measured ? pg_clock_gettime_ns(CLOCK_THREAD_CPUTIME_ID) : -1;
    commit(t, tsc, perfgroup__implicit_cpu(t, t->event_begin_tsc, tsc, own));
}

PG_HIDDEN void perfgroup__implicit_end(struct pg_thread *t, uint64_t tsc)
{
    implicit_commit(t, tsc, 0);
}

/* The end is read here, after the CPU clock (the reading settles the off-CPU time up to it). */
static void explicit_end(struct pg_thread *t)
{
    uint64_t tsc;
    int64_t cpu = perfgroup__cputime_read(t, &tsc);
    perfgroup__clock_calibrate(tsc, pg_clock_gettime_ns(CLOCK_MONOTONIC));
    perfgroup__implicit_own(t, tsc, cpu);
    PG_TEST_POINT(18);
    int64_t d = cpu - t->event_begin_cpu_ns;
    commit(t, tsc, d > 0 ? (uint64_t)d : 0);
}

/* Outside the hooks: an implicit event may afford its own CPU-clock read for its end. */
PG_HIDDEN void perfgroup__event_close(struct pg_thread *t, uint64_t tsc)
{
    if (t->event_open == PG_EV_EXPLICIT)
        explicit_end(t);
    else if (t->event_open == PG_EV_IMPLICIT)
        implicit_commit(t, tsc, 1);
}

/* Trace mode: the frames [from, to) get an interval record up to `tsc` now, innermost first
 * (the order their exits would write them), so that the recording holds every frame the
 * shadow stack held: frames dropped by a resync or still open at thread exit, and the first
 * part of a frame split at a nested loop's end (restart_frames moves its start). */
PG_HIDDEN void perfgroup__trace_frames(struct pg_thread *t, uint32_t from, uint32_t to, uint64_t tsc)
{
    if (!t->rec || perfgroup__rec_mode_now() != PGF_MODE_TRACE)
        return;
    for (uint32_t i = to; i-- > from;) {
        const struct pg_frame *f = &t->stack[i];
        perfgroup__rec_interval(t->rec, f->fn->id, f->mask, (uint8_t)i, f->tsc, tsc - f->tsc);
    }
}

/* Drop the frames at index >= keep: their exits were skipped (longjmp, exit, a frame without
 * unwind tables); in trace mode they are recorded up to `tsc` (0: now), the exit that found
 * them out if there is one, so they end inside the frame that holds them. Their stopwatches are cancelled, not charged: when the skip happened is
 * unknown. An implicit event opened by one of them ends now. */
PG_HIDDEN void perfgroup__resync(struct pg_thread *t, uint32_t keep, uint64_t tsc)
{
    if (keep >= t->depth)
        return;
    struct pg_thread *latch = pg_latch_take();
    PG_TEST_POINT(8);
    perfgroup__trace_frames(t, keep, t->depth, tsc ? tsc : pg_clock_now());
    for (uint32_t i = keep; i < t->depth; i++) {
        struct pg_frame *f = &t->stack[i];
        for (unsigned j = 0; j < f->fn->ngroups; j++)
            if ((f->mask & (1u << j)) && t->g[f->fn->gid[j]].running == f->iter)
                t->g[f->fn->gid[j]].running = 0;
    }
    t->depth = keep;
    pg_cur_refresh(t);
    t->ov_resyncs++;
    if (t->event_open == PG_EV_IMPLICIT && t->implicit_frame >= keep)
        perfgroup__implicit_end(t, pg_clock_settled(t));
    pg_latch_drop(latch);
}

/* A recording opened or closed by the API (rec_file.c calls it after its lock is let go). */
static void recording_changed(int opened)
{
    if (opened)
        perfgroup__sampler_ensure(); /* it keeps the open events' slots (progress.c) */
    perfgroup__rekey();              /* trace mode has no keys (reentry.c) */
}

static const struct perfgroup_rec_host rec_host = {
    &perfgroup__refused, &perfgroup__clamped, recording_changed};

static void init_once_fn(void)
{
    /* the recorder is hosted from here on, a deferring copy's too: our fork handlers and
     * destructor, not its own */
    perfgroup__rec_host(&rec_host);
    if (perfgroup__owner_elect()) { /* a deferring copy starts nothing: owner.c */
        gate_update();
        return;
    }
    perfgroup__clock_init();
    perfgroup__cputime_init();
    perfgroup__implicit_init();
    perfgroup__lifecycle_init(); /* thread key, fork handlers, at_quick_exit */
    perfgroup__rec_init(); /* before the first definition, so the recorder sees them all */
    pthread_mutex_lock(&reg_lock);
    group_get_locked("top", PERFGROUP_KIND_TOP, 1); /* id 0 == PG_TOP_GROUP */
    pthread_mutex_unlock(&reg_lock);
    const char *text = perfgroup__getenv("PERFGROUP_TEXT");
    if (text && *text && perfgroup__text_init(text) == 0)
        perfgroup__text_on = 1;
    const char *acc = perfgroup__getenv("PERFGROUP_ACCOUNTING");
    if (acc && strcmp(acc, "adaptive") == 0)
        perfgroup__est_window = PG_EST_WINDOW; /* hot events estimate their starts */
    const char *en = perfgroup__getenv("PERFGROUP_ENABLE");
    if (en && strcmp(en, "0") == 0)
        atomic_store(&user_on, 0);
    gate_update();
    if (perfgroup__rec_mode_now() || perfgroup__rseq_cs_off < 0)
        perfgroup__sampler_ensure(); /* the open events' slots (progress.c); implicit events'
                                      * CPU without rseq (implicit.c): never from a hook */
}

PG_HIDDEN void perfgroup__init(void)
{
    pthread_once(&init_once, init_once_fn);
}

__attribute__((constructor(101))) static void perfgroup_ctor(void)
{
    perfgroup__init();
}

/* ---- public: events ---------------------------------------------------------------------- */

int perfgroup_event_begin(const char *name)
{
    struct pg_thread *t = self();
    if (!t)
        return -ENOTSUP;
    if (t->event_open == PG_EV_EXPLICIT)
        return -EALREADY;
    if (perfgroup__rec_mode_now())
        perfgroup__sampler_ensure(); /* a fork child's first event: its slot (progress.c) */
    perfgroup__alerts_deliver(t);
    struct pg_thread *latch = pg_latch_take(); /* a signal handler's hooks: refused */
    if (t->event_open == PG_EV_IMPLICIT)
        implicit_commit(t, pg_clock_settled(t), 1);
    PG_TEST_POINT(17);
    event_open(t, pg_clock_now(), PG_EV_EXPLICIT, name ? name : "event");
    pg_latch_drop(latch);
    return 0;
}

int perfgroup_event_end(void)
{
    struct pg_thread *t = perfgroup__tls;
    if (!t || t->event_open != PG_EV_EXPLICIT)
        return -ENOENT;
    struct pg_thread *latch = pg_latch_take();
    explicit_end(t);
    pg_latch_drop(latch);
    perfgroup__alerts_deliver(t);
    return 0;
}

/* Charge, or restart, the stopwatches of the live frames [0, depth) of iteration `iter`.
 * Only nested-loop calls walk the shadow stack: the hooks never do. */
static void bank_frames(struct pg_thread *t, uint32_t depth, uint64_t iter, uint64_t tsc)
{
    uint32_t cpu = pg_cpu_now();
    for (uint32_t i = 0; i < depth; i++) {
        struct pg_frame *f = &t->stack[i];
        if (f->mask && f->iter == iter)
            pg_charge_frame(t, f, tsc, cpu, 0); /* no activation yet: it goes on after */
    }
}

static void restart_frames(struct pg_thread *t, uint32_t depth, uint64_t old_iter, uint64_t tsc)
{
    uint32_t cpu = pg_cpu_now();
    for (uint32_t i = 0; i < depth && i < t->depth; i++) {
        struct pg_frame *f = &t->stack[i];
        if (!f->mask || f->iter != old_iter)
            continue;
        f->iter = t->iter;
        f->tsc = tsc;
        f->cpu = cpu;
        for (unsigned j = 0; j < f->fn->ngroups; j++)
            if (f->mask & (1u << j))
                t->g[f->fn->gid[j]].running = t->iter;
    }
}

/* Trace mode, a nested loop's end: the frames live around it are recorded as two pairs, the
 * first from their entry to here (it holds the nested loop), the second from here to their
 * exit, because restart_frames moves the start of those it restarts. */
static void split_frames(struct pg_thread *t, uint32_t depth, uint64_t tsc)
{
    if (depth > t->depth)
        depth = t->depth;
    if (!t->rec || perfgroup__rec_mode_now() != PGF_MODE_TRACE)
        return;
    perfgroup__trace_frames(t, 0, depth, tsc);
    for (uint32_t i = 0; i < depth; i++)
        t->stack[i].tsc = tsc; /* only the record reads a frame that is not restarted */
}

/*
 * A nested loop: the stopwatches running now are charged up to here (into the outer event,
 * committed now as its first part) and then become stale, so nothing the nested loop runs
 * is charged to them; at the nested loop's end they restart for the outer event's second
 * part. The groups that were running are charged their own time before and after the
 * nested loop and nothing for the nested part.
 */
void perfgroup_nested_loop_begin(void)
{
    struct pg_thread *t = self();
    if (!t)
        return;
    struct pg_thread *latch = pg_latch_take(); /* a signal handler's hooks: refused */
    uint64_t tsc = pg_clock_settled(t);
    PG_TEST_POINT(13);
    if (t->nest_depth < PG_NEST_MAX) {
        struct pg_nest *n = &t->nest[t->nest_depth];
        n->name = t->event_name;
        n->open = t->event_open;
        n->implicit_frame = t->implicit_frame;
        n->depth = t->depth;
        n->iter = t->iter;
    }
    t->nest_depth++;
    if (t->event_open != PG_EV_NONE) {
        bank_frames(t, t->depth, t->iter, tsc);
        PG_TEST_POINT(14);
        t->event_flags |= PGF_EVENT_F_NESTED;
        perfgroup__event_close(t, tsc); /* the outer event up to here; commit() bumps the iteration */
    } else {
        t->iter++;           /* every running stopwatch becomes stale */
    }
    pg_cur_refresh(t);
    pg_latch_drop(latch);
}

void perfgroup_nested_loop_end(void)
{
    struct pg_thread *t = perfgroup__tls;
    if (!t || t->nest_depth == 0)
        return;
    struct pg_thread *latch = pg_latch_take();
    uint64_t tsc = pg_clock_settled(t);
    perfgroup__event_close(t, tsc); /* an inner event left open */
    PG_TEST_POINT(15);
    t->nest_depth--;
    t->iter++;           /* what the nested loop started is stale too */
    if (t->nest_depth < PG_NEST_MAX) {
        struct pg_nest *n = &t->nest[t->nest_depth];
        if (n->open != PG_EV_NONE) {
            uint64_t now = pg_clock_now();
            if (n->open == PG_EV_IMPLICIT) { /* outside the hooks: a real begin, settled */
                int64_t c = perfgroup__cputime_read(t, &now);
                perfgroup__implicit_own(t, now, c);
            }
            event_open(t, now, (int)n->open, n->name);
            t->event_flags |= PGF_EVENT_F_NESTED;
            if (n->open == PG_EV_IMPLICIT)
                t->implicit_frame = n->implicit_frame;
            split_frames(t, n->depth, t->event_begin_tsc);
            PG_TEST_POINT(16);
            restart_frames(t, n->depth, n->iter, t->event_begin_tsc);
        } else {
            split_frames(t, n->depth, tsc);
        }
    }
    pg_cur_refresh(t); /* restarted frames are of the new iteration */
    pg_latch_drop(latch);
    perfgroup__alerts_deliver(t);
}

/* ---- public: control --------------------------------------------------------------------- */

int perfgroup_start(void)
{
    perfgroup__init();
    if (perfgroup__disabled())
        return -ENOTSUP;
    atomic_store(&user_on, 1);
    gate_update();
    return 0;
}

int perfgroup_stop(void)
{
    perfgroup__init();
    atomic_store(&user_on, 0);
    gate_update();
    return 0;
}

int perfgroup_is_active(void)
{
    return atomic_load(&perfgroup__gate) != PG_GATE_OFF;
}

int perfgroup_reset(void)
{
    perfgroup__init();
    perfgroup__lock_registry();
    atomic_fetch_add(&perfgroup__reset_epoch, 1);
    perfgroup__dead_clear_locked();
    atomic_store(&perfgroup__refused, 0);
    atomic_store(&perfgroup__clamped, 0);
    atomic_store(&perfgroup__estimated, 0);
    perfgroup__unlock_registry();
    return 0;
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
        perfgroup__key_locked(fn);
    modules_walk_locked(1);
}

/* The recording mode changed (rec_file.c, after its lock is let go): trace mode has no keys. */
PG_HIDDEN void perfgroup__rekey(void)
{
    pthread_mutex_lock(&reg_lock);
    rekey_locked();
    pthread_mutex_unlock(&reg_lock);
}

static int set_active(const char *name, int on)
{
    if (!name)
        return -EINVAL;
    perfgroup__init();
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

int perfgroup_group_activate(const char *name) { return set_active(name, 1); }
int perfgroup_group_deactivate(const char *name) { return set_active(name, 0); }

int perfgroup_thread_name(const char *name)
{
    if (!name)
        return -EINVAL;
    struct pg_thread *t = self();
    if (!t)
        return -ENOTSUP;
    snprintf(t->name, sizeof t->name, "%s", name);
    if (t->rec)
        perfgroup__rec_thread_name(t->rec, t->name);
    return 0;
}
