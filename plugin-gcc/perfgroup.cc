/* SPDX-License-Identifier: MIT */
/*
 * perfgroup.cc — the GCC plugin perfgroup.so: puts functions in performance groups and wraps
 * each one in an enter/exit hook pair that calls the perfgroup runtime.
 *
 * ---- What it does to a function ----------------------------------------------------------
 *
 * Before (source):                          After (GIMPLE, as x.c.*t.perfgroup shows it):
 *
 *   PERF_GROUP("net")                         static struct perfgroup_site __perfgroup_site_parse
 *   int parse(const char *s) {                  __attribute__((section("perfgroup_sites"),
 *       if (!s)                                               aligned(8), used))
 *           return -1;                          = { 2, GCC|ATTR, 2, "net\0\0", "parse\0x.c\0", 0, 0 };
 *       return work(s);                       int parse(const char *s) {
 *   }                                           perfgroup_tok = 0;
 *                                               if ((__perfgroup_site_parse.key | __perfgroup_cur.mask) != ~0
 *                                                   || __builtin_dwarf_cfa () > __perfgroup_cur.sp)
 *                                                 perfgroup_tok = __perfgroup_enter(&__perfgroup_site_parse);
 *                                               try {
 *                                                   if (!s) return -1;
 *                                                   return work(s);
 *                                               } finally {
 *                                                   if (perfgroup_tok != 0)
 *                                                     __perfgroup_exit(&__perfgroup_site_parse, perfgroup_tok);
 *                                               }
 *                                             }
 *
 * The test before the enter hook is the inline re-entry check (include/perfgroup/abi.h): a
 * call of a function whose groups already run, below the frame that started them, calls
 * nothing (the runtime keeps the site's key and the thread's __perfgroup_cur).
 *
 * plus, once per translation unit that got a site, a static constructor (priority 101)
 *   static void __perfgroup_module_ctor(void) {
 *     __perfgroup_register_module(PERFGROUP_ABI_VERSION, __start_perfgroup_sites,
 *                                 __stop_perfgroup_sites); }
 * whose hidden __start_/__stop_ references resolve inside the module (executable or shared
 * object) being linked, so every module registers its own sites; the runtime ignores repeats.
 * A COMDAT function's site is a hidden COMDAT variable outside the section (one per module),
 * which an entry of the section points at (see build_site).
 * With weak-hooks, the three runtime functions are declared weak, enter and register guarded by
 * `if (&hook)` instead of the inline check (the exit is guarded by its token anyway)
 * (perfgroup_tok starts at 0): an object links and runs without the runtime, hooks doing
 * nothing, and linking the runtime makes them live.
 *
 * The pass runs before GCC's "lower" pass, i.e. on high GIMPLE where try/finally still exists
 * (the spot where GCC itself wraps bodies for -finstrument-functions). Lowering then sends every
 * return through the finally block, EH lowering runs it on unwinding, and the inliner copies
 * the whole pair with the body: one pair per logical call at any -O level.
 *
 * ---- Which functions, which groups ---------------------------------------------------------
 *   attribute group   __attribute__((perf_group("g"))), [[gnu::perf_group("g")]],
 *                     [[perfgroup::group("g")]] (C++ and C2x). Declaration and definition with
 *                     different groups: warning, the definition wins.
 *   file group        map= (first matching glob), else default=. Not applied to functions defined
 *                     in system headers unless system-headers is given.
 *   A function is instrumented if it has either group and is not skipped (see skip_reason()).
 *
 * ---- Options (-fplugin-arg-perfgroup-NAME[=VALUE]) ---------------------------------------
 *   default=GROUP     file group of every function of this translation unit (not in a map)
 *   map=FILE          lines "GLOB GROUP" ('#' starts a comment); first match wins; '*' also
 *                     matches '/'. A GLOB containing '/' is matched against the defining file's
 *                     absolute path (cwd + path, `.`/`..` and symlinks resolved: realpath), and
 *                     is relative to FILE's own directory unless it starts with '/' or '*'; one
 *                     without '/' against its basename (common/pathmap.h: the one definition,
 *                     shared with perfgroup-clang and `perfgroup map`)
 *   exclude=GLOB[,GLOB...]  never instrument a function whose name (plain, qualified C++ or
 *                     mangled) or defining file (map='s rule, relative globs from the working
 *                     directory) matches; may be repeated
 *   system-headers    let default=/map= groups apply inside system headers too
 *   verbose           a note per function with a group: instrumented with which groups, or why
 *                     not; with map=, a note per file: the glob that gave its group, or none
 *   weak-hooks        hooks declared weak, every call guarded: objects link without the runtime
 *   all-functions     no call-graph elision: every instrumented function keeps its hooks (the
 *                     profiling mode: trace mode's full call tree)
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
#include "gcc-compat.h"

#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "perfgroup/abi.h"
#include "../common/pathmap.h" /* the map's path rule, shared with perfgroup-clang */

__attribute__ ((visibility ("default"))) int plugin_is_GPL_compatible;

static const char plugin_name[] = "perfgroup";
#define FLAG "-fplugin-arg-perfgroup-" /* every option error names the exact flag */

/* ---- Options --------------------------------------------------------------------------- */

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

static const char *default_group;
static vec<map_entry> map_entries;
static vec<exclude_glob> exclude_globs;
static const char *last_map; /* the last map= given: the verbose note names it */
static char cwd[PGMAP_PATH_MAX]; /* the compile's working directory, physical */
static bool system_headers;
static bool verbose;
static bool weak_hooks; /* weak-hooks */
static bool all_functions; /* all-functions: no call-graph elision (the profiling mode) */

/* Anchors GLOB at DIR (pgmap_anchor); a glob too long to anchor is an error naming FLAGTEXT. */
static int
anchor_glob (const char *dir, const char *glob, char **pattern, const char *flagtext)
{
  char buf[PGMAP_PATH_MAX];
  int kind = pgmap_anchor (dir, glob, buf);
  if (kind < 0)
    error ("%qs: the glob %qs is longer than a path can be", flagtext, glob);
  *pattern = xstrdup (kind < 0 ? "" : buf);
  return kind;
}

