/* SPDX-License-Identifier: MIT */
/*
 * runtime/gate.c — what the hooks read first, defined below everything that reads it: the
 * gate (off, on, or on through the slow path), the latch's thread-locals (internal.h), the
 * copy that owns the process when this one defers (owner.c elects it), and the process-wide
 * counters the snapshots and the file's header report (refused calls, clamped events,
 * estimated starts) with the reset epoch that zeroes them, and the list of thread entries.
 */
#include <stdatomic.h>
#include <stdio.h>

#include "internal.h"

PG_HIDDEN _Atomic uint32_t perfgroup__gate = PG_GATE_OFF;
PG_HIDDEN __thread struct pg_thread *perfgroup__tls __attribute__((tls_model("initial-exec")));
PG_HIDDEN __thread uint32_t perfgroup__tls_state __attribute__((tls_model("initial-exec")));
PG_HIDDEN _Atomic uint64_t perfgroup__refused;
PG_HIDDEN _Atomic uint64_t perfgroup__clamped;
/* PG_EST_WINDOW: adaptive (the default, with the ticker's coarse clock: ticker.c); 0: exact
 * (PERFGROUP_ACCOUNTING=exact, or no ticker) — docs/accounting.md, "Hot threads" */
PG_HIDDEN uint32_t perfgroup__est_window;
PG_HIDDEN _Atomic uint64_t perfgroup__estimated;
PG_HIDDEN _Atomic uint32_t perfgroup__reset_epoch = 1;
/* Every thread entry (lifecycle.c links them; the sampler and snapshots walk them). */
PG_HIDDEN _Atomic(struct pg_thread *) perfgroup__thread_list;
/* The copy that owns the process when this one defers to it (owner.c); NULL: this one. */
PG_HIDDEN const struct pg_entries *perfgroup__owner;

static _Atomic int user_on = 1;     /* perfgroup_start / perfgroup_stop */
static _Atomic int disabled;        /* ABI mismatch: off for good */

/* ---- the gate -------------------------------------------------------------------------------- */

PG_HIDDEN void perfgroup__gate_update(void)
{
    uint32_t g = PG_GATE_OFF;
    if (perfgroup__owner) /* another copy owns the process: every hook forwards (owner.c) */
        g = PG_GATE_SPECIAL;
    else if (!atomic_load(&disabled) && atomic_load(&user_on))
        g = perfgroup__text_on || !pg_clocks_fast() ? PG_GATE_SPECIAL : PG_GATE_ON;
    atomic_store(&perfgroup__gate, g);
}

PG_HIDDEN void perfgroup__disable(const char *why)
{
    int was = atomic_exchange(&disabled, 1);
    if (!was)
        fprintf(stderr, "perfgroup: %s; the runtime stays off\n", why);
    perfgroup__gate_update();
}

PG_HIDDEN int perfgroup__disabled(void) { return atomic_load(&disabled) || perfgroup__owner; }

/* perfgroup_start (1) / perfgroup_stop (0), and PERFGROUP_ENABLE=0 at start-up. */
PG_HIDDEN void perfgroup__gate_user(int on)
{
    atomic_store(&user_on, on);
    perfgroup__gate_update();
}
