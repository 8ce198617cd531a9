/* SPDX-License-Identifier: MIT */
/*
 * runtime/reentry.c — the keys of the inline re-entry check (include/perfgroup/abi.h,
 * "Re-entry without a call").
 *
 * A call whose function's active groups are all running on the thread changes nothing, and
 * most calls of a code base put into groups are such calls — also across groups: an add-on
 * calling back into the host's API while the host's group runs. The plugins emit, before the
 * enter hook, a test of the site's `key` against the thread's PERFGROUP_TLS_CUR: every active
 * group of the function running, and a call below the innermost frame that started one, skip
 * both hooks, with no call at all.
 *
 * Groups get a bit each, the first 63 groups that are active when a key is computed (bit 63
 * is never given: a key without it never matches). A site's key is the complement of its
 * function's active groups' bits, 0 if one of them has no bit or the function must always
 * call its hooks (a thread's root, trace mode, the text trace). A thread's mask has the bits
 * of the groups its frames started in the current iteration: set by the hooks when they push
 * a frame (the bits of the groups it started), cleared when they pop it, recomputed from the
 * shadow stack by whatever makes stopwatches stale (pg_cur_refresh: an event's open or
 * commit, a nested loop, a resynchronisation).
 *
 * What changes a function's groups or makes skipping wrong for everyone — a group's
 * activation, the recording mode (trace mode records every call), the text trace — re-keys
 * (registry.c, perfgroup__rekey): every function's key recomputed, every site of every registered
 * module rewritten. A thread's mask stays true (it says which groups run, not which are
 * active). A site that the walk does not reach (a module past the registry's limit) keeps key
 * 0, which never matches.
 *
 * State of a thread's re-entry state (the state table; writes by the thread itself only):
 *
 *   state    | event                                  | action                         | next
 *   ---------+----------------------------------------+--------------------------------+------
 *   OFF      | a frame pushed (stopwatches started)   | mask |= their bits, sp = its   | ON
 *   (sp = 0) | anything else                          | -                              | OFF
 *   ON       | push (a deeper frame)                  | mask |= its bits, sp = its     | ON
 *            | exit of the top frame                  | sp = 0 first; mask &= ~its     | ON/OFF
 *            |                                        | bits, sp = the frame below's   |
 *            |                                        | (no frame or no event: OFF)    |
 *            | event open/commit, nested loop,        | mask from the frames of this   | ON/OFF
 *            | resynchronisation                      | iteration, sp from the top     |
 *            | thread exit                            | sp = 0                         | OFF
 *            | re-key (another thread)                | nothing: the sites change      | ON
 *
 * Order of the two words, for a signal handler that reads them between two stores: sp = 0
 * first when turning off; the mask before sp when turning on. A handler that sees a new mask
 * and an old sp sees bits of groups that run (they are started before the push).
 */
#include "internal.h"

/* Lite frames' control words of a thread the runtime has not made hot: `left` is 0 forever
 * (no lite frame starts), nothing writes it (the ticker writes only threads' own, ticker.c). */
PG_HIDDEN struct perfgroup_lite perfgroup__lite_none;
PERFGROUP_ABI_EXPORT_ __thread struct perfgroup_cur PERFGROUP_TLS_CUR
    __attribute__((tls_model("initial-exec"))) = {0, 0, &perfgroup__lite_none, PERFGROUP_TOP_NONE};

static uint32_t nbits; /* bits given so far, < 64 */
PG_HIDDEN _Atomic(struct pg_group *) perfgroup__bit_group[64];

/* Group g's bit (given now if it has none and one is left), 0 if none. */
static uint64_t group_bit_locked(struct pg_group *g, int give)
{
    if (!g)
        return 0;
    if (!g->bit && give && nbits < 63) {
        g->bit = (uint8_t)(++nbits);
        atomic_store_explicit(&perfgroup__bit_group[g->bit - 1], g, memory_order_release);
    }
    return g->bit ? 1ull << (g->bit - 1) : 0;
}

/* fn's key and its groups' bits now, groups[i] being fn->gid[i]'s (registry lock held; hooks
 * read both, relaxed). */
PG_HIDDEN void perfgroup__key_locked(struct pg_func *fn, struct pg_group *const *groups)
{
    unsigned act = atomic_load_explicit(&fn->active_mask, memory_order_relaxed);
    uint64_t bits = 0;
    int keyed = !(fn->flags & PERFGROUP_SITE_F_ROOT) && !perfgroup__text_on &&
                perfgroup__rec_mode_now() != PGF_MODE_TRACE;
    for (unsigned i = 0; i < fn->ngroups; i++) {
        /* a group gets its bit when it is first active (inactive, it is never started) */
        uint64_t b = group_bit_locked(groups[i], (act & (1u << i)) != 0);
        __atomic_store_n(&fn->gbit[i], b, __ATOMIC_RELAXED);
        if (act & (1u << i)) {
            if (!b)
                keyed = 0; /* a group without a bit: its calls always reach the hook */
            bits |= b;
        }
    }
    __atomic_store_n(&fn->key, keyed ? ~bits : 0, __ATOMIC_RELAXED);
}