/* Read map=FILE. Returns false after reporting the first problem as an error. */
static bool
read_map (const char *file)
{
  FILE *f = fopen (file, "r");
  if (!f)
    {
      error ("%<" FLAG "map=%s%>: cannot open %qs: %m", file, file);
      return false;
    }
  char dir[PGMAP_PATH_MAX];
  char *flagtext = concat (FLAG "map=", file, NULL);
  if (pgmap_map_dir (cwd, file, dir) < 0)
    {
      error ("%qs: the path of the map file is longer than a path can be", flagtext);
      fclose (f);
      return false;
    }
  char buf[4096];
  unsigned lineno = 0;
  bool ok = true;
  while (ok && fgets (buf, sizeof buf, f))
    {
      lineno++;
      size_t len = strlen (buf);
      if (len == sizeof buf - 1 && buf[len - 1] != '\n')
        {
          error ("%s:%u: line too long (in %<" FLAG "map=%s%>)", file, lineno, file);
          ok = false;
          break;
        }
      char *glob, *group;
      int fields = pgmap_split_line (buf, &glob, &group);
      if (fields == 0)
        continue; /* blank or comment line */
      if (fields < 0)
        {
          error ("%s:%u: expected %<GLOB GROUP%> (in %<" FLAG "map=%s%>)", file, lineno, file);
          ok = false;
          break;
        }
      map_entry e = { xstrdup (glob), NULL, 0, xstrdup (group), file, lineno };
      e.kind = anchor_glob (dir, glob, &e.pattern, flagtext);
      ok = e.kind >= 0;
      map_entries.safe_push (e);
    }
  fclose (f);
  last_map = file;
  return ok;
}

/* Parse the -fplugin-arg-perfgroup-* arguments. Every error names its flag. */
static bool
parse_options (int argc, struct plugin_argument *argv)
{
  bool ok = true;
  if (!getcwd (cwd, sizeof cwd))
    strcpy (cwd, "."); /* gone or too deep: realpath(3) still finds it through "." */
  for (int i = 0; i < argc; i++)
    {
      const char *key = argv[i].key, *value = argv[i].value;
      bool wants_value = !strcmp (key, "default") || !strcmp (key, "map")
                         || !strcmp (key, "exclude");
      bool is_switch = !strcmp (key, "system-headers") || !strcmp (key, "verbose")
                       || !strcmp (key, "weak-hooks") || !strcmp (key, "all-functions");
      if (!wants_value && !is_switch)
        {
          error ("unknown option %<" FLAG "%s%> (known: default=GROUP, map=FILE, "
                 "exclude=GLOB, system-headers, verbose, weak-hooks, all-functions)", key);
          ok = false;
          continue;
        }
      if (wants_value && (!value || !*value))
        {
          error ("%<" FLAG "%s%> needs a value: %<" FLAG "%s=%s%>", key, key,
                 !strcmp (key, "default") ? "GROUP" : !strcmp (key, "map") ? "FILE" : "GLOB");
          ok = false;
          continue;
        }
      if (is_switch && value)
        {
          error ("%<" FLAG "%s%> takes no value (got %<" FLAG "%s=%s%>)", key, key, value);
          ok = false;
          continue;
        }
      if (!strcmp (key, "default"))
        {
          if (default_group && strcmp (default_group, value))
            {
              error ("%<" FLAG "default=%s%> conflicts with an earlier %<" FLAG "default=%s%>",
                     value, default_group);
              ok = false;
            }
          default_group = xstrdup (value);
        }
      else if (!strcmp (key, "map"))
        ok &= read_map (value);
      else if (!strcmp (key, "exclude"))
        {
          char *copy = xstrdup (value), *save = NULL;
          for (char *g = strtok_r (copy, ",", &save); g; g = strtok_r (NULL, ",", &save))
            {
              exclude_glob x = { g, NULL, 0 };
              x.kind = anchor_glob (cwd, g, &x.pattern, concat (FLAG "exclude=", value, NULL));
              ok &= x.kind >= 0;
              exclude_globs.safe_push (x);
            }
        }
      else if (!strcmp (key, "system-headers"))
        system_headers = true;
      else if (!strcmp (key, "weak-hooks"))
        weak_hooks = true;
      else if (!strcmp (key, "all-functions"))
        all_functions = true;
      else
        verbose = true;
    }
  return ok;
}

/* ---- The attribute --------------------------------------------------------------------- */

/* Where each attribute instance was written: the location of the declaration it was applied
 * to. GCC merges the attributes of a declaration and its definition in no reliable order, so
 * this is how "the definition wins" finds the definition's group. */
struct attr_record {
  location_t decl_loc;
  const char *group;
};
static vec<attr_record> attr_records;

static const char *
attr_display_name (tree name)
{
  return is_attribute_p ("group", name) ? "perfgroup::group" : "perf_group";
}

static tree
handle_perf_group (tree *node, tree name, tree args, int, bool *no_add_attrs)
{
  const char *spelled = attr_display_name (name);
  if (TREE_CODE (*node) != FUNCTION_DECL)
    {
      warning (OPT_Wattributes, "%qs attribute only applies to functions; ignored", spelled);
      *no_add_attrs = true;
      return NULL_TREE;
    }
  tree arg = args ? PG_STRIP_ARG (TREE_VALUE (args)) : NULL_TREE;
  if (!arg || TREE_CODE (arg) != STRING_CST
      || TYPE_PRECISION (TREE_TYPE (TREE_TYPE (arg))) != TYPE_PRECISION (char_type_node))
    {
      error ("%qs attribute argument must be a string literal naming a group", spelled);
      *no_add_attrs = true;
      return NULL_TREE;
    }
  const char *group = TREE_STRING_POINTER (arg);
  if (!*group)
    {
      error ("%qs attribute: the group name must not be empty", spelled);
      *no_add_attrs = true;
      return NULL_TREE;
    }
  if (strlen (group) + 1 != (size_t) TREE_STRING_LENGTH (arg))
    {
      error ("%qs attribute: the group name must not contain a NUL character", spelled);
      *no_add_attrs = true;
      return NULL_TREE;
    }
  attr_record r = { DECL_SOURCE_LOCATION (*node), ggc_strdup (group) };
  attr_records.safe_push (r);
  return NULL_TREE;
}

/* affects_type_identity = false, no decl_required: handle_perf_group reports misplacement
 * itself so the message names the attribute the same way for every spelling. */
