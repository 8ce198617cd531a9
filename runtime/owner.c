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
 * Each copy has a mark, found by the others through an ELF note of its object
 * (`.note.perfgroup`, type PG_NOTE_TYPE, its descriptor the mark's offset from itself: no
 * symbol lookup, so a copy in an executable that exports nothing, or in an add-on loaded
 * RTLD_LOCAL, is found alike), read in dl_iterate_phdr.
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

#define PG_MARK_MAGIC 0x4b524d47u /* "GMRK" */
#define PG_NOTE_TYPE 0x31524750u  /* "PGR1" */
enum { MARK_NONE = 0, MARK_OWNER = 1, MARK_DEFERRED = 2 };

/* The owner's entry points as its copy has them: the layout every copy of this ABI reads. */
struct pg_mark {
    uint32_t magic;
    uint32_t abi;                 /* PERFGROUP_ABI_VERSION of the copy */
    _Atomic uint32_t state;       /* MARK_* */
    uint32_t pad;
    struct pg_entries e;          /* set before state says MARK_OWNER */
};

/* External (hidden) linkage, not static: the other copies read it through the note, which
 * the compiler does not see (a top-level asm's symbol is no use of it). A static mark whose
 * address never escaped let clang 19 prove no load of this TU reads its state and delete
 * the stores to it: every copy then found no owner and each recorded (addons.*.static-shared
 * with a clang-19-built runtime). */
PG_HIDDEN struct pg_mark perfgroup__mark = {PG_MARK_MAGIC, PERFGROUP_ABI_VERSION, MARK_NONE, 0,
                                            {NULL, NULL, NULL}};

/* The note: namesz, descsz, type, "perfgroup\0" padded to 4, then the mark's offset from the
 * descriptor (a link-time constant: no relocation at load). */
__asm__(".pushsection .note.perfgroup,\"a\",%note\n"
        ".balign 4\n"
        ".long 10\n"
        ".long 8\n"
        ".long 0x31524750\n"
        ".asciz \"perfgroup\"\n"
        ".balign 4\n"
        ".quad perfgroup__mark - .\n"
        ".popsection\n");

struct owner_search {
    const struct pg_mark *found;
};

static int search_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct owner_search *q = arg;
    for (int i = 0; i < info->dlpi_phnum && !q->found; i++) {
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
                const struct pg_mark *m = (const struct pg_mark *)(desc + off);
                if (m != &perfgroup__mark && m->magic == PG_MARK_MAGIC &&
                    m->abi == PERFGROUP_ABI_VERSION &&
                    atomic_load(&((struct pg_mark *)m)->state) == MARK_OWNER) {
                    q->found = m;
                    break;
                }
            }
            p = next;
        }
    }
    return q->found != NULL;
}

#ifndef PERFGROUP_RUNTIME_SHARED
struct object_search {
    const void *addr;
    const char *name; /* dlpi_name of the object holding addr: "" the program */
};

static int object_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct object_search *q = arg;
    if (!perfgroup__object_holds(info, q->addr))
        return 0;
    q->name = info->dlpi_name ? info->dlpi_name : "";
    return 1;
}

#endif

/* The shared object this copy is in, "" for the program or libperfgroup.so itself. The name
 * is the loader's, valid while the object is loaded (this copy runs in it). */
static const char *own_object(void)
{
#ifdef PERFGROUP_RUNTIME_SHARED
    return "";
#else
    struct object_search q = {&perfgroup__mark, ""};
    dl_iterate_phdr(object_cb, &q);
    return q.name;
#endif
}

/*
 * Start-up, before anything else of this copy runs: 1 if another copy owns the process (this
 * one then forwards to it: perfgroup__owner), 0 if this copy is the owner. `own`: this copy's
 * entry points (hooks.c's), which its mark offers from here on.
 */
PG_HIDDEN int perfgroup__owner_elect(const struct pg_entries *own)
{
    struct owner_search q = {NULL};
    dl_iterate_phdr(search_cb, &q);
    perfgroup__mark.e = *own; /* before the state a searching copy reads (seq_cst store) */
    if (q.found) {
        perfgroup__owner = &q.found->e;
        atomic_store(&perfgroup__mark.state, MARK_DEFERRED);
        return 1;
    }
    atomic_store(&perfgroup__mark.state, MARK_OWNER);
    const char *obj = own_object();
    if (obj[0]) {
        /* an add-on's copy owns the process: it must outlive the add-on's dlclose */
        void *h = dlopen(obj, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
        fprintf(stderr, "perfgroup: %s carries its own runtime (libperfgroup.a) and runs this "
                "process's: it stays loaded until exit%s; link add-ons with -lperfgroup "
                "(docs/plugins.md)\n", obj, h ? "" : " (could not keep it loaded)");
    }
    return 0;
}
