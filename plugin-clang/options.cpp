/* SPDX-License-Identifier: MIT */
/*
 * plugin-clang/options.cpp — the -fplugin-arg-perfgroup-NAME[=VALUE] options of
 * perfgroup-clang.so, parsed once per compile (the AST action's ParseArgs). Same names, meaning
 * and error texts as the GCC plugin's (common/plugin_texts.h); every error names the exact flag.
 *
 *   default=GROUP   file group of every function of the TU not matched by map=
 *   map=FILE        "GLOB GROUP" lines, first match wins ('/'-less globs match the basename;
 *                   others the file's absolute real path, relative to FILE's directory unless
 *                   they start with '/' or '*': common/pathmap.h, shared with the GCC plugin)
 *   exclude=GLOB[,GLOB...]  never instrument matching functions (name, qualified, mangled, file;
 *                   relative file globs from the working directory)
 *   system-headers  let default=/map= apply inside system headers
 *   verbose         one note per function with a group: instrumented, or why not; with
 *                   map=, one per file: the glob that gave its group, or none
 *   weak-hooks      hooks declared weak, every call guarded: objects link without the runtime
 *   all-functions   no call-graph elision: every instrumented function keeps its hooks (the
 *                   profiling mode: trace mode's full call tree)
 */
#include "plugin.h"

#include "clang/Frontend/CompilerInstance.h"
#include "llvm/Support/MemoryBuffer.h"

#include "llvm-compat.h" /* after clang/LLVM: every version #if */
#include "../common/pathmap.h" /* the map's path rule, shared with the GCC plugin */

#include <unistd.h>

using namespace clang;

namespace perfgroup_clang {

/* Option errors: one line, naming the exact flag. */
static void report(DiagnosticsEngine &D, const std::string &text)
{
    D.Report(D.getCustomDiagID(DiagnosticsEngine::Error, "%0")) << text;
}

/* Anchors E.glob at DIR (pgmap_anchor); a glob too long to anchor is an error naming FLAGTEXT. */
static bool anchorGlob(DiagnosticsEngine &D, const std::string &dir, MapEntry &e,
                       const std::string &flagText)
{
    char buf[PGMAP_PATH_MAX];
    e.kind = pgmap_anchor(dir.c_str(), e.glob.c_str(), buf);
    if (e.kind < 0)
        report(D, pgFormat(PGTEXT_GLOB_TOO_LONG, flagText.c_str(), e.glob.c_str()));
    e.pattern = e.kind < 0 ? "" : buf;
    return e.kind >= 0;
}

/* Reads map=FILE: lines "GLOB GROUP", '#' starts a comment, blank lines are fine. Stops at
 * the first problem. */
static bool readMap(DiagnosticsEngine &D, const std::string &path, Options &o)
{
    auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
    if (!buf) {
        report(D, pgFormat(PGTEXT_MAP_CANNOT_OPEN "%s", path.c_str(), path.c_str(),
                           buf.getError().message().c_str()));
        return false;
    }
    char dir[PGMAP_PATH_MAX];
    if (pgmap_map_dir(o.cwd.c_str(), path.c_str(), dir) < 0) {
        report(D, pgFormat(PGTEXT_MAP_PATH_TOO_LONG, path.c_str()));
        return false;
    }
    o.lastMap = path;
    llvm::StringRef text = (*buf)->getBuffer();
    unsigned lineno = 0;
    while (!text.empty()) {
        auto [line, rest] = text.split('\n');
        text = rest;
        lineno++;
        if (line.size() >= 4095) { /* the GCC plugin's line buffer */
            report(D, pgFormat(PGTEXT_MAP_LINE_TOO_LONG, path.c_str(), lineno, path.c_str()));
            return false;
        }
        std::string copy = line.str();
        char *glob, *group;
        int fields = pgmap_split_line(&copy[0], &glob, &group);
        if (fields == 0) continue;
        if (fields < 0) {
            report(D, pgFormat(PGTEXT_MAP_BAD_LINE, path.c_str(), lineno, path.c_str()));
            return false;
        }
        MapEntry e{glob, "", 0, group, path, lineno};
        if (!anchorGlob(D, dir, e, PGTEXT_FLAG "map=" + path)) return false;
        o.map.push_back(e);
    }
    return true;
}

bool parseOptions(const CompilerInstance &CI, const std::vector<std::string> &args, Options &o)
{
    DiagnosticsEngine &D = CI.getDiagnostics();
    bool ok = true;
    /* Relative paths are the working directory's: -working-directory's if given */
    char here[PGMAP_PATH_MAX];
    o.cwd = getcwd(here, sizeof here) ? here : "."; /* "." : realpath(3) still finds it */
    const std::string &wd = CI.getFileSystemOpts().WorkingDir;
    if (!wd.empty()) o.cwd = wd[0] == '/' ? wd : o.cwd + "/" + wd;
    for (const std::string &a : args) {
        size_t eq = a.find('=');
        std::string key = a.substr(0, eq);
        bool hasValue = eq != std::string::npos;
        std::string value = hasValue ? a.substr(eq + 1) : "";
        bool wantsValue = key == "default" || key == "map" || key == "exclude";
        bool isSwitch = key == "system-headers" || key == "verbose" || key == "weak-hooks" ||
                        key == "all-functions";
        if (!wantsValue && !isSwitch) {
            report(D, pgFormat(PGTEXT_OPT_UNKNOWN, key.c_str()));
            ok = false;
        } else if (wantsValue && value.empty()) {
            report(D, pgFormat(PGTEXT_OPT_NEEDS_VALUE, key.c_str(), key.c_str(),
                               key == "default" ? "GROUP" : key == "map" ? "FILE" : "GLOB"));
            ok = false;
        } else if (isSwitch && hasValue) {
            report(D, pgFormat(PGTEXT_OPT_TAKES_NO_VALUE, key.c_str(), key.c_str(), value.c_str()));
            ok = false;
        } else if (key == "default") {
            if (!o.defaultGroup.empty() && o.defaultGroup != value) {
                report(D, pgFormat(PGTEXT_OPT_DEFAULT_CONFLICT, value.c_str(),
                                   o.defaultGroup.c_str()));
                ok = false;
            }
            o.defaultGroup = value;
        } else if (key == "map") {
            ok &= readMap(D, value, o);
        } else if (key == "exclude") {
            llvm::SmallVector<llvm::StringRef, 4> globs;
            llvm::StringRef(value).split(globs, ',', -1, false);
            for (llvm::StringRef g : globs) {
                MapEntry x{g.str(), "", 0, "", "", 0};
                ok &= anchorGlob(D, o.cwd, x, PGTEXT_FLAG "exclude=" + value);
                o.exclude.push_back(x);
            }
        } else if (key == "system-headers") {
            o.systemHeaders = true;
        } else if (key == "weak-hooks") {
            o.weakHooks = true;
        } else if (key == "all-functions") {
            o.allFunctions = true;
        } else {
            o.verbose = true;
        }
    }
    return ok;
}

} // namespace perfgroup_clang