static const struct attribute_spec perf_group_attr[] = {
  { "perf_group", 1, 1, false, false, false, false, handle_perf_group, NULL },
  { NULL, 0, 0, false, false, false, false, NULL, NULL },
};
static const struct attribute_spec group_attr_scoped[] = {
  { "group", 1, 1, false, false, false, false, handle_perf_group, NULL },
  { NULL, 0, 0, false, false, false, false, NULL, NULL },
};

static void
register_attributes (void *, void *)
{
  register_attribute (&perf_group_attr[0]); /* GNU spelling and [[gnu::perf_group]] */
  PG_REGISTER_SCOPED_ATTRIBUTE (group_attr_scoped, "perfgroup");
}

static bool
is_our_attribute (tree attr)
{
  tree name = get_attribute_name (attr);
  if (is_attribute_p ("perf_group", name))
    return true;
  tree ns = get_attribute_namespace (attr);
  return is_attribute_p ("group", name) && ns && is_attribute_p ("perfgroup", ns);
}

/* The attribute group of FNDECL's definition, or NULL. Warns once if a declaration said
 * otherwise. */
static const char *
attribute_group (tree fndecl)
{
  const char *first = NULL, *other = NULL;
  for (tree a = DECL_ATTRIBUTES (fndecl); a; a = TREE_CHAIN (a))
    {
      if (!is_our_attribute (a) || !TREE_VALUE (a))
        continue;
      tree arg = PG_STRIP_ARG (TREE_VALUE (TREE_VALUE (a)));
      if (TREE_CODE (arg) != STRING_CST)
        continue;
      const char *g = TREE_STRING_POINTER (arg);
      if (!first)
        first = g;
      else if (strcmp (first, g) && !other)
        other = g;
    }
  if (!other)
    return first;
  const char *chosen = first;
  unsigned i;
  attr_record *r;
  FOR_EACH_VEC_ELT (attr_records, i, r)
    if (r->decl_loc == DECL_SOURCE_LOCATION (fndecl))
      chosen = r->group;
  const char *earlier = strcmp (chosen, first) ? first : other;
  warning_at (DECL_SOURCE_LOCATION (fndecl), OPT_Wattributes,
              "%<perf_group%> attribute: the definition of %qD is in group %qs but an earlier "
              "declaration says %qs; the definition wins", fndecl, chosen, earlier);
  return chosen;
}

/* ---- Selection ------------------------------------------------------------------------- */

static const char *
asm_name (tree fndecl)
{
  const char *n = IDENTIFIER_POINTER (DECL_ASSEMBLER_NAME (fndecl));
  return n[0] == '*' ? n + 1 : n; /* '*' marks a user asm label: emitted verbatim */
}

/* A defining file, resolved once per spelling: its absolute path and the first map entry that
 * matches it (-1: none). */
struct file_info {
  char *abs;
  int entry;
  bool noted; /* verbose: its map note was given */
};
static hash_map<nofree_string_hash, file_info> *files;

static file_info *
file_info_of (const char *spelled)
{
  if (!files)
    files = new hash_map<nofree_string_hash, file_info>;
  if (file_info *known = files->get (spelled))
    return known;
  char abs[PGMAP_PATH_MAX];
  file_info fi = { NULL, -1, false };
  fi.abs = xstrdup (pgmap_file_path (cwd, spelled, abs) < 0 ? spelled : abs);
  unsigned i;
  map_entry *e;
  FOR_EACH_VEC_ELT (map_entries, i, e)
    if (pgmap_match (e->pattern, e->kind, fi.abs, spelled))
      {
        fi.entry = i;
        break;
      }
  files->put (xstrdup (spelled), fi);
  return files->get (spelled);
}

static bool
excluded (tree fndecl)
{
  if (exclude_globs.is_empty ())
    return false;
  const char *plain = DECL_NAME (fndecl) ? IDENTIFIER_POINTER (DECL_NAME (fndecl)) : "";
  const char *qualified = lang_hooks.decl_printable_name (fndecl, 1);
  const char *mangled = asm_name (fndecl);
  const char *spelled = DECL_SOURCE_FILE (fndecl);
  unsigned i;
  exclude_glob *x;
  FOR_EACH_VEC_ELT (exclude_globs, i, x)
    if (!fnmatch (x->glob, plain, 0) || !fnmatch (x->glob, qualified, 0)
        || !fnmatch (x->glob, mangled, 0)
        || (spelled && pgmap_match (x->pattern, x->kind, file_info_of (spelled)->abs, spelled)))
      return true;
  return false;
}

/* Why FNDECL is never instrumented whatever its groups, or NULL. */
static const char *
skip_reason (tree fndecl)
{
  /* Implicit members, thunks, outlined OpenMP bodies, our own constructor: no source
   * function a user could have meant. g++ marks a lambda's operator() artificial too, but
   * its body is the user's code: keep it (no implicit member is ever called operator()). */
  if (DECL_ARTIFICIAL (fndecl)
      && !(DECL_NAME (fndecl) && id_equal (DECL_NAME (fndecl), "operator()")))
    return "compiler-generated function";
  /* A naked function has no prologue or frame: inserted calls would corrupt the stack. */
  if (lookup_attribute ("naked", DECL_ATTRIBUTES (fndecl)))
    return "naked function";
  /* The user's explicit opt-out (PERF_GROUP_NONE), honoured like -finstrument-functions does;
   * the attribute itself is checked because GCC sets DECL_NO_INSTRUMENT_FUNCTION_ENTRY_EXIT
   * on every function when -finstrument-functions is off. */
  if (lookup_attribute ("no_instrument_function", DECL_ATTRIBUTES (fndecl)))
    return "no_instrument_function attribute";
  /* The runtime's own functions: instrumenting them would recurse into the hooks. */
  const char *n = DECL_NAME (fndecl) ? IDENTIFIER_POINTER (DECL_NAME (fndecl)) : "";
  if (!strncmp (n, "__perfgroup", 11) || !strncmp (n, "perfgroup_", 10))
    return "perfgroup runtime function";
  if (excluded (fndecl))
    return "matches " FLAG "exclude=";
  return NULL;
}

