/* SPDX-License-Identifier: MIT */
/*
 * plugin-gcc/elide.cc — call-graph elision: takes the hooks off again where a group can only be
 * re-entered.
 *
 * A call inside a running group changes nothing (the group's stopwatch already runs): hooks
 * pay only where a group can be *entered*. Once every function of the unit has been wrapped
 * and lowered (the pass runs function by function, before the call graph is complete),
 * PLUGIN_ALL_IPA_PASSES_START sees the whole unit's call graph, before SSA and before any
 * inlining, at every -O level. A wrapped function loses its hooks again (enter, every exit,
 * the site) when it can only be a re-entry:
 *   - not externally visible (static, anonymous namespace), no alias, not `used`, not virtual;
 *   - its address is never taken: only direct calls reach it (a callback, a function-pointer
 *     table or a vtable could call it from anywhere);
 *   - it holds no OpenMP region (the region's hooks charge the threads that run it);
 *   - it has at least one caller, and every caller in the unit is instrumented with the same
 *     attribute and file groups, and neither begins an event or a nested loop (calls
 *     perfgroup_event_begin or perfgroup_nested_loop_begin: what it calls next may run in a new
 *     event, where it is an entry again) nor is `main` (a thread's root opens no implicit
 *     event, its callees do).
 * The verdict is the greatest fixed point of "every caller is in the same groups, hooked or
 * elided": an elided caller itself only runs inside its group, so a caller's own elision never
 * changes its callees' verdict and one round over the call graph reaches the fixed point.
 * Nothing beyond the unit is assumed (with -flto, this runs per unit before streaming).
 * all-functions keeps every pair (the profiling mode: trace mode's full call tree).
 * perfgroup-clang decides with the same rules and the same verbose wording
 * (common/plugin_texts.h).
 */
#include "plugin.h"

#include <string.h>

