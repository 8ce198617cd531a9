/* SPDX-License-Identifier: MIT */
/*
 * common/plugin_texts.h — every text the GCC plugin (plugin-gcc/) and the Clang plugin
 * (plugin-clang/) must print word for word alike: option errors, attribute errors, the
 * verbose notes and the elision verdicts. One definition, as include/perfgroup/abi.h is for the
 * hook names: the misuse files of tests/plugin-gcc/misuse expect the same words from both
 * plugins, and the corpus compares their elision verdicts (tests/corpus/run_corpus.py).
 *
 * Each plugin defines, before including this header, how its diagnostics quote a text
 * (PGTEXT_Q), a value alone (PGTEXT_QS) and a declaration (PGTEXT_DECL):
 *
 *                          PGTEXT_Q(x)    PGTEXT_QS  PGTEXT_DECL  other values (%s, %u)
 *   plugin-gcc/plugin.h    "%<" x "%>"    "%qs"      "%qD"        GCC's diagnostic format
 *   plugin-clang/plugin.h  "'" x "'"      "'%s'"     "%s"         printf (pgFormat), or %0, %1...
 *                                                                 for a custom diagnostic
 *                                                                 (pgDiagFormat)
 *
 * A text's values come in the order they appear in it. Plain C preprocessor, no code: it goes
 * with GCC's system.h and with LLVM's headers alike.
 */
#ifndef PERFGROUP_PLUGIN_TEXTS_H
#define PERFGROUP_PLUGIN_TEXTS_H

#if !defined(PGTEXT_Q) || !defined(PGTEXT_QS) || !defined(PGTEXT_DECL)
#error "define PGTEXT_Q(x), PGTEXT_QS and PGTEXT_DECL before including plugin_texts.h"
#endif

/* ---- Options ------------------------------------------------------------------------------ */

/* Every option error names the exact flag. */
#define PGTEXT_FLAG "-fplugin-arg-perfgroup-"
/* The options, for the plugin's help text and for "unknown option". */
#define PGTEXT_OPTIONS "default=GROUP map=FILE exclude=GLOB system-headers verbose weak-hooks all-functions"
#define PGTEXT_OPTIONS_KNOWN                                                                      \
  "default=GROUP, map=FILE, exclude=GLOB, system-headers, verbose, weak-hooks, all-functions"

#define PGTEXT_OPT_UNKNOWN /* key */                                                              \
  "unknown option " PGTEXT_Q (PGTEXT_FLAG "%s") " (known: " PGTEXT_OPTIONS_KNOWN ")"
#define PGTEXT_OPT_NEEDS_VALUE /* key, key, GROUP|FILE|GLOB */                                    \
  PGTEXT_Q (PGTEXT_FLAG "%s") " needs a value: " PGTEXT_Q (PGTEXT_FLAG "%s=%s")
#define PGTEXT_OPT_TAKES_NO_VALUE /* key, key, value */                                           \
  PGTEXT_Q (PGTEXT_FLAG "%s") " takes no value (got " PGTEXT_Q (PGTEXT_FLAG "%s=%s") ")"
#define PGTEXT_OPT_DEFAULT_CONFLICT /* new group, earlier group */                                \
  PGTEXT_Q (PGTEXT_FLAG "default=%s") " conflicts with an earlier " PGTEXT_Q (PGTEXT_FLAG "default=%s")
/* flag as given (e.g. -fplugin-arg-perfgroup-exclude=a,b), glob */
#define PGTEXT_GLOB_TOO_LONG PGTEXT_QS ": the glob " PGTEXT_QS " is longer than a path can be"

/* map=FILE */
#define PGTEXT_MAP_CANNOT_OPEN /* file, file; then the system's reason (GCC %m, clang %s) */        \
  PGTEXT_Q (PGTEXT_FLAG "map=%s") ": cannot open " PGTEXT_QS ": "
#define PGTEXT_MAP_PATH_TOO_LONG /* file */                                                       \
  PGTEXT_Q (PGTEXT_FLAG "map=%s") ": the path of the map file is longer than a path can be"
#define PGTEXT_MAP_LINE_TOO_LONG /* file, line, file */                                           \
  "%s:%u: line too long (in " PGTEXT_Q (PGTEXT_FLAG "map=%s") ")"