static const char *
file_group (tree fndecl)
{
  if (!default_group && map_entries.is_empty ())
    return NULL; /* the common case: no file groups at all, skip the line-map lookup */
  if (DECL_IN_SYSTEM_HEADER (fndecl) && !system_headers)
    return NULL;
  const char *spelled = DECL_SOURCE_FILE (fndecl);
  if (!spelled || map_entries.is_empty () || DECL_SOURCE_LOCATION (fndecl) <= BUILTINS_LOCATION)
    return default_group; /* <built-in>: no file (our module constructor) */
  file_info *fi = file_info_of (spelled);
  const map_entry *e = fi->entry >= 0 ? &map_entries[fi->entry] : NULL;
  if (verbose && !fi->noted)
    {
      char note[3 * PGMAP_PATH_MAX];
      pgmap_note (note, sizeof note, fi->abs, e ? e->glob : NULL, e ? e->map : last_map,
                  e ? e->line : 0, e ? e->group : NULL, default_group);
      inform (DECL_SOURCE_LOCATION (fndecl), "%s", note);
      fi->noted = true;
    }
  return e ? e->group : default_group;
}

/* ---- Trees we build -------------------------------------------------------------------- */

static GTY (()) tree site_type;
static GTY (()) tree enter_decl;
static GTY (()) tree exit_decl;
static GTY (()) tree register_decl;
static GTY (()) tree cur_var; /* PERFGROUP_TLS_CUR */

static const struct ggc_root_tab roots[] = {
  { &site_type, 1, sizeof (site_type), &gt_ggc_mx_tree_node, &gt_pch_nx_tree_node },
  { &enter_decl, 1, sizeof (enter_decl), &gt_ggc_mx_tree_node, &gt_pch_nx_tree_node },
  { &exit_decl, 1, sizeof (exit_decl), &gt_ggc_mx_tree_node, &gt_pch_nx_tree_node },
  { &register_decl, 1, sizeof (register_decl), &gt_ggc_mx_tree_node, &gt_pch_nx_tree_node },
  { &cur_var, 1, sizeof (cur_var), &gt_ggc_mx_tree_node, &gt_pch_nx_tree_node },
  LAST_GGC_ROOT_TAB
};

/* An external C function: its assembler name is set here, or cc1plus would mangle it. */
static tree
extern_c_function (const char *name, tree type)
{
  tree decl = build_fn_decl (name, type);
  SET_DECL_ASSEMBLER_NAME (decl, get_identifier (name));
  TREE_NOTHROW (decl) = 1;
  /* The hooks never call back into this translation unit. */
  DECL_ATTRIBUTES (decl) = tree_cons (get_identifier ("leaf"), NULL_TREE, NULL_TREE);
  /* weak-hooks: an object links without the runtime (a build helper linked without LIBS);
   * every call is guarded by `&hook != 0` (docs/plugins.md, "Linking without the runtime"). */
  if (weak_hooks)
    declare_weak (decl);
  return decl;
}

/* if (A CODE B) { CALL } as high GIMPLE: A and B gimple values. */
static void
add_call_if (gimple_seq *seq, enum tree_code code, tree a, tree b, gimple *call)
{
  tree yes = create_artificial_label (UNKNOWN_LOCATION);
  tree no = create_artificial_label (UNKNOWN_LOCATION);
  gimple_seq_add_stmt (seq, gimple_build_cond (code, a, b, yes, no));
  gimple_seq_add_stmt (seq, gimple_build_label (yes));
  gimple_seq_add_stmt (seq, call);
  gimple_seq_add_stmt (seq, gimple_build_label (no));
}

static tree site_field (const char *name);

/* TMP = REF, a new temporary of REF's type. */
static tree
load_tmp (gimple_seq *seq, tree ref, const char *name)
{
  tree tmp = create_tmp_var (TREE_TYPE (ref), name);
  gimple_seq_add_stmt (seq, gimple_build_assign (tmp, ref));
  return tmp;
}

/*
 * tok = 0; if ((site.key | cur.mask) != ~0 || CFA > cur.sp) tok = enter (&site); — the
 * inline re-entry check of abi.h: a call of a function whose active groups all run already,
 * below the innermost frame that started one, makes no call at all. With weak-hooks, tok = 0; if (&enter)
 * tok = enter (&site) instead (without the runtime the thread-local does not exist).
 */
static void
add_enter (gimple_seq *seq, tree site, tree tok, gcall *enter, bool check = true)
{
  gimple_seq_add_stmt (seq, gimple_build_assign (tok, build_int_cst (uint64_type_node, 0)));
  if (weak_hooks)
    {
      add_call_if (seq, NE_EXPR, build_fold_addr_expr (enter_decl), null_pointer_node, enter);
      return;
    }
  if (!check)
    {
      gimple_seq_add_stmt (seq, enter);
      return;
    }
  tree call = create_artificial_label (UNKNOWN_LOCATION);
  tree check_sp = create_artificial_label (UNKNOWN_LOCATION);
  tree done = create_artificial_label (UNKNOWN_LOCATION);
  tree key = load_tmp (seq, build3 (COMPONENT_REF, uint64_type_node, site, site_field ("key"),
                                    NULL_TREE), "perfgroup_key");
  tree cur_mask = TYPE_FIELDS (TREE_TYPE (cur_var)); /* mask, then sp */
  tree cur_sp = DECL_CHAIN (cur_mask);
  tree mask = load_tmp (seq, build3 (COMPONENT_REF, uint64_type_node, cur_var, cur_mask,
                                     NULL_TREE), "perfgroup_cur_mask");
  tree both = create_tmp_var (uint64_type_node, "perfgroup_both");
  gimple_seq_add_stmt (seq, gimple_build_assign (both, BIT_IOR_EXPR, key, mask));
  gimple_seq_add_stmt (seq, gimple_build_cond (NE_EXPR, both,
                                               build_all_ones_cst (uint64_type_node), call,
                                               check_sp));
  gimple_seq_add_stmt (seq, gimple_build_label (check_sp));
  tree cfa = create_tmp_var (ptr_type_node, "perfgroup_cfa");
  gcall *get_cfa = gimple_build_call (builtin_decl_explicit (BUILT_IN_DWARF_CFA), 0);
  gimple_call_set_lhs (get_cfa, cfa);
  gimple_call_set_nothrow (get_cfa, true);
  gimple_seq_add_stmt (seq, get_cfa);
  tree at = create_tmp_var (pointer_sized_int_node, "perfgroup_at");
  gimple_seq_add_stmt (seq, gimple_build_assign (at, NOP_EXPR, cfa));
  tree csp = load_tmp (seq, build3 (COMPONENT_REF, pointer_sized_int_node, cur_var, cur_sp,
                                    NULL_TREE), "perfgroup_cur_sp");
  gimple_seq_add_stmt (seq, gimple_build_cond (GT_EXPR, at, csp, call, done));
  gimple_seq_add_stmt (seq, gimple_build_label (call));
  gimple_seq_add_stmt (seq, enter);
  gimple_seq_add_stmt (seq, gimple_build_label (done));
}

