/* SPDX-License-Identifier: MIT */
/*
 * plugin-clang/table.h — the decision table the front end (select.cpp) hands to the LLVM
 * pass (plugin.cpp, table.cpp), and its text encoding.
 *
 * The front end knows what the IR does not: constructors and destructors carrying the
 * attribute (clang 14 never annotates them), the file and line of every definition, system
 * headers, no_instrument_function, and the -fplugin-arg-perfgroup-* options. It writes one
 * row per function it wants instrumented (or explicitly skipped), keyed by the function's
 * mangled IR name, into a string constant in the module itself:
 *
 *     @__perfgroup_table = internal constant [N x i8] c"perfgroup-table 1\0A...",
 *                          section "llvm.metadata"
 *
 * so the table travels with the IR: through -save-temps' .bc file, -emit-llvm output and
 * `opt`. A global in section "llvm.metadata" is never written to an object file, so a module
 * compiled without the pass carries no trace of it. The pass reads and deletes it.
 *
 * Encoding: lines separated by '\n', fields by '\t'; '\\', '\t' and '\n' inside a field are
 * escaped as "\\\\", "\\t", "\\n".
 *
 *     perfgroup-table 1
 *     lang <c|c++>
 *     weak                  (present with weak-hooks: hooks declared weak, calls guarded)
 *     verbose               (present with verbose: the pass notes each elision verdict)
 *     all-functions         (present with all-functions: no call-graph elision)
 *     fn <name> <attr group> <file group> <file> <line> <skip reason or ""> <display or "">
 *        <"inline" or "">
 */
#ifndef PERFGROUP_CLANG_TABLE_H
#define PERFGROUP_CLANG_TABLE_H

#include <map>
#include <string>

namespace perfgroup_clang {

inline constexpr const char *TableMagic = "perfgroup-table 1";
inline constexpr const char *TableGlobal = "__perfgroup_table";
inline constexpr const char *AnnotationPrefix = "perfgroup:";

struct Row {
    std::string attr;      /* attribute group, "" if none */
    std::string filegroup; /* default=/map= group, "" if none */
    std::string file;      /* defining file as the compiler saw it */
    unsigned line = 0;
    std::string skip;      /* why the function must not be instrumented, "" to instrument */
    std::string display;   /* name for the site if not the IR name (g++-style lambda names) */
    bool inl = false;      /* inline, template or implicit instantiation: in N TUs */
};

struct Table {
    bool cxx = false;
    bool weak = false; /* weak-hooks */
    bool verbose = false;      /* verbose */
    bool allFunctions = false; /* all-functions: every instrumented function keeps its hooks */
    std::map<std::string, Row> rows; /* key: mangled IR function name */
};

std::string encodeTable(const Table &t);
/* Returns false (and leaves t partly filled) on a malformed text. */
bool decodeTable(const std::string &text, Table &t);

} // namespace perfgroup_clang

#endif
