/* SPDX-License-Identifier: MIT */
/*
 * plugin-gcc/coroutines.cc — C++20 coroutines: which of the functions g++ makes of one
 * coroutine gets its hooks (the actor), and where a run of its body ends (before a symmetric
 * transfer to another coroutine).
 */
#include "plugin.h"

#include <string.h>

namespace perfgroup_gcc {

/* ---- C++20 coroutines -----------------------------------------------------------------------
 * g++ splits a coroutine `gen` when it finishes parsing it: `gen` itself becomes the ramp
 * (allocates the frame, constructs the promise, calls the actor once), the body moves into
 * the actor (gen.actor, artificial: run at the first call and at every resumption, from
 * wherever the coroutine handle is resumed) and a destroyer (gen.destroy, which calls the
 * actor to destroy a suspended frame). Hooks on the ramp would charge one pair per call and
 * none of the resumptions (a body doing 2e8 additions across its resumptions was charged
 * 0.011 ms). So the actor is instrumented as the coroutine itself (its groups, its name, one
 * site) and the ramp not at all: one pair per run of the body from one suspension to the
 * next, on the thread that resumes it, plus one when a suspended frame is destroyed. The
 * ramp's own work (frame allocation, promise construction) is its caller's, as in
 * perfgroup-clang, whose pairs are those of LLVM's ramp, .resume and .destroy clones. */
tree
coro_ramp_of (tree fndecl) /* the ramp of an actor or a destroyer */
{
  if (!coro_get_ramp_function || !coro_get_actor_function || !DECL_ARTIFICIAL (fndecl))
    return NULL_TREE;
  return coro_get_ramp_function (fndecl);
}

bool
is_coro_ramp (tree fndecl)
{
  return coro_get_actor_function && coro_get_actor_function (fndecl);
}

/* A coroutine's symmetric transfer: an await_suspend that returns another coroutine's handle
 * makes the actor end in __builtin_coro_resume (h) flagged [tail call], the other coroutine's
 * resumption. It is the other coroutine's, not this one's: the actor's pair ends just before
 * it (a flag set there skips the exit of the finally block on the way out), as
 * perfgroup-clang's ends before the resumption that CoroSplit makes a musttail call. The flag
 * is cleared: a call in a try/finally cannot be a sibling call, and expanding it as one is an
 * ICE (GCC 11 and 12 -O2, with -finstrument-functions alike: purge_dead_edges).
 * The transfer is then an ordinary call: a chain of transfers grows the stack, as it does at
 * -O0. */
struct coro_transfer_info {
  tree site, tok, done;
  unsigned n;
};

static tree
end_before_transfer (gimple_stmt_iterator *gsi, bool *handled, struct walk_stmt_info *wi)
{
  *handled = false;
  gcall *call = dyn_cast<gcall *> (gsi_stmt (*gsi));
  if (!call || !gimple_call_builtin_p (call, BUILT_IN_CORO_RESUME))
    return NULL_TREE;
  coro_transfer_info *info = (coro_transfer_info *) wi->info;
  gcall *leave = build_exit_call (info->site, info->tok, gimple_location (call));
  gimple_seq seq = NULL;
  add_exit (&seq, info->tok, leave);
  gimple_seq_add_stmt (&seq, gimple_build_assign (info->done, boolean_true_node));
  gsi_insert_seq_before (gsi, seq, GSI_SAME_STMT);
  gimple_call_set_tail (call, false);
  info->n++;
  return NULL_TREE;
}

/* Ends the run before each symmetric transfer of FNDECL, an actor whose body wrap_body is
 * about to wrap in SITE's pair with token TOK; *DONE is the flag that skips the finally
 * block's exit. Returns the number of transfers. */
unsigned
end_runs_before_transfers (tree fndecl, tree site, tree tok, tree *done)
{
  coro_transfer_info info = { site, tok, NULL_TREE, 0 };
  info.done = create_tmp_var (boolean_type_node, "perfgroup_transferred");
  struct walk_stmt_info wi;
  memset (&wi, 0, sizeof wi);
  wi.info = &info;
  gimple_seq inner = gimple_body (fndecl);
  walk_gimple_seq_mod (&inner, end_before_transfer, NULL, &wi);
  gimple_set_body (fndecl, inner);
  *done = info.done;
  return info.n;
}

} // namespace perfgroup_gcc
