/* SPDX-License-Identifier: MIT */
/*
 * runtime/control.c — the runtime's start-up and switches: the gate (what the hooks do,
 * read first on every hook call), the process-wide counters, the latch's thread-locals,
 * start-up (once: from the constructor, or the first call that needs it), the recorder's
 * host (perfgroup__rec_host), module registration's public entry, and the public control
 * (perfgroup_start / _stop / _is_active / _reset, perfgroup_group_activate / _deactivate).
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

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

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
        perfgroup__gate_update();
        return;
    }
    perfgroup__clock_init();
    perfgroup__cputime_init();
    perfgroup__implicit_init();
    perfgroup__lifecycle_init(); /* thread key, fork handlers, at_quick_exit */
    perfgroup__rec_init(); /* before the first definition, so the recorder sees them all */
    perfgroup__registry_init(); /* the top group, id 0 == PG_TOP_GROUP */
    const char *text = perfgroup__getenv("PERFGROUP_TEXT");
    if (text && *text && perfgroup__text_init(text) == 0)
        perfgroup__text_on = 1;
    const char *acc = perfgroup__getenv("PERFGROUP_ACCOUNTING");
    if (acc && strcmp(acc, "adaptive") == 0)
        perfgroup__est_window = PG_EST_WINDOW; /* hot events estimate their starts */
    const char *en = perfgroup__getenv("PERFGROUP_ENABLE");
    if (en && strcmp(en, "0") == 0)
        perfgroup__gate_user(0);
    perfgroup__gate_update();
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

/* ---- public: module registration ----------------------------------------------------- */

void PERFGROUP_MODULE_REGISTER(uint32_t abi_version, struct perfgroup_site *start,
                               struct perfgroup_site *stop)
{
    perfgroup__init();
    if (perfgroup__owner) { /* registered with the copy that owns the process (owner.c) */
        perfgroup__forward_register(abi_version, start, stop);
        return;
    }
    perfgroup__register_module(abi_version, start, stop); /* registry.c */
}

/* This copy's own registration, for the mark another copy forwards through (owner.c). */
extern __typeof__(perfgroup__register_own) perfgroup__register_own
    __attribute__((alias(PERFGROUP_MODULE_REGISTER_NAME)));

/* ---- public: control --------------------------------------------------------------------- */

int perfgroup_start(void)
{
    perfgroup__init();
    if (perfgroup__disabled())
        return -ENOTSUP;
    perfgroup__gate_user(1);
    return 0;
}

int perfgroup_stop(void)
{
    perfgroup__init();
    perfgroup__gate_user(0);
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

static int set_active(const char *name, int on)
{
    if (!name)
        return -EINVAL;
    perfgroup__init();
    return perfgroup__group_set_active(name, on); /* registry.c */
}

int perfgroup_group_activate(const char *name) { return set_active(name, 1); }
int perfgroup_group_deactivate(const char *name) { return set_active(name, 0); }
