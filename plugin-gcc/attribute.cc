/* SPDX-License-Identifier: MIT */
/*
 * plugin-gcc/attribute.cc — the attribute that puts a function in a group, in every spelling:
 * __attribute__((perf_group("g"))), [[gnu::perf_group("g")]] and [[perfgroup::group("g")]]
 * (C++ and C2x). Declaration and definition with different groups: a warning, the definition
 * wins (perfgroup-clang's rule too).
 */
#include "plugin.h"

#include <string.h>

namespace perfgroup_gcc {

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
      warning (OPT_Wattributes, PGTEXT_ATTR_NOT_A_FUNCTION, spelled);
      *no_add_attrs = true;
      return NULL_TREE;
    }
  tree arg = args ? PG_STRIP_ARG (TREE_VALUE (args)) : NULL_TREE;
  if (!arg || TREE_CODE (arg) != STRING_CST
      || TYPE_PRECISION (TREE_TYPE (TREE_TYPE (arg))) != TYPE_PRECISION (char_type_node))
    {
      error (PGTEXT_ATTR_NOT_A_STRING, spelled);
      *no_add_attrs = true;
      return NULL_TREE;
    }
  const char *group = TREE_STRING_POINTER (arg);
  if (!*group)
    {
      error (PGTEXT_ATTR_EMPTY, spelled);
      *no_add_attrs = true;
      return NULL_TREE;
    }
  if (strlen (group) + 1 != (size_t) TREE_STRING_LENGTH (arg))
    {
      error (PGTEXT_ATTR_NUL, spelled);
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

void
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
const char *
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
  warning_at (DECL_SOURCE_LOCATION (fndecl), OPT_Wattributes, PGTEXT_ATTR_CONFLICT, fndecl,
              chosen, earlier);
  return chosen;
}

} // namespace perfgroup_gcc
