/* SPDX-License-Identifier: MIT */
/*
 * plugin-gcc/threads.cc — the threads a function's group reaches beyond its own calls: the
 * start routines it passes to pthread_create/thrd_create (thread roots, flagged in their
 * sites) and the OpenMP regions the threads of a team run (charged to its group).
 */
#include "plugin.h"

#include <string.h>

namespace perfgroup_gcc {

/* ---- Thread roots -------------------------------------------------------------------------
 * A function whose address this unit passes as the start routine of pthread_create (3rd
 * argument) or thrd_create (2nd) is a thread's root: its site gets PERFGROUP_SITE_F_ROOT and
 * the runtime opens no implicit event for it as a thread's outermost frame (docs/accounting.md;
 * `main` the runtime knows by name). Functions are lowered one by one, so the start routine's
 * site may exist before the call is seen: its flags are patched (sites are output at the end
 * of the unit). A start routine passed through a variable is not seen. */
static vec<tree> root_fns;              /* start routines seen in calls */
static vec<std::pair<tree, tree>> sites; /* (fndecl, site) built so far */

static void
mark_site_root (tree site)
{
  constructor_elt *e = &(*CONSTRUCTOR_ELTS (DECL_INITIAL (site)))[1];
  e->value = build_int_cst (short_unsigned_type_node,
                            TREE_INT_CST_LOW (e->value) | PERFGROUP_SITE_F_ROOT);
}

static tree
find_thread_create (gimple_stmt_iterator *gsi, bool *handled, struct walk_stmt_info *)
{
  *handled = false;
  gcall *call = dyn_cast<gcall *> (gsi_stmt (*gsi));
  tree callee = call ? gimple_call_fndecl (call) : NULL_TREE;
  if (!callee || !DECL_NAME (callee))
    return NULL_TREE;
  const char *name = IDENTIFIER_POINTER (DECL_NAME (callee));
  unsigned arg = !strcmp (name, "pthread_create") ? 2 : !strcmp (name, "thrd_create") ? 1 : 0;
  if (!arg || gimple_call_num_args (call) <= arg)
    return NULL_TREE;
  tree a = gimple_call_arg (call, arg);
  STRIP_NOPS (a);
  if (TREE_CODE (a) != ADDR_EXPR || TREE_CODE (TREE_OPERAND (a, 0)) != FUNCTION_DECL)
    return NULL_TREE;
  tree fn = TREE_OPERAND (a, 0);
  if (root_fns.contains (fn))
    return NULL_TREE;
  root_fns.safe_push (fn);
  for (auto &fs : sites)
    if (fs.first == fn)
      mark_site_root (fs.second);
  if (verbose)
    inform (gimple_location (call), PGTEXT_NOTE_STARTS_THREAD, asm_name (fn));
  return NULL_TREE;
}

/* Notes the start routines FUN passes to pthread_create/thrd_create (before FUN is wrapped:
 * every function is looked at, instrumented or not). */
void
find_thread_starts (function *fun)
{
  struct walk_stmt_info wi;
  memset (&wi, 0, sizeof wi);
  walk_gimple_seq (gimple_body (fun->decl), find_thread_create, NULL, &wi);
}

/* FNDECL got SITE: flagged now if FNDECL is known to start a thread, else when it is. */
void
record_site (tree fndecl, tree site)
{
  sites.safe_push (std::make_pair (fndecl, site));
  if (root_fns.contains (fndecl))
    mark_site_root (site);
}

bool
is_thread_root (tree fndecl)
{
  return root_fns.contains (fndecl);
}

/* ---- OpenMP regions ---------------------------------------------------------------------------
 * The body of each `#pragma omp parallel` becomes a child function (work._omp_fn.0)
 * that every thread of the team runs; it is compiler-generated, so never instrumented itself.
 * So do a `task`'s and a `taskloop`'s (run by whichever thread of the team takes the task:
 * GOMP_task, GOMP_taskloop) and a host `teams` construct's (GOMP_teams_reg). To charge the
 * threads that run them to the enclosing function's group, the region's body gets an
 * enter/exit pair of the enclosing function's site, inside the region: omplower has run
 * (this pass is before "lower"), ompexp moves the body, hooks and token with it, into the
 * child. On the thread that started the region it nests inside the function's own pair
 * (re-entry of the same group). No exception leaves a region (OpenMP makes it terminate), so
 * the exit goes before the region's closing GIMPLE_OMP_RETURN. A `target` region (offloaded,
 * or its host fallback) is not charged; a `taskwait` with dependences (a body-less
 * GIMPLE_OMP_TASK) has no body to charge. */
static tree
find_omp_parallel (gimple_stmt_iterator *gsi, bool *handled, struct walk_stmt_info *wi)
{
  gimple *g = gsi_stmt (*gsi);
  bool region = gimple_code (g) == GIMPLE_OMP_PARALLEL
                || (gimple_code (g) == GIMPLE_OMP_TASK && !gimple_omp_task_taskwait_p (g))
                || (gimple_code (g) == GIMPLE_OMP_TEAMS
                    && gimple_omp_teams_host (as_a<gomp_teams *> (g)));
  if (region)
    ((vec<gimple *> *) wi->info)->safe_push (g);
  *handled = false; /* walk into the region too: nested regions */
  return NULL_TREE;
}

unsigned
charge_omp_regions (function *fun, tree site)
{
  auto_vec<gimple *> regions;
  struct walk_stmt_info wi;
  memset (&wi, 0, sizeof wi);
  wi.info = &regions;
  walk_gimple_seq (gimple_body (fun->decl), find_omp_parallel, NULL, &wi);
  unsigned i;
  gimple *region;
  FOR_EACH_VEC_ELT (regions, i, region)
    {
      gimple_seq *body = gimple_omp_body_ptr (region);
      while (gimple_seq_singleton_p (*body) && gimple_code (gimple_seq_first_stmt (*body)) == GIMPLE_BIND)
        body = gimple_bind_body_ptr (as_a<gbind *> (gimple_seq_first_stmt (*body)));
      gimple *last = gimple_seq_last_stmt (*body);
      if (!last || gimple_code (last) != GIMPLE_OMP_RETURN)
        continue; /* not the shape omplower makes: leave it alone */
      tree tok = create_tmp_var (uint64_type_node, "perfgroup_omp_tok");
      gcall *enter, *leave;
      build_hook_calls (site, tok, gimple_location (region), gimple_location (region), &enter,
                        &leave);
      gimple_seq pre = NULL, post = NULL;
      /* no inline check: control flow at the region's start breaks ompexp (an ICE in
       * expand_omp_taskreg), and a region's start is no frequent call */
      add_enter (&pre, site, tok, enter, false);
      add_exit (&post, tok, leave);
      /* before the closing GIMPLE_OMP_RETURN, and before a task's GIMPLE_OMP_CONTINUE that
       * precedes it (the end of the part ompexp moves into the child) */
      gimple_stmt_iterator gsi = gsi_last (*body);
      gimple_stmt_iterator prev = gsi;
      gsi_prev (&prev);
      if (!gsi_end_p (prev) && gimple_code (gsi_stmt (prev)) == GIMPLE_OMP_CONTINUE)
        gsi = prev;
      gsi_insert_seq_before (&gsi, post, GSI_SAME_STMT);
      gsi = gsi_start (*body);
      gsi_insert_seq_before (&gsi, pre, GSI_SAME_STMT);
    }
  return regions.length ();
}

} // namespace perfgroup_gcc
