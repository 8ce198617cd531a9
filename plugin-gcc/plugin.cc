/* SPDX-License-Identifier: MIT */
/*
 * plugin-gcc/plugin.cc — the GCC plugin perfgroup.so: puts functions in performance groups and
 * wraps each one in an enter/exit hook pair that calls the perfgroup runtime. This file is the
 * plugin's entry (plugin_init: the callbacks and the pass, in the order GCC runs them), the
 * pass's step for one function, and the __PERFGROUP__ macro. The rest, one concern a file
 * (plugin.h declares what they share; perfgroup-clang has a file of the same name for each):
 *
 *   options.cc      -fplugin-arg-perfgroup-* (and the option list)
 *   attribute.cc    perf_group("g") in its three spellings; "the definition wins"
 *   select.cc       which functions, which groups: file groups (map=, default=), skip reasons
 *   instrument.cc   the site, the hook pair around the body (before/after listing), the module
 *                   constructor
 *   threads.cc      thread roots (pthread_create/thrd_create start routines), OpenMP regions
 *   coroutines.cc   C++20 coroutines: the actor gets the hooks; runs end before a transfer
 *   elide.cc        call-graph elision: no hooks where a group can only be re-entered
 *   gcc-compat.h    every GCC header and every GCC-version #if
 *   ../common/plugin_texts.h   the texts both plugins print word for word
 *
 * When things run, for one translation unit:
 *   plugin_init                 options (errors: the compile fails), then the callbacks:
 *   PLUGIN_ATTRIBUTES           the attribute
 *   PLUGIN_PRAGMAS, START_UNIT  __PERFGROUP__
 *   the pass "perfgroup"        before "lower", once per function: wraps the body
 *   PLUGIN_ALL_IPA_PASSES_START the whole unit's call graph: elision
 *
 * ---- Debugging recipe ------------------------------------------------------------------------
 *   gcc -fplugin=perfgroup -fplugin-arg-perfgroup-verbose -c x.c        decisions, one note each
 *   gcc -fplugin=perfgroup -fdump-tree-all -c x.c     x.c.NNNt.perfgroup: the body right after
 *       wrapping; the later dumps show how lower/eh/inline treat the pair. (-fdump-tree-perfgroup
 *       alone is rejected: GCC parses dump options before plugins register their passes.)
 *   objdump -s -j perfgroup_sites x.o; readelf -r x.o                    the site array (40 B each)
 *   gcc -E -dM -fplugin=perfgroup x.c | grep PERFGROUP                  the predefined macro
 *   Crash in cc1: gcc -fplugin=... -c x.c -wrapper gdb,--args
 */
#include "plugin.h"

__attribute__ ((visibility ("default"))) int plugin_is_GPL_compatible;

