/* SPDX-License-Identifier: MIT */
/*
 * plugin-gcc/options.cc — the -fplugin-arg-perfgroup-NAME[=VALUE] options of perfgroup.so,
 * parsed once in plugin_init. Same names, meaning and error texts as perfgroup-clang's
 * (common/plugin_texts.h); every error names the exact flag.
 *
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
 */
#include "plugin.h"

#include <stdio.h>
#include <string.h>

namespace perfgroup_gcc {

const char *default_group;
vec<map_entry> map_entries;
vec<exclude_glob> exclude_globs;
const char *last_map;
char cwd[PGMAP_PATH_MAX];
bool system_headers;
bool verbose;
bool weak_hooks;
bool all_functions;

/* Anchors GLOB at DIR (pgmap_anchor); a glob too long to anchor is an error naming FLAGTEXT. */
static int
anchor_glob (const char *dir, const char *glob, char **pattern, const char *flagtext)
{
  char buf[PGMAP_PATH_MAX];
  int kind = pgmap_anchor (dir, glob, buf);
  if (kind < 0)
    error (PGTEXT_GLOB_TOO_LONG, flagtext, glob);
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
      error (PGTEXT_MAP_CANNOT_OPEN "%m", file, file);
      return false;
    }
  char dir[PGMAP_PATH_MAX];
  char *flagtext = concat (PGTEXT_FLAG "map=", file, NULL);
  if (pgmap_map_dir (cwd, file, dir) < 0)
    {
      error (PGTEXT_MAP_PATH_TOO_LONG, file);
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
          error (PGTEXT_MAP_LINE_TOO_LONG, file, lineno, file);
          ok = false;
          break;
        }
      char *glob, *group;
      int fields = pgmap_split_line (buf, &glob, &group);
      if (fields == 0)
        continue; /* blank or comment line */
      if (fields < 0)
        {
          error (PGTEXT_MAP_BAD_LINE, file, lineno, file);
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
bool
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
          error (PGTEXT_OPT_UNKNOWN, key);
          ok = false;
          continue;
        }
      if (wants_value && (!value || !*value))
        {
          error (PGTEXT_OPT_NEEDS_VALUE, key, key,
                 !strcmp (key, "default") ? "GROUP" : !strcmp (key, "map") ? "FILE" : "GLOB");
          ok = false;
          continue;
        }
      if (is_switch && value)
        {
          error (PGTEXT_OPT_TAKES_NO_VALUE, key, key, value);
          ok = false;
          continue;
        }
      if (!strcmp (key, "default"))
        {
          if (default_group && strcmp (default_group, value))
            {
              error (PGTEXT_OPT_DEFAULT_CONFLICT, value, default_group);
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
              x.kind = anchor_glob (cwd, g, &x.pattern, concat (PGTEXT_FLAG "exclude=", value, NULL));
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

} // namespace perfgroup_gcc