/* if (tok != 0) exit (&site, tok); — the exit hook only ever gets a token (abi.h). */
static void
add_exit (gimple_seq *seq, tree tok, gcall *leave)
{
  add_call_if (seq, NE_EXPR, tok, build_int_cst (uint64_type_node, 0), leave);
}

static tree
add_field (tree chain, const char *name, tree type)
{
  tree f = build_decl (BUILTINS_LOCATION, FIELD_DECL, get_identifier (name), type);
  DECL_CHAIN (f) = chain;
  return f;
}

static void
build_abi_trees (void)
{
  if (site_type)
    return;
  tree cstr = build_pointer_type (build_qualified_type (char_type_node, TYPE_QUAL_CONST));
  /* struct perfgroup_site of abi.h; finish_builtin_struct wants the fields last to first. */
  tree fields = NULL_TREE;
  fields = add_field (fields, "version", short_unsigned_type_node);
  fields = add_field (fields, "flags", short_unsigned_type_node);
  fields = add_field (fields, "line", unsigned_type_node);
  fields = add_field (fields, "groups", cstr);
  fields = add_field (fields, "where", cstr);
  fields = add_field (fields, "cache", ptr_type_node);
  fields = add_field (fields, "key", uint64_type_node);
  site_type = make_node (RECORD_TYPE);
  finish_builtin_struct (site_type, "perfgroup_site", fields, NULL_TREE);
  gcc_assert (tree_to_uhwi (TYPE_SIZE_UNIT (site_type)) == sizeof (struct perfgroup_site));

  /* extern __thread struct perfgroup_cur PERFGROUP_TLS_CUR, initial-exec (abi.h) */
  tree cur_fields = NULL_TREE;
  cur_fields = add_field (cur_fields, "mask", uint64_type_node);
  cur_fields = add_field (cur_fields, "sp", pointer_sized_int_node);
  tree cur_type = make_node (RECORD_TYPE);
  finish_builtin_struct (cur_type, "perfgroup_cur", cur_fields, NULL_TREE);
  gcc_assert (tree_to_uhwi (TYPE_SIZE_UNIT (cur_type)) == sizeof (struct perfgroup_cur));
  cur_var = build_decl (BUILTINS_LOCATION, VAR_DECL, get_identifier (PERFGROUP_TLS_CUR_NAME),
                        cur_type);
  SET_DECL_ASSEMBLER_NAME (cur_var, DECL_NAME (cur_var));
  TREE_PUBLIC (cur_var) = 1;
  DECL_EXTERNAL (cur_var) = 1;
  DECL_ARTIFICIAL (cur_var) = 1;
  TREE_STATIC (cur_var) = 1;
  set_decl_tls_model (cur_var, TLS_MODEL_INITIAL_EXEC);

  enter_decl = extern_c_function (PERFGROUP_HOOK_ENTER_NAME,
                                  build_function_type_list (uint64_type_node, ptr_type_node,
                                                            NULL_TREE));
  exit_decl = extern_c_function (PERFGROUP_HOOK_EXIT_NAME,
                                 build_function_type_list (void_type_node, ptr_type_node,
                                                           uint64_type_node, NULL_TREE));
  register_decl = extern_c_function (PERFGROUP_MODULE_REGISTER_NAME,
                                     build_function_type_list (void_type_node,
                                                               unsigned_type_node, ptr_type_node,
                                                               ptr_type_node, NULL_TREE));
}

/* "a\0b\0" as a constant of the field type (const char *). */
static tree
two_strings (const char *a, const char *b)
{
  size_t la = strlen (a), lb = strlen (b);
  char *buf = XNEWVEC (char, la + lb + 2);
  memcpy (buf, a, la + 1);
  memcpy (buf + la + 1, b, lb + 1);
  tree s = build_string_literal (la + lb + 2, buf);
  XDELETEVEC (buf);
  return s;
}

static tree
site_field (const char *name)
{
  for (tree f = TYPE_FIELDS (site_type); f; f = DECL_CHAIN (f))
    if (!strcmp (IDENTIFIER_POINTER (DECL_NAME (f)), name))
      return f;
  gcc_unreachable ();
}

/* A site's initializer: FNDECL's version, flags (plus EXTRA), line, groups, where; CACHE. */
static tree
site_init (tree fndecl, const char *attr, const char *file, unsigned extra, tree cache)
{
  const char *fn = asm_name (fndecl);
  unsigned flags = PERFGROUP_SITE_F_GCC | extra;
  if (!strncmp (fn, "_Z", 2))
    flags |= PERFGROUP_SITE_F_CXX;
  if (DECL_DECLARED_INLINE_P (fndecl) || DECL_COMDAT (fndecl) || DECL_ONE_ONLY (fndecl))
    flags |= PERFGROUP_SITE_F_INLINE;
  if (attr)
    flags |= PERFGROUP_SITE_F_ATTR;
  if (file)
    flags |= PERFGROUP_SITE_F_FILEGROUP;

  vec<constructor_elt, va_gc> *v = NULL;
  CONSTRUCTOR_APPEND_ELT (v, site_field ("version"),
                          build_int_cst (short_unsigned_type_node, PERFGROUP_ABI_VERSION));
  CONSTRUCTOR_APPEND_ELT (v, site_field ("flags"), build_int_cst (short_unsigned_type_node, flags));
  CONSTRUCTOR_APPEND_ELT (v, site_field ("line"),
                          build_int_cst (unsigned_type_node, DECL_SOURCE_LINE (fndecl)));
  CONSTRUCTOR_APPEND_ELT (v, site_field ("groups"), two_strings (attr ? attr : "", file ? file : ""));
  /* Function multiversioning: a C++ target("avx2") version is named _Z4kindv.avx2; the
   * site shows every version under the function's own name, as perfgroup-clang does
   * (target_clones are cloned after this pass and share one site anyway). */
  const char *shown = fn;
  if (DECL_FUNCTION_VERSIONED (fndecl) && strchr (fn, '.'))
    shown = xstrndup (fn, strchr (fn, '.') - fn);
  CONSTRUCTOR_APPEND_ELT (v, site_field ("where"),
                          two_strings (shown, DECL_SOURCE_FILE (fndecl) ? DECL_SOURCE_FILE (fndecl) : ""));
  CONSTRUCTOR_APPEND_ELT (v, site_field ("cache"), cache);
  CONSTRUCTOR_APPEND_ELT (v, site_field ("key"), build_int_cst (uint64_type_node, 0));
  tree init = build_constructor (site_type, v);
  TREE_CONSTANT (init) = 1;
  TREE_STATIC (init) = 1;
  return init;
}