namespace perfgroup_gcc {

static const char plugin_name[] = "perfgroup";

/* ---- The pass -------------------------------------------------------------------------- */

/* The pass, once per function: choose (select.cc, attribute.cc), wrap (instrument.cc), and
 * remember for elision (elide.cc). */
static unsigned int
instrument_function (function *fun)
{
  tree fndecl = fun->decl;
  if (!gimple_body (fndecl))
    return 0;
  add_landings (fun);
  find_thread_starts (fun);
  /* A coroutine: its groups, name and verdict are those of the function the user wrote (the
   * ramp), its hooks go on the actor. */
  tree ramp = coro_ramp_of (fndecl);
  if (ramp && coro_get_actor_function (ramp) != fndecl)
    return 0; /* the destroyer: it calls the actor */
  if (!ramp && is_coro_ramp (fndecl))
    return 0;
  tree shown = ramp ? ramp : fndecl;
  const char *attr = attribute_group (shown);
  const char *file = file_group (shown);
  if (!attr && !file)
    return 0;
  if (const char *why = skip_reason (shown))
    {
      if (verbose)
        inform (DECL_SOURCE_LOCATION (shown), PGTEXT_NOTE_SKIPPED, asm_name (shown), why);
      return 0;
    }
  if (verbose)
    inform (DECL_SOURCE_LOCATION (shown), PGTEXT_NOTE_INSTRUMENTING, asm_name (shown),
            attr ? attr : "", file ? file : "");
  if (verbose && !strcmp (asm_name (shown), "main"))
    inform (DECL_SOURCE_LOCATION (shown), PGTEXT_NOTE_MAIN, asm_name (shown));
  build_abi_trees ();
  tree site = build_site (shown, attr, file);
  record_site (shown, site);
  bool omp = charge_omp_regions (fun, site) > 0;
  wrap_body (fun, site, ramp != NULL_TREE ? end_runs_before_transfers : NULL);
  emit_module_constructor ();
  hooked_fn h = { fndecl, site, shown, xstrdup (attr ? attr : ""), xstrdup (file ? file : ""),
                  omp, ramp != NULL_TREE };
  record_hooked (h);
  return 0;
}

namespace {

const pass_data perfgroup_pass_data = {
  GIMPLE_PASS,
  "perfgroup",   /* dump file x.c.NNNt.perfgroup under -fdump-tree-all */
  OPTGROUP_NONE,
  TV_NONE,
  PROP_gimple_any,
  0, 0, 0, 0,
};

class perfgroup_pass : public gimple_opt_pass
{
public:
  perfgroup_pass (gcc::context *ctxt) : gimple_opt_pass (perfgroup_pass_data, ctxt) {}
  /* Bodies reaching lto1 were instrumented (or not) when they were compiled. */
  bool gate (function *) final override { return !in_lto_p; }
  unsigned int execute (function *fun) final override { return instrument_function (fun); }
};

} // namespace

/* ---- __PERFGROUP__ --------------------------------------------------------------------- */

/* PLUGIN_PRAGMAS runs once the C-family preprocessor exists, in -c, -E and the first half of
 * -save-temps alike (cpp_define from plugin_init crashes cc1; PLUGIN_START_UNIT misses -E).
 * Already preprocessed input (-fpreprocessed) had the macro expanded when it was made.
 *
 * -g3 (macro debug info): cpplib reports every #define to the `define` callback, which for a
 * compile is dwarf2out_define. PLUGIN_PRAGMAS comes from c_common_init, BEFORE the debug back
 * end is initialised (lang_dependent_init), so recording there dereferenced dwarf2out's
 * still-NULL macro table: an ICE on every -g3 compile. The macro is therefore defined with
 * the callback switched off, and a compile records it itself from PLUGIN_START_UNIT (debug
 * output exists by then, no line read yet: line 0 puts it among the predefined macros, so
 * `info macro __PERFGROUP__` in gdb works). Under -E the callback prints `#define` lines for
 * -dD/-g3 before any line marker; the macro is predefined, so it is not printed, as GCC's own
 * predefined macros are not. */
static void
define_macro (void *, void *)
{
  if (!&parse_in || !parse_in || cpp_get_options (parse_in)->preprocessed)
    return;
  cpp_callbacks *cb = cpp_get_callbacks (parse_in);
  auto *saved = cb->define;
  cb->define = NULL;
  cpp_define (parse_in, "__PERFGROUP__=1");
  cb->define = saved;
}

static void
record_macro (void *, void *)
{
  if (!&parse_in || !parse_in || cpp_get_options (parse_in)->preprocessed)
    return;
  if (debug_info_level >= DINFO_LEVEL_VERBOSE && debug_hooks->define)
    debug_hooks->define (0, "__PERFGROUP__ 1");
}

} // namespace perfgroup_gcc

using namespace perfgroup_gcc;

/* ---- Entry point ----------------------------------------------------------------------- */

__attribute__ ((visibility ("default"))) int
plugin_init (struct plugin_name_args *info, struct plugin_gcc_version *version)
{
  if (!plugin_default_version_check (version, &gcc_version))
    {
      error ("%<-fplugin=%s%>: built for GCC %s (%s) but loaded into GCC %s (%s); rebuild "
             "perfgroup.so against this compiler", info->full_name, gcc_version.basever,
             gcc_version.datestamp, version->basever, version->datestamp);
      return 1;
    }
  static struct plugin_info pinfo = {
    "0.1",
    "perfgroup: perf_group(\"name\") attribute and group-aware enter/exit hooks. Options: "
    PGTEXT_OPTIONS "; map=: " PGMAP_RULE_TEXT,
  };
  register_callback (plugin_name, PLUGIN_INFO, NULL, &pinfo);
  if (!parse_options (info->argc, info->argv))
    return 0; /* errors reported; the compiler exits non-zero */

  register_callback (plugin_name, PLUGIN_ATTRIBUTES, register_attributes, NULL);
  register_callback (plugin_name, PLUGIN_PRAGMAS, define_macro, NULL);
  register_callback (plugin_name, PLUGIN_START_UNIT, record_macro, NULL);
  register_callback (plugin_name, PLUGIN_REGISTER_GGC_ROOTS, NULL, (void *) abi_tree_roots);

  static struct register_pass_info pass = {
    new perfgroup_pass (g), "lower", 1, PASS_POS_INSERT_BEFORE,
  };
  register_callback (plugin_name, PLUGIN_PASS_MANAGER_SETUP, NULL, &pass);
  register_callback (plugin_name, PLUGIN_ALL_IPA_PASSES_START, elide_reentries, NULL);
  return 0;
}
