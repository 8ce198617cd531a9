/* SPDX-License-Identifier: MIT */
/*
 * gcc-compat.h — every GCC header and every GCC-version #if of the perfgroup GCC plugin.
 *
 * The plugin's files include only this file from GCC (through plugin.h), so they read the
 * same on every supported GCC. Built and tested: GCC 11 and 12 (Debian bookworm's gcc-N-plugin-dev).
 * Compiled, not run: GCC 13 and 14 (their plugin headers from Debian trixie,
 * scripts/headers.sh). Older releases lack pieces the plugin relies on (symtab states of GCC 10+, attribute_spec::exclude, the
 * `final override` pass methods of GCC 11's pass manager); newer ones changed the
 * attribute-table registration, handled below.
 */
#ifndef PERFGROUP_GCC_COMPAT_H
#define PERFGROUP_GCC_COMPAT_H

#include "gcc-plugin.h"
/* plugin-version.h defines the static gcc_version that plugin_init checks (plugin.cc); the
 * plugin's other files include it for GCCPLUGIN_VERSION_MAJOR alone. The inline function
 * below refers to it so that no file warns it unused: not a `#pragma GCC diagnostic`
 * around the include, which the precompiled header of this file (plugin-gcc/CMakeLists.txt)
 * does not keep before GCC 13. */
#include "plugin-version.h"
static inline const struct plugin_gcc_version *pg_gcc_version (void) { return &gcc_version; }

#if GCCPLUGIN_VERSION_MAJOR < 11
#error "perfgroup.so needs GCC 11 or newer"
#endif

#include "tree.h"
#include "tree-pass.h"
#include "context.h"
#include "function.h"
#include "basic-block.h"
#include "gimple.h"
#include "gimple-iterator.h"
#include "gimple-walk.h"
#include "gimplify.h"
#include "tree-iterator.h"
#include "stringpool.h"
#include "attribs.h"
#include "cgraph.h"
#include "varasm.h"
#include "stor-layout.h"
#include "diagnostic.h"
#include "langhooks.h"
#include "langhooks-def.h"
#include "c-family/c-pragma.h"
#include "cpplib.h"
#include "toplev.h"
#include "intl.h"
#include "ggc.h"
#include "options.h"
#include "debug.h"

/* GCC 14 replaced the NULL-terminated attribute_spec arrays by array slices in a
 * scoped_attribute_specs. Register one attribute under one namespace either way. Checked
 * against GCC 14's sources (attribs.cc: register_scoped_attributes (const
 * scoped_attribute_specs &, bool ignored_p = false); c-attribs.cc: tables written
 * { "ns", { array } } with the same nine attribute_spec fields as GCC 11 and 12). The other
 * interfaces the plugin uses (gimple builders, cpp_callbacks::define, debug_hooks->define,
 * varpool/cgraph, pass_data, walk_gimple_seq) compile unchanged against 13's and 14's headers
 * (scripts/headers.sh); what they do there was not run. */
#if GCCPLUGIN_VERSION_MAJOR >= 14
#define PG_REGISTER_SCOPED_ATTRIBUTE(spec_array, ns)                                          \
  do {                                                                                       \
    static const scoped_attribute_specs pg_specs_ = { ns, { spec_array, 1 } };               \
    register_scoped_attributes (pg_specs_, false);                                           \
  } while (0)
#else
#define PG_REGISTER_SCOPED_ATTRIBUTE(spec_array, ns) register_scoped_attributes (spec_array, ns)
#endif

/* C++ front ends wrap attribute arguments in location wrappers since GCC 9. */
#define PG_STRIP_ARG(t) tree_strip_any_location_wrapper (t)

/* The C family's preprocessor reader. It exists in cc1 and cc1plus but NOT in lto1: a strong
 * reference would stop lto1 from loading the plugin (-flto links with -fplugin=), so weak. */
extern cpp_reader *parse_in __attribute__ ((weak));

/* C++20 coroutines: the C++ front end's map between a coroutine (the ramp: the function the
 * user wrote, as called) and the two functions it splits it into, the actor (the body, run at
 * every resumption) and the destroyer (which calls the actor to destroy the frame). Defined in
 * cc1plus (cp/coroutines.cc, exported: `nm -D cc1plus`) of GCC 11 and 12, with the same
 * signatures in a later revision of cp/coroutines.cc read for this (13 and 14 themselves not
 * checked); absent from cc1 and lto1, hence weak: null there, and no coroutine exists. */
extern tree coro_get_ramp_function (tree) __attribute__ ((weak));
extern tree coro_get_actor_function (tree) __attribute__ ((weak));

#endif /* PERFGROUP_GCC_COMPAT_H */