/* A static, writable, kept site variable PREFIX<asm name of FNDECL> holding INIT. */
static tree
site_var (const char *prefix, tree fndecl, tree init)
{
  char *name = concat (prefix, asm_name (fndecl), NULL);
  tree var = build_decl (DECL_SOURCE_LOCATION (fndecl), VAR_DECL, get_identifier (name), site_type);
  free (name);
  SET_DECL_ASSEMBLER_NAME (var, DECL_NAME (var));
  TREE_STATIC (var) = 1;
  TREE_PUBLIC (var) = 0;
  TREE_ADDRESSABLE (var) = 1;
  TREE_USED (var) = 1;
  DECL_ARTIFICIAL (var) = 1;
  DECL_IGNORED_P (var) = 1;
  /* Keep the site even if every call of the function is inlined and the body dropped: the
   * section then always exists when the module constructor references its bounds. */
  DECL_PRESERVE_P (var) = 1;
  /* Exactly 8: without DECL_USER_ALIGN GCC raises the alignment of statics of 32 bytes or
   * more (a site has 40) to 32 and the section stops being a dense array. */
  SET_DECL_ALIGN (var, 64);
  DECL_USER_ALIGN (var) = 1;
  DECL_INITIAL (var) = init;
  return var;
}

/* The static descriptor of FNDECL, placed in PERFGROUP_SITES_SECTION. A COMDAT function's
 * (inline, template: emitted by every unit that uses it) is a hidden COMDAT variable of its
 * own instead, outside the section, so the module keeps one whichever units emit the function
 * (as perfgroup-clang's); the unit's section gets an entry pointing at it
 * (PERFGROUP_SITE_F_INDIRECT, abi.h), which the runtime registers it by. It cannot go in the
 * section: GCC keys named sections by name, so every COMDAT variable of a unit in one named
 * section lands in the COMDAT group of the first one (two units with different sets of inline
 * functions then define the same site twice: corpus comdat_sets.cc), and refuses a COMDAT
 * and a plain variable in one named section ("section type conflict"). Not in the function's
 * group either: a unit that inlined every call emits the site without the function. */
static tree
build_site (tree fndecl, const char *attr, const char *file)
{
  tree var = site_var ("__perfgroup_site_", fndecl, site_init (fndecl, attr, file, 0, null_pointer_node));
  if (!(TREE_PUBLIC (fndecl) && (DECL_COMDAT (fndecl) || DECL_ONE_ONLY (fndecl))))
    {
      set_decl_section_name (var, PERFGROUP_SITES_SECTION);
      varpool_node::finalize_decl (var);
      return var;
    }
  TREE_PUBLIC (var) = 1;
  DECL_VISIBILITY (var) = VISIBILITY_HIDDEN;
  DECL_VISIBILITY_SPECIFIED (var) = 1;
  make_decl_one_only (var, DECL_ASSEMBLER_NAME (var)); /* after DECL_INITIAL: not common */
  varpool_node::finalize_decl (var);
  tree entry = site_var ("__perfgroup_isite_", fndecl,
                         site_init (fndecl, attr, file, PERFGROUP_SITE_F_INDIRECT,
                                    build_fold_addr_expr_with_type (var, ptr_type_node)));
  set_decl_section_name (entry, PERFGROUP_SITES_SECTION);
  varpool_node::finalize_decl (entry);
  return var;
}

static tree
extern_hidden_site_symbol (const char *name)
{
  tree var = build_decl (BUILTINS_LOCATION, VAR_DECL, get_identifier (name), site_type);
  SET_DECL_ASSEMBLER_NAME (var, DECL_NAME (var));
  TREE_PUBLIC (var) = 1;
  DECL_EXTERNAL (var) = 1;
  DECL_ARTIFICIAL (var) = 1;
  TREE_ADDRESSABLE (var) = 1;
  /* Hidden: the linker defines it per module, it must never bind to another module's. */
  DECL_VISIBILITY (var) = VISIBILITY_HIDDEN;
  DECL_VISIBILITY_SPECIFIED (var) = 1;
  return var;
}

/* Once per translation unit that has a site: a constructor registering the module's sites. */
static void
emit_module_constructor (void)
{
  static bool done;
  if (done)
    return;
  done = true;
  tree start = extern_hidden_site_symbol (PERFGROUP_SITES_START_NAME);
  tree stop = extern_hidden_site_symbol (PERFGROUP_SITES_STOP_NAME);
  tree call = build_call_expr (register_decl, 3,
                               build_int_cst (unsigned_type_node, PERFGROUP_ABI_VERSION),
                               build_fold_addr_expr_with_type (start, ptr_type_node),
                               build_fold_addr_expr_with_type (stop, ptr_type_node));
  tree body = NULL_TREE;
  if (weak_hooks)
    call = build3 (COND_EXPR, void_type_node,
                   build2 (NE_EXPR, boolean_type_node, build_fold_addr_expr (register_decl),
                           null_pointer_node),
                   call, NULL_TREE);
  append_to_statement_list (call, &body);

  /* What cgraph_build_static_cdtor does, with the ABI's name for the function. It stays local
   * to the translation unit: every TU's .init_array entry would call it anyway, so a weak or
   * COMDAT copy would save only bytes, and LTO merges all the constructors into one. */
  function *saved_fun = cfun; /* we are inside the pass of another function */
  tree saved_decl = current_function_decl;
  tree fn = build_decl (BUILTINS_LOCATION, FUNCTION_DECL, get_identifier (PERFGROUP_MODULE_CTOR_NAME),
                        build_function_type_list (void_type_node, NULL_TREE));
  SET_DECL_ASSEMBLER_NAME (fn, DECL_NAME (fn));
  tree result = build_decl (BUILTINS_LOCATION, RESULT_DECL, NULL_TREE, void_type_node);
  DECL_ARTIFICIAL (result) = 1;
  DECL_CONTEXT (result) = fn;
  DECL_RESULT (fn) = result;
  current_function_decl = fn;
  allocate_struct_function (fn, false);
  TREE_STATIC (fn) = 1;
  TREE_USED (fn) = 1;
  DECL_ARTIFICIAL (fn) = 1;
  DECL_IGNORED_P (fn) = 1;
  DECL_UNINLINABLE (fn) = 1;
  DECL_NO_INSTRUMENT_FUNCTION_ENTRY_EXIT (fn) = 1;
  DECL_FUNCTION_SPECIFIC_OPTIMIZATION (fn) = optimization_default_node;
  DECL_FUNCTION_SPECIFIC_TARGET (fn) = target_option_default_node;
  DECL_SAVED_TREE (fn) = body;
  DECL_INITIAL (fn) = make_node (BLOCK);
  BLOCK_SUPERCONTEXT (DECL_INITIAL (fn)) = fn;
  TREE_USED (DECL_INITIAL (fn)) = 1;
  /* Priority 101, the first one open to programs: sites are known before ordinary
   * constructors run instrumented code (the runtime copes with either order). */
  DECL_STATIC_CONSTRUCTOR (fn) = 1;
  decl_init_priority_insert (fn, MAX_RESERVED_INIT_PRIORITY + 1);
  gimplify_function_tree (fn);
  cgraph_node::add_new_function (fn, false);
  set_cfun (saved_fun);
  current_function_decl = saved_decl;
}