namespace perfgroup_gcc {

/* Takes the enter call, every exit call (each return path and the cleanup landing pad the
 * finally became), the inline re-entry check and the site out of an already lowered body
 * (not in SSA form yet: this runs before the IPA passes). The check's and the exits'
 * conditions become false, their loads go: nothing of the pair is left, at -O0 too. */
static void
remove_hooks (cgraph_node *node, tree site)
{
  function *fun = DECL_STRUCT_FUNCTION (node->decl);
  push_cfun (fun);
  basic_block bb;
  FOR_EACH_BB_FN (bb, fun)
    for (gimple_stmt_iterator gsi = gsi_start_bb (bb); !gsi_end_p (gsi);)
      {
        gimple *stmt = gsi_stmt (gsi);
        if (gcond *c = dyn_cast<gcond *> (stmt))
          if (is_our_tmp (gimple_cond_lhs (c), true))
            gimple_cond_make_false (c);
        if (is_hook_call_of (stmt, site) || is_our_store (stmt)
            || (gimple_has_lhs (stmt) && is_our_tmp (gimple_get_lhs (stmt), false)))
          gsi_remove (&gsi, true);
        else
          gsi_next (&gsi);
      }
  cgraph_edge::rebuild_edges (); /* drops the edges to the hooks and the site's references */
  pop_cfun ();
  if (varpool_node *v = varpool_node::get (site))
    v->remove ();
}

static bool
calls_named (cgraph_node *node, const char *a, const char *b)
{
  for (cgraph_edge *e = node->callees; e; e = e->next_callee)
    {
      tree d = e->callee->decl;
      const char *n = DECL_NAME (d) ? IDENTIFIER_POINTER (DECL_NAME (d)) : "";
      if (!strcmp (n, a) || !strcmp (n, b))
        return true;
    }
  return false;
}

/* May NODE be called from outside the unit's direct calls? */
static bool
is_entry_point (cgraph_node *node)
{
  tree decl = node->decl;
  if (TREE_PUBLIC (decl) || DECL_EXTERNAL (decl) || node->address_taken || DECL_PRESERVE_P (decl)
      || DECL_VIRTUAL_P (decl) || DECL_STATIC_CONSTRUCTOR (decl) || DECL_STATIC_DESTRUCTOR (decl))
    return true;
  ipa_ref *ref;
  for (unsigned i = 0; node->iterate_referring (i, ref); i++)
    if (ref->use == IPA_REF_ADDR || ref->use == IPA_REF_ALIAS)
      return true;
  return false;
}

/* The functions that can run at all: reachable by direct calls from an entry point. GCC keeps
 * (and this pass wrapped) unused static functions at -O0, clang never emits them; a caller
 * that never runs must not decide anything, so both plugins see the same callers. */
static hash_set<cgraph_node *> *reachable;

static void
find_reachable (void)
{
  reachable = new hash_set<cgraph_node *>;
  auto_vec<cgraph_node *> todo;
  cgraph_node *node;
  FOR_EACH_FUNCTION (node)
    if (is_entry_point (node))
      {
        reachable->add (node);
        todo.safe_push (node);
      }
  while (!todo.is_empty ())
    {
      node = todo.pop ();
      for (cgraph_edge *e = node->callees; e; e = e->next_callee)
        if (!reachable->add (e->callee))
          todo.safe_push (e->callee);
    }
}

static vec<hooked_fn> hooked; /* every function the pass wrapped, in order */

void
record_hooked (const hooked_fn &fn)
{
  hooked.safe_push (fn);
}

/* Why FN (an entry of `hooked`) keeps its hooks, or NULL if it is only ever a re-entry.
 * *WHO is the caller the reason names (the first by name, so both plugins name the same). */
static const char *
keep_reason (const hooked_fn &fn, hash_map<tree, unsigned> &index, const char **who)
{
  tree decl = fn.decl;
  *who = NULL;
  cgraph_node *node = cgraph_node::get (decl);
  if (!node)
    return "not in the call graph";
  if (fn.coro)
    return PGTEXT_KEEP_COROUTINE;
  if (TREE_PUBLIC (decl) || DECL_EXTERNAL (decl))
    return PGTEXT_KEEP_VISIBLE;
  if (is_entry_point (node))
    return PGTEXT_KEEP_ADDRESS_TAKEN;
  if (fn.omp)
    return PGTEXT_KEEP_OPENMP;
  bool called = false;
  for (cgraph_edge *e = node->callers; e && !called; e = e->next_caller)
    called = reachable->contains (e->caller);
  if (!called)
    return PGTEXT_KEEP_NO_CALLER;
  static const char *const why[] = {
    NULL,
    PGTEXT_KEEP_CALLER_BEGINS,
    PGTEXT_KEEP_CALLER_OTHER_GROUPS,
    PGTEXT_KEEP_CALLER_NOT_INSTRUMENTED,
  };
  unsigned worst = 0;
  for (cgraph_edge *e = node->callers; e; e = e->next_caller)
    {
      if (!reachable->contains (e->caller))
        continue;
      tree c = e->caller->decl;
      const char *name = asm_name (c);
      unsigned *i = index.get (c);
      unsigned level = 0;
      if (!i)
        level = 3;
      else if (strcmp (hooked[*i].attr, fn.attr) || strcmp (hooked[*i].file, fn.file))
        level = 2;
      else if (!strcmp (name, "main") || is_thread_root (c)
               || calls_named (e->caller, "perfgroup_event_begin", "perfgroup_nested_loop_begin"))
        level = 1;
      if (level > worst || (level && level == worst && strcmp (name, *who) < 0))
        {
          worst = level;
          *who = name;
        }
    }
  return why[worst];
}

void
elide_reentries (void *, void *)
{
  if (in_lto_p || hooked.is_empty ())
    return;
  hash_map<tree, unsigned> index;
  unsigned i;
  hooked_fn *fn;
  FOR_EACH_VEC_ELT (hooked, i, fn)
    index.put (fn->decl, i);
  find_reachable ();
  auto_vec<unsigned> elide;
  FOR_EACH_VEC_ELT (hooked, i, fn)
    {
      const char *who = NULL;
      const char *why = all_functions ? PGTEXT_KEEP_ALL_FUNCTIONS : keep_reason (*fn, index, &who);
      if (!why)
        elide.safe_push (i);
      if (!verbose)
        continue;
      location_t loc = DECL_SOURCE_LOCATION (fn->shown);
      if (!why)
        inform (loc, PGTEXT_NOTE_ELIDED, asm_name (fn->shown));
      else
        {
          pretty_printer pp;
          pp_printf (&pp, why, who ? who : "");
          inform (loc, PGTEXT_NOTE_KEEPS, asm_name (fn->shown), pp_formatted_text (&pp));
        }
    }
  unsigned *k;
  FOR_EACH_VEC_ELT (elide, i, k)
    if (cgraph_node *node = cgraph_node::get (hooked[*k].decl))
      remove_hooks (node, hooked[*k].site);
  hooked.truncate (0);
  delete reachable;
  reachable = NULL;
}

} // namespace perfgroup_gcc
