/* SPDX-License-Identifier: MIT */
/*
 * plugin-gcc/plugin.h — what the files of perfgroup.so (the GCC plugin) call of each other:
 * one section per file, in the order a function meets them (plugin.cc has the overview).
 * Everything is in namespace perfgroup_gcc and hidden; only plugin_init and
 * plugin_is_GPL_compatible (plugin.cc) are exported.
 */
#ifndef PERFGROUP_GCC_PLUGIN_H
#define PERFGROUP_GCC_PLUGIN_H

#include "gcc-compat.h" /* every GCC header and every GCC-version #if */

#include "perfgroup/abi.h"
#include "../common/pathmap.h" /* the map's path rule, shared with perfgroup-clang */

/* The texts both plugins print word for word, quoted as GCC's diagnostics quote. */
#define PGTEXT_Q(x) "%<" x "%>"
#define PGTEXT_QS "%qs"
#define PGTEXT_DECL "%qD"
#include "../common/plugin_texts.h"

namespace perfgroup_gcc {

/* ---- options.cc: -fplugin-arg-perfgroup-* ------------------------------------------------ */

struct map_entry {
  char *glob;    /* as written */
  char *pattern; /* anchored (pgmap_anchor) */
  int kind;      /* enum pgmap_kind */
  char *group;
  const char *map; /* the map=FILE it came from, and its line: for the verbose note */
  unsigned line;
};

struct exclude_glob {
  char *glob, *pattern;
  int kind;
};

extern const char *default_group;
extern vec<map_entry> map_entries;
extern vec<exclude_glob> exclude_globs;
extern const char *last_map; /* the last map= given: the verbose note names it */
extern char cwd[PGMAP_PATH_MAX]; /* the compile's working directory, physical */
extern bool system_headers;
extern bool verbose;
extern bool weak_hooks; /* weak-hooks */
extern bool all_functions; /* all-functions: no call-graph elision (the profiling mode) */

bool parse_options (int argc, struct plugin_argument *argv);

/* ---- attribute.cc: perf_group("g") -------------------------------------------------------- */

void register_attributes (void *, void *); /* PLUGIN_ATTRIBUTES */
const char *attribute_group (tree fndecl);

/* ---- select.cc: which functions, which groups ---------------------------------------------- */

const char *asm_name (tree fndecl);
const char *skip_reason (tree fndecl);
const char *file_group (tree fndecl);

/* ---- instrument.cc: sites, hook calls, the module constructor ------------------------------ */

extern const struct ggc_root_tab abi_tree_roots[]; /* PLUGIN_REGISTER_GGC_ROOTS */
void build_abi_trees (void);
tree build_site (tree fndecl, const char *attr, const char *file);
void build_hook_calls (tree site, tree tok, location_t in, location_t out, gcall **enter,
                       gcall **leave);
gcall *build_exit_call (tree site, tree tok, location_t loc);
void add_enter (gimple_seq *seq, tree site, tree tok, gcall *enter, bool check = true);
void add_exit (gimple_seq *seq, tree tok, gcall *leave);
bool is_our_store (gimple *stmt);
/* A coroutine actor's runs ended before its symmetric transfers (coroutines.cc's
 * end_runs_before_transfers), given to wrap_body by its caller. */
typedef unsigned (*transfers_fn) (tree fndecl, tree site, tree tok, tree *done);
void wrap_body (function *fun, tree site, transfers_fn transfers = NULL);
/* After each setjmp call of FUN's body: the runtime's landing hook (abi.h). */
unsigned add_landings (function *fun);
void emit_module_constructor (void);
bool is_hook_call_of (gimple *stmt, tree site);
bool is_our_tmp (tree t, bool any);

/* ---- threads.cc: thread roots, OpenMP regions ---------------------------------------------- */

void find_thread_starts (function *fun);
void record_site (tree fndecl, tree site);
bool is_thread_root (tree fndecl);
unsigned charge_omp_regions (function *fun, tree site);

/* ---- coroutines.cc: C++20 coroutines -------------------------------------------------------- */

tree coro_ramp_of (tree fndecl);
bool is_coro_ramp (tree fndecl);
unsigned end_runs_before_transfers (tree fndecl, tree site, tree tok, tree *done);

/* ---- elide.cc: call-graph elision ----------------------------------------------------------- */

/* What elision needs to know of each function the pass wrapped. */
struct hooked_fn {
  tree decl, site;       /* both stay reachable from the symbol table until elision */
  tree shown;            /* the function as the user wrote it: decl, or a coroutine's ramp */
  const char *attr, *file; /* "" when absent */
  bool omp;              /* holds an OpenMP region (parallel, task, host teams) charged
                          * through its site */
  bool coro;             /* a coroutine's actor: resumed through its handle */
};

void record_hooked (const hooked_fn &fn);
void elide_reentries (void *, void *); /* PLUGIN_ALL_IPA_PASSES_START */

} // namespace perfgroup_gcc

#endif /* PERFGROUP_GCC_PLUGIN_H */