/* ---- The pass -------------------------------------------------------------------------- */

/* tok = 0; if (<not a re-entry>) tok = enter(&site); try { BODY } finally { if (tok) exit(&site, tok); }
 * (add_enter, add_exit; weak-hooks: if (&enter) tok = enter(&site)). */
/* tok = __perfgroup_enter (&site) at IN, and __perfgroup_exit (&site, tok) at OUT. */
static void
build_hook_calls (tree site, tree tok, location_t in, location_t out, gcall **enter, gcall **leave)
{
  *enter = gimple_build_call (enter_decl, 1, build_fold_addr_expr_with_type (site, ptr_type_node));
  gimple_call_set_lhs (*enter, tok);
  gimple_set_location (*enter, in);
  *leave = gimple_build_call (exit_decl, 2, build_fold_addr_expr_with_type (site, ptr_type_node),
                              tok);
  gimple_set_location (*leave, out);
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
  gcall *leave = gimple_build_call (exit_decl, 2,
                                    build_fold_addr_expr_with_type (info->site, ptr_type_node),
                                    info->tok);
  gimple_set_location (leave, gimple_location (call));
  gimple_seq seq = NULL;
  add_exit (&seq, info->tok, leave);
  gimple_seq_add_stmt (&seq, gimple_build_assign (info->done, boolean_true_node));
  gsi_insert_seq_before (gsi, seq, GSI_SAME_STMT);
  gimple_call_set_tail (call, false);
  info->n++;
  return NULL_TREE;
}

static void
wrap_body (function *fun, tree site, bool coro)
{
  tree fndecl = fun->decl;
  tree tok = create_tmp_var (uint64_type_node, "perfgroup_tok");
  gcall *enter, *leave;
  build_hook_calls (site, tok, DECL_SOURCE_LOCATION (fndecl), fun->function_end_locus, &enter,
                    &leave);

  coro_transfer_info info = { site, tok, NULL_TREE, 0 };
  if (coro)
    {
      info.done = create_tmp_var (boolean_type_node, "perfgroup_transferred");
      struct walk_stmt_info wi;
      memset (&wi, 0, sizeof wi);
      wi.info = &info;
      gimple_seq inner = gimple_body (fndecl);
      walk_gimple_seq_mod (&inner, end_before_transfer, NULL, &wi);
      gimple_set_body (fndecl, inner);
    }
  gimple_seq cleanup = NULL;
  tree skip = NULL_TREE;
  if (info.n)
    { /* if (!perfgroup_transferred) exit (...) */
      tree yes = create_artificial_label (UNKNOWN_LOCATION);
      skip = create_artificial_label (UNKNOWN_LOCATION);
      gimple_seq_add_stmt (&cleanup, gimple_build_cond (EQ_EXPR, info.done, boolean_false_node,
                                                        yes, skip));
      gimple_seq_add_stmt (&cleanup, gimple_build_label (yes));
    }
  add_exit (&cleanup, tok, leave);
  if (skip)
    gimple_seq_add_stmt (&cleanup, gimple_build_label (skip));
  gtry *tf = gimple_build_try (gimple_body (fndecl), cleanup, GIMPLE_TRY_FINALLY);
  gimple_seq seq = NULL;
  if (info.n)
    gimple_seq_add_stmt (&seq, gimple_build_assign (info.done, boolean_false_node));
  add_enter (&seq, site, tok, enter);
  gimple_seq_add_stmt (&seq, tf);
  gbind *bind = gimple_build_bind (NULL_TREE, seq, NULL_TREE);
  gimple_seq body = NULL;
  gimple_seq_add_stmt (&body, bind); /* "lower" wants exactly one GIMPLE_BIND */
  gimple_set_body (fndecl, body);
}

/* OpenMP: the body of each `#pragma omp parallel` becomes a child function (work._omp_fn.0)
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

static unsigned
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
    inform (gimple_location (call), "perfgroup: %qs starts a thread: as its outermost frame it "
            "opens no implicit event (its calls do)", asm_name (fn));
  return NULL_TREE;
}

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
static tree
coro_ramp_of (tree fndecl) /* the ramp of an actor or a destroyer */
{
  if (!coro_get_ramp_function || !coro_get_actor_function || !DECL_ARTIFICIAL (fndecl))
    return NULL_TREE;
  return coro_get_ramp_function (fndecl);
}

static bool
is_coro_ramp (tree fndecl)
{
  return coro_get_actor_function && coro_get_actor_function (fndecl);
}

/* What elision (below) needs to know of each function this pass wrapped. */
struct hooked_fn {
  tree decl, site;       /* both stay reachable from the symbol table until elision */
  tree shown;            /* the function as the user wrote it: decl, or a coroutine's ramp */
  const char *attr, *file; /* "" when absent */
  bool omp;              /* holds an OpenMP region (parallel, task, host teams) charged
                          * through its site */
  bool coro;             /* a coroutine's actor: resumed through its handle */
};
static vec<hooked_fn> hooked;