#define PGTEXT_MAP_BAD_LINE /* file, line, file */                                                \
  "%s:%u: expected " PGTEXT_Q ("GLOB GROUP") " (in " PGTEXT_Q (PGTEXT_FLAG "map=%s") ")"

/* ---- The attribute (each: the attribute as spelled, perf_group or perfgroup::group) -------- */

#define PGTEXT_ATTR_NOT_A_FUNCTION PGTEXT_QS " attribute only applies to functions; ignored"
#define PGTEXT_ATTR_NOT_A_STRING                                                                  \
  PGTEXT_QS " attribute argument must be a string literal naming a group"
#define PGTEXT_ATTR_EMPTY PGTEXT_QS " attribute: the group name must not be empty"
#define PGTEXT_ATTR_NUL PGTEXT_QS " attribute: the group name must not contain a NUL character"
#define PGTEXT_ATTR_CONFLICT /* the definition, its group, the other declaration's group */       \
  PGTEXT_Q ("perf_group") " attribute: the definition of " PGTEXT_DECL " is in group "            \
  PGTEXT_QS " but an earlier declaration says " PGTEXT_QS "; the definition wins"

/* ---- Verbose: which functions, and why not ------------------------------------------------ */

#define PGTEXT_NOTE_INSTRUMENTING /* function, attribute group, file group ("" when none) */      \
  "perfgroup: instrumenting " PGTEXT_QS " (group " PGTEXT_QS ", file group "          \
  PGTEXT_QS ")"
#define PGTEXT_NOTE_SKIPPED /* function, why (a PGTEXT_SKIP_ or the plugin's own) */              \
  "perfgroup: " PGTEXT_QS " not instrumented: %s"
#define PGTEXT_NOTE_MAIN /* function */                                                           \
  "perfgroup: " PGTEXT_QS " is the outermost frame of the main thread: it opens no "        \
  "implicit event (its calls do)"
#define PGTEXT_NOTE_STARTS_THREAD /* function */                                                  \
  "perfgroup: " PGTEXT_QS " starts a thread: as its outermost frame it opens no implicit "  \
  "event (its calls do)"

/* Why a function with a group is not instrumented (the front ends' reasons). */
#define PGTEXT_SKIP_NAKED "naked function"
#define PGTEXT_SKIP_NO_INSTRUMENT "no_instrument_function attribute"
#define PGTEXT_SKIP_RUNTIME "perfgroup runtime function"
#define PGTEXT_SKIP_EXCLUDED "matches " PGTEXT_FLAG "exclude="

/* ---- Call-graph elision: the verdict on each instrumented function ------------------------ */

#define PGTEXT_NOTE_ELIDED /* function */                                                         \
  "perfgroup: " PGTEXT_QS " elided: every caller is in its groups, it is only ever a re-entry"
#define PGTEXT_NOTE_KEEPS /* function, a PGTEXT_KEEP_ */ "perfgroup: " PGTEXT_QS " keeps its hooks: %s"

/* Why a function keeps its hooks. */
#define PGTEXT_KEEP_ALL_FUNCTIONS "all-functions: every instrumented function keeps its hooks"
#define PGTEXT_KEEP_COROUTINE "a C++20 coroutine: resumed through its handle, from anywhere"
#define PGTEXT_KEEP_VISIBLE "externally visible: callers outside this unit"
#define PGTEXT_KEEP_ADDRESS_TAKEN "address taken: may be called from anywhere"
#define PGTEXT_KEEP_OPENMP "holds an OpenMP region"
#define PGTEXT_KEEP_NO_CALLER "no direct caller in this unit"
/* ... because of a caller (the first by name, among the worst): the caller's name */
#define PGTEXT_KEEP_CALLER_BEGINS                                                                 \
  "called from " PGTEXT_QS ", which begins an event or a nested loop or is a thread's "     \
  "outermost frame"
#define PGTEXT_KEEP_CALLER_OTHER_GROUPS "called from " PGTEXT_QS ", in other groups"
#define PGTEXT_KEEP_CALLER_NOT_INSTRUMENTED "called from " PGTEXT_QS ", which is not instrumented"

#endif /* PERFGROUP_PLUGIN_TEXTS_H */
