/* SPDX-License-Identifier: MIT */
/*
 * runtime/reentry.c — the keys of the inline re-entry check (include/perfgroup/abi.h,
 * "Re-entry without a call").
 *
 * A call whose function's active groups are all running on the thread changes nothing, and
 * most calls of a code base put into groups are such calls. The plugins emit, before the
 * enter hook, a test of the site's `key` against the thread's PERFGROUP_TLS_CUR: equal keys
 * and a call below the frame that set them skip both hooks, with no call at all.
 *
 * What a key means: one value per set of *active* group ids (interned here), with the
 * generation of the keys in its high half. A thread's key is that of the innermost frame that
 * started a stopwatch, set by the hooks when they push or pop one (hooks.c) and cleared by
 * whatever makes its stopwatches stale (a new iteration: an event's open or commit, a nested
 * loop, a resynchronisation: pg_cur_refresh). So a thread's key K says "every group of K's
 * set is running in this iteration", and a function of set K would be a re-entry.
 *
 * What changes a function's set or makes skipping wrong for everyone — a group's activation,
 * the recording mode (trace mode records every call: no key), the text trace — re-keys: a new
 * generation, every function's key recomputed, every site of every registered module
 * rewritten (core.c, perfgroup__rekey). A thread's key of the older generation then matches
 * no site, and its next hook call sets one of the new generation. A site that the walk does
 * not reach (a module past the registry's limit) keeps key 0, which never matches.
 *
 * State of a thread's key (the state table; writes by the thread itself only):
 *
 *   state    | event                                  | action                         | next
 *   ---------+----------------------------------------+--------------------------------+------
 *   OFF      | a frame pushed (a stopwatch started)   | key = fn's key, then sp        | ON
 *   (sp = 0) | anything else                          | -                              | OFF
 *   ON       | push (a deeper frame)                  | key = fn's key, then sp        | ON
 *            | exit of the top frame                  | sp = 0 first; after: the new   | ON/OFF
 *            |                                        | top frame's key if it is of    |
 *            |                                        | this iteration, else OFF       |
 *            | event open/commit, nested loop,        | refresh from the top frame     | ON/OFF
 *            | resynchronisation                      | (stale frames: OFF)            |
 *            | thread exit                            | sp = 0                         | OFF
 *            | re-key (another thread)                | nothing: the old key matches   | ON
 *            |                                        | no site any more               |
 *
 * Order of the two words, for a signal handler that reads them between two stores: sp = 0
 * first when turning off; the key before sp when turning on. A handler that sees a new key
 * and an old sp sees a key whose groups are running (they are started before the push).
 */
#include <string.h>

#include "internal.h"

PERFGROUP_ABI_EXPORT_ __thread struct perfgroup_cur PERFGROUP_TLS_CUR
    __attribute__((tls_model("initial-exec")));

/* Interned active-group sets, under the registry lock (core.c); ids from 1. */
struct keyset {
    uint32_t n, id;
    uint32_t gid[PG_SITE_GROUPS];
    struct keyset *next;
};
#define KEYSET_HASH 4096
static struct keyset *keysets[KEYSET_HASH];
static uint32_t nkeysets;
static uint32_t key_gen = 1; /* the keys' generation: their high half */

static uint32_t keyset_id(const uint32_t *gid, unsigned n)
{
    uint32_t h = 2166136261u;
    for (unsigned i = 0; i < n; i++)
        h = (h ^ gid[i]) * 16777619u;
    struct keyset **b = &keysets[h % KEYSET_HASH];
    for (struct keyset *k = *b; k; k = k->next)
        if (k->n == n && memcmp(k->gid, gid, n * sizeof *gid) == 0)
            return k->id;
    struct keyset *k = perfgroup__arena_alloc(sizeof *k);
    if (!k)
        return 0;
    k->n = n;
    memcpy(k->gid, gid, n * sizeof *gid);
    k->id = ++nkeysets;
    k->next = *b;
    *b = k;
    return k->id;
}

/* fn's key now (registry lock held): 0 if its calls must always reach the hooks. */
PG_HIDDEN uint64_t perfgroup__key_locked(const struct pg_func *fn)
{
    if ((fn->flags & PERFGROUP_SITE_F_ROOT) || perfgroup__text_on ||
        perfgroup__rec_mode_now() == PGF_MODE_TRACE)
        return 0;
    unsigned act = atomic_load_explicit(&fn->active_mask, memory_order_relaxed);
    uint32_t set[PG_SITE_GROUPS];
    unsigned n = 0;
    for (unsigned i = 0; i < fn->ngroups; i++) {
        if (!(act & (1u << i)))
            continue;
        unsigned j = n++;
        for (; j > 0 && set[j - 1] > fn->gid[i]; j--) /* sorted: one set, one key */
            set[j] = set[j - 1];
        set[j] = fn->gid[i];
    }
    uint32_t id = n ? keyset_id(set, n) : 0;
    return id ? (uint64_t)key_gen << 32 | id : 0;
}

/* A new generation (registry lock held): the caller recomputes every key after. */
PG_HIDDEN void perfgroup__key_generation_locked(void)
{
    key_gen++;
    if (key_gen == 0)
        key_gen = 1;
}
