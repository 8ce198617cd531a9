/* SPDX-License-Identifier: MIT */
/*
 * plugin-gcc/select.cc — which functions are instrumented, with which groups.
 *
 *   attribute group   perf_group("g") (attribute.cc)
 *   file group        map= (first matching glob), else default= (options.cc). Not applied to
 *                     functions defined in system headers unless system-headers is given.
 *   A function is instrumented if it has either group and is not skipped (skip_reason()).
 */
#include "plugin.h"

#include <fnmatch.h>
#include <string.h>

namespace perfgroup_gcc {

const char *
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
const char *
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
    return PGTEXT_SKIP_NAKED;
  /* The user's explicit opt-out (PERF_GROUP_NONE), honoured like -finstrument-functions does;
   * the attribute itself is checked because GCC sets DECL_NO_INSTRUMENT_FUNCTION_ENTRY_EXIT
   * on every function when -finstrument-functions is off. */
  if (lookup_attribute ("no_instrument_function", DECL_ATTRIBUTES (fndecl)))
    return PGTEXT_SKIP_NO_INSTRUMENT;
  /* The runtime's own functions: instrumenting them would recurse into the hooks. */
  const char *n = DECL_NAME (fndecl) ? IDENTIFIER_POINTER (DECL_NAME (fndecl)) : "";
  if (!strncmp (n, "__perfgroup", 11) || !strncmp (n, "perfgroup_", 10))
    return PGTEXT_SKIP_RUNTIME;
  if (excluded (fndecl))
    return PGTEXT_SKIP_EXCLUDED;
  return NULL;
}

const char *
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

} // namespace perfgroup_gcc
