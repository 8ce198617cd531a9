/* SPDX-License-Identifier: MIT */
/*
 * runtime/control.c — the public control: perfgroup_start / _stop / _is_active / _reset,
 * perfgroup_group_activate / _deactivate, perfgroup_thread_name. The gate they set is gate.c's, start-up
 * lifecycle.c's, the groups registry.c's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>

#include "internal.h"

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
    perfgroup__dead_lock();
    atomic_fetch_add(&perfgroup__reset_epoch, 1);
    perfgroup__dead_clear_locked();
    atomic_store(&perfgroup__refused, 0);
    atomic_store(&perfgroup__clamped, 0);
    atomic_store(&perfgroup__estimated, 0);
    perfgroup__dead_unlock();
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

/* ---- public: thread names ---------------------------------------------------------------- */

int perfgroup_thread_name(const char *name)
{
    if (!name)
        return -EINVAL;
    struct pg_thread *t = pg_self();
    if (!t)
        return -ENOTSUP;
    snprintf(t->name, sizeof t->name, "%s", name);
    if (t->rec)
        perfgroup__rec_thread_name(t->rec, t->name);
    return 0;
}