static unsigned int
instrument_function (function *fun)
{
  tree fndecl = fun->decl;
  if (!gimple_body (fndecl))
    return 0;
  {
    struct walk_stmt_info wi;
    memset (&wi, 0, sizeof wi);
    walk_gimple_seq (gimple_body (fndecl), find_thread_create, NULL, &wi);
  }
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
        inform (DECL_SOURCE_LOCATION (shown), "perfgroup: %qs not instrumented: %s",
                asm_name (shown), why);
      return 0;
    }
  if (verbose)
    inform (DECL_SOURCE_LOCATION (shown), "perfgroup: instrumenting %qs (group %qs, file group %qs)",
            asm_name (shown), attr ? attr : "", file ? file : "");
  if (verbose && !strcmp (asm_name (shown), "main"))
    inform (DECL_SOURCE_LOCATION (shown), "perfgroup: %qs is the outermost frame of the "
            "main thread: it opens no implicit event (its calls do)", asm_name (shown));
  build_abi_trees ();
  tree site = build_site (shown, attr, file);
  sites.safe_push (std::make_pair (shown, site));
  if (root_fns.contains (shown))
    mark_site_root (site);
  bool omp = charge_omp_regions (fun, site) > 0;
  wrap_body (fun, site, ramp != NULL_TREE);
  emit_module_constructor ();
  hooked_fn h = { fndecl, site, shown, xstrdup (attr ? attr : ""), xstrdup (file ? file : ""),
                  omp, ramp != NULL_TREE };
  hooked.safe_push (h);
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

/* ---- Call-graph elision ---------------------------------------------------------------------
 *
 * A call inside a running group changes nothing (the group's stopwatch already runs): hooks
 * pay only where a group can be *entered*. Once every function of the unit has been wrapped
 * and lowered (the pass above runs function by function, before the call graph is complete),
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
 * perfgroup-clang decides with the same rules and the same verbose wording. */

static bool
is_hook_call_of (gimple *stmt, tree site)
{
  if (!is_gimple_call (stmt))
    return false;
  tree fn = gimple_call_fndecl (stmt);
  if (fn != enter_decl && fn != exit_decl)
    return false;
  tree arg = gimple_call_arg (stmt, 0);
  STRIP_NOPS (arg);
  return TREE_CODE (arg) == ADDR_EXPR && TREE_OPERAND (arg, 0) == site;
}

/* Is T one of the temporaries add_enter and wrap_body make (by name: create_tmp_var gives
 * "perfgroup_key.3")? ANY: the tokens too. */
static bool
is_our_tmp (tree t, bool any)
{
  static const char *const loads[] = { "perfgroup_key", "perfgroup_cur_mask", "perfgroup_both",
                                       "perfgroup_cfa", "perfgroup_at", "perfgroup_cur_sp" };
  static const char *const tokens[] = { "perfgroup_tok", "perfgroup_omp_tok" };
  if (!t || TREE_CODE (t) != VAR_DECL || !DECL_ARTIFICIAL (t) || !DECL_NAME (t))
    return false;
  const char *n = IDENTIFIER_POINTER (DECL_NAME (t));
  auto named = [n] (const char *p) { /* p, then the suffix create_tmp_var adds, or nothing */
    size_t l = strlen (p);
    return !strncmp (n, p, l) && !ISALNUM (n[l]) && n[l] != '_';
  };
  for (const char *p : loads)
    if (named (p))
      return true;
  if (any)
    for (const char *p : tokens)
      if (named (p))
        return true;
  return false;
}

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
        if (is_hook_call_of (stmt, site)
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
    return "a C++20 coroutine: resumed through its handle, from anywhere";
  if (TREE_PUBLIC (decl) || DECL_EXTERNAL (decl))
    return "externally visible: callers outside this unit";
  if (is_entry_point (node))
    return "address taken: may be called from anywhere";
  if (fn.omp)
    return "holds an OpenMP region";
  bool called = false;
  for (cgraph_edge *e = node->callers; e && !called; e = e->next_caller)
    called = reachable->contains (e->caller);
  if (!called)
    return "no direct caller in this unit";
  static const char *const why[] = {
    NULL,
    "called from %qs, which begins an event or a nested loop or is a thread's outermost frame",
    "called from %qs, in other groups",
    "called from %qs, which is not instrumented",
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
      else if (!strcmp (name, "main") || root_fns.contains (c)
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

static void
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
      const char *why = all_functions ? "all-functions: every instrumented function keeps its hooks"
                                      : keep_reason (*fn, index, &who);
      if (!why)
        elide.safe_push (i);
      if (!verbose)
        continue;
      location_t loc = DECL_SOURCE_LOCATION (fn->shown);
      if (!why)
        inform (loc, "perfgroup: %qs elided: every caller is in its groups, it is only ever "
                "a re-entry", asm_name (fn->shown));
      else
        {
          pretty_printer pp;
          pp_printf (&pp, why, who ? who : "");
          inform (loc, "perfgroup: %qs keeps its hooks: %s", asm_name (fn->shown),
                  pp_formatted_text (&pp));
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
    "default=GROUP map=FILE exclude=GLOB system-headers verbose weak-hooks all-functions; map=: "
    PGMAP_RULE_TEXT,
  };
  register_callback (plugin_name, PLUGIN_INFO, NULL, &pinfo);
  if (!parse_options (info->argc, info->argv))
    return 0; /* errors reported; the compiler exits non-zero */

  register_callback (plugin_name, PLUGIN_ATTRIBUTES, register_attributes, NULL);
  register_callback (plugin_name, PLUGIN_PRAGMAS, define_macro, NULL);
  register_callback (plugin_name, PLUGIN_START_UNIT, record_macro, NULL);
  register_callback (plugin_name, PLUGIN_REGISTER_GGC_ROOTS, NULL, (void *) roots);

  static struct register_pass_info pass = {
    new perfgroup_pass (g), "lower", 1, PASS_POS_INSERT_BEFORE,
  };
  register_callback (plugin_name, PLUGIN_PASS_MANAGER_SETUP, NULL, &pass);
  register_callback (plugin_name, PLUGIN_ALL_IPA_PASSES_START, elide_reentries, NULL);
  return 0;
}
