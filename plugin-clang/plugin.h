/* SPDX-License-Identifier: MIT */
/*
 * plugin-clang/plugin.h — what the files of perfgroup-clang.so call of each other: one section
 * per file, in the order a function meets them (plugin.cpp has the overview). Everything is in
 * namespace perfgroup_clang and hidden; only llvmGetPassPluginInfo and the two registries'
 * entries are seen by clang. The Instrumenter class, shared by instrument.cpp and
 * coroutines.cpp, is in instrument.h.
 */
#ifndef PERFGROUP_CLANG_PLUGIN_H
#define PERFGROUP_CLANG_PLUGIN_H

#include "table.h"

#include <cstdarg>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

/* The texts both plugins print word for word: quoted with '', a value is %s (pgFormat), or
 * %0, %1... in a custom diagnostic (pgDiagFormat). */
#define PGTEXT_Q(x) "'" x "'"
#define PGTEXT_QS "'%s'"
#define PGTEXT_DECL "%s"
#include "../common/plugin_texts.h"

namespace clang {
class ASTConsumer;
class CallExpr;
class CompilerInstance;
class FunctionDecl;
class DiagnosticsEngine;
} // namespace clang

namespace llvm {
class Function;
class Module;
class PassBuilder;
} // namespace llvm

namespace perfgroup_clang {

/* A text of plugin_texts.h with its values filled in, printf style. */
__attribute__((format(printf, 1, 2))) inline std::string pgFormat(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(nullptr, 0, fmt, ap);
    va_end(ap);
    std::string s(n > 0 ? size_t(n) : 0, '\0');
    va_start(ap, fmt);
    vsnprintf(&s[0], s.size() + 1, fmt, ap);
    va_end(ap);
    return s;
}

/* A text of plugin_texts.h as a custom diagnostic's format, made at compile time (clang's
 * getCustomDiagID takes a string literal's array): its %s become %0, %1, ... (as long). */
template <size_t N> struct DiagFormat {
    char text[N];
};
template <size_t N> constexpr DiagFormat<N> pgDiagFormat(const char (&t)[N])
{
    DiagFormat<N> f{};
    char n = '0';
    for (size_t i = 0; i < N; i++) {
        f.text[i] = t[i];
        if (t[i] == '%' && i + 1 < N && t[i + 1] == 's') f.text[++i] = n++;
    }
    return f;
}

/* ---- options.cpp: -fplugin-arg-perfgroup-* (same names, meaning and texts as the GCC plugin) */

/* A glob as written and as matched (pgmap_anchor); for map=, its group, map and line. */
struct MapEntry {
    std::string glob, pattern;
    int kind;
    std::string group, map;
    unsigned line;
};

struct Options {
    std::string cwd;                  /* the compile's working directory (physical) */
    std::string defaultGroup;         /* default=GROUP */
    std::vector<MapEntry> map;        /* map=FILE, in file order: first match wins */
    std::string lastMap;              /* the last map=FILE: the verbose note names it */
    std::vector<MapEntry> exclude;    /* exclude=GLOB[,GLOB...] */
    bool systemHeaders = false;       /* system-headers */
    bool verbose = false;             /* verbose: a note per function with a group */
    bool weakHooks = false;           /* weak-hooks: objects link without the runtime */
    bool allFunctions = false;        /* all-functions: no call-graph elision (profiling mode) */
    bool fileGroups() const { return !defaultGroup.empty() || !map.empty(); }
};

/* Fills `o` from the plugin's arguments; false after reporting errors. */
bool parseOptions(const clang::CompilerInstance &CI, const std::vector<std::string> &args,
                  Options &o);

/* ---- attribute.cpp: perf_group("g"), lowered to annotate("perfgroup:g") --------------------- */

/* The attribute group of a definition ("" if none); reports an empty group and a declaration
 * that says otherwise (the definition wins). */
std::string attributeGroup(clang::DiagnosticsEngine &Diags, const clang::FunctionDecl *FD);
/* Some declaration of FD carries an annotate attribute (ours or not). */
bool anyAnnotation(const clang::FunctionDecl *FD);

/* ---- select.cpp: which functions, which groups ---------------------------------------------- */

/* The front end's walk of a translation unit, which writes the table (table.h). */
std::unique_ptr<clang::ASTConsumer> makeTableWriter(clang::CompilerInstance &CI, Options O);

/* What the pass knows about one function it is asked to instrument. */
struct Want {
    std::string attr, filegroup, file;
    unsigned line = 0;
    std::string skip;
    std::string display; /* the site's function name if not the IR name */
    bool inl = false;    /* the front end says: inline or a template instantiation */
};
using WorkList = std::vector<std::pair<llvm::Function *, Want>>;

/* The functions of M to instrument, from the table and the annotations (table.cpp). */
WorkList selectFunctions(llvm::Module &M, const Table &table,
                         const std::map<llvm::Function *, Want> &annotated);

/* ---- table.cpp: the pass's inputs (the table's encoding: table.h) ---------------------------- */

/* The front end's table out of the module (false if there is none), and the perfgroup:
 * entries of llvm.global.annotations. */
bool takeTable(llvm::Module &M, Table &t);
void takeAnnotations(llvm::Module &M, std::map<llvm::Function *, Want> &out);

/* ---- instrument.cpp, coroutines.cpp: what the pass adds (the Instrumenter: instrument.h) ---- */

/* Instruments `work` (coroutines cut into runs) and adds the module constructor. */
void instrumentAll(llvm::Module &M, const WorkList &work, bool cxx, bool weak,
                   const std::set<const llvm::Function *> &roots);
/* After every setjmp call of the module's functions: the runtime's landing hook (abi.h). */
unsigned addLandings(llvm::Module &M);
/* The function pass that keeps CoroElide's frames safe in an instrumented coroutine's caller. */
void registerCoroElideTailFix(llvm::PassBuilder &PB);

/* ---- threads.cpp: thread roots, OpenMP regions ----------------------------------------------- */

/* The function a pthread_create/thrd_create call starts, or nullptr (front end: the note). */
const clang::FunctionDecl *startRoutineOf(const clang::CallExpr *CE);
/* The functions M passes as start routines (pass: PERFGROUP_SITE_F_ROOT). */
std::set<const llvm::Function *> threadRoots(llvm::Module &M);
/* Adds to `work` the outlined OpenMP bodies of its functions, as those functions. */
void chargeOmpRegions(WorkList &work);

/* ---- elide.cpp: call-graph elision ------------------------------------------------------------ */

/* Takes out of `work` the functions that are only ever re-entries (notes each verdict with
 * verbose). */
void elideReentries(WorkList &work, const Table &table, const std::set<const llvm::Function *> &roots);

} // namespace perfgroup_clang

#endif /* PERFGROUP_CLANG_PLUGIN_H */
