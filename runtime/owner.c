/* SPDX-License-Identifier: MIT */
/*
 * runtime/owner.c — one runtime per process. Copies of the runtime can meet in one process:
 * libperfgroup.so and libperfgroup.a linked into the program or into an add-on (as a plugin
 * author may do), each add-on its own copy. Two running copies would each start a
 * perfgroup-cpu thread, each install fork and exit handlers, each write a recording (the
 * second named like an exec's, `.exec1`), and a copy in an add-on would leave its thread
 * running in unmapped code after the add-on's dlclose. So the first copy to start owns the
 * process; every later one defers to it: it starts nothing and forwards what reaches it
 * (the hooks and module registrations of code bound to it: an add-on loaded RTLD_LOCAL
 * binds to its own copy) to the owner.
 *
 * Each copy has a mark (hooks.c: its entry points and its state), found by the others and
 * by this election for its own copy through an ELF note of its object (`.note.perfgroup`,
 * type PG_NOTE_TYPE, its descriptor the mark's offset from itself: no symbol lookup, so a
 * copy in an executable that exports nothing, or in an add-on loaded RTLD_LOCAL, is found
 * alike), read in dl_iterate_phdr. This file names nothing of hooks.c: it sits low, under
 * the start-up that runs it (lifecycle.c).
 *
 *   copy                         | an owner found | none found
 *   -----------------------------+----------------+------------------------------------------
 *   the program's (static)       | defers         | owns
 *   libperfgroup.so              | defers         | owns (linked -z nodelete: never unmapped)
 *   in another shared object     | defers         | owns, and makes its object NODELETE (a
 *   (libperfgroup.a in an add-on)|                | dlclose then leaves it mapped: its thread
 *                                |                | and handlers never run in unmapped code);
 *                                |                | says so in one line on stderr
 *
 * The owner is never unloaded, so a deferring copy's forward pointer stays valid.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* The mark behind the perfgroup note of one loaded object, NULL if it has none (or one of
 * another ABI). */
static struct pg_mark *note_mark(const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        size_t al = ph->p_align == 8 ? 8 : 4;
        while ((size_t)(end - p) >= 12) {
            uint32_t namesz, descsz, type;
            memcpy(&namesz, p, 4);
            memcpy(&descsz, p + 4, 4);
            memcpy(&type, p + 8, 4);
            const char *name = p + 12;
            const char *desc = name + ((namesz + al - 1) & ~(al - 1));
            const char *next = desc + ((descsz + al - 1) & ~(al - 1));
            if (next > end || next <= p)
                break;
            if (type == PG_NOTE_TYPE && namesz == 10 && descsz == 8 &&
                memcmp(name, "perfgroup", 10) == 0) {
                int64_t off;
                memcpy(&off, desc, 8);
                struct pg_mark *m = (struct pg_mark *)(desc + off);
                if (m->magic == PG_MARK_MAGIC && m->abi == PERFGROUP_ABI_VERSION)
                    return m;
            }
            p = next;
        }
    }
    return NULL;
}

/* The loaded objects once: this copy's own mark (in the object that holds this code: hooks.c
 * put it there), its object's name ("" the program), and another copy's mark that owns the
 * process. Inside dl_iterate_phdr, whose lock keeps a dlclose from unmapping one meanwhile. */
struct owner_search {
    struct pg_mark *own;
    const char *own_name;
    const struct pg_mark *found;
};

static int search_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct owner_search *q = arg;
    struct pg_mark *m = note_mark(info);
    if (perfgroup__object_holds(info, (const void *)perfgroup__owner_elect)) {
        q->own = m;
        q->own_name = info->dlpi_name ? info->dlpi_name : "";
    } else if (m && !q->found && atomic_load(&m->state) == PG_MARK_OWNER) {
        q->found = m;
    }
    return 0;
}

/*
 * Start-up, before anything else of this copy runs: 1 if another copy owns the process (this
 * one then forwards to it: perfgroup__owner), 0 if this copy is the owner. `own`: this copy's
 * entry points (hooks.c's), which its mark offers from here on.
 */
PG_HIDDEN int perfgroup__owner_elect(void)
{
    struct owner_search q = {NULL, "", NULL};
    dl_iterate_phdr(search_cb, &q);
    if (q.found) {
        perfgroup__owner = &q.found->e;
        if (q.own)
            atomic_store(&q.own->state, PG_MARK_DEFERRED);
        return 1;
    }
    /* without hooks.c linked in (a program that only calls the API) this copy has no mark:
     * it owns the process, and no other copy can forward to it (it has no hooks to offer) */
    if (q.own)
        atomic_store(&q.own->state, PG_MARK_OWNER);
#ifndef PERFGROUP_RUNTIME_SHARED
    if (q.own_name[0]) {
        /* an add-on's copy owns the process: it must outlive the add-on's dlclose */
        void *h = dlopen(q.own_name, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
        fprintf(stderr, "perfgroup: %s carries its own runtime (libperfgroup.a) and runs this "
                "process's: it stays loaded until exit%s; link add-ons with -lperfgroup "
                "(docs/plugins.md)\n", q.own_name, h ? "" : " (could not keep it loaded)");
    }
#endif
    return 0;
}
