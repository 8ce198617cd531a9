/* SPDX-License-Identifier: MIT */
/*
 * plugin-clang/plugin.cpp — perfgroup-clang.so, the Clang plugin: puts functions in
 * performance groups and wraps each one in an enter/exit hook pair that calls the perfgroup
 * runtime. One .so, two plugins: a front-end plugin (the AST action: __PERFGROUP__, options,
 * the decision table) and an LLVM pass plugin (the pass that adds the hooks). This file is
 * both entries and the pass's step for one module. The rest, one concern a file (plugin.h
 * declares what they share; the GCC plugin has a file of the same name for each):
 *
 *   options.cpp      -fplugin-arg-perfgroup-* (and the option list)
 *   attribute.cpp    perf_group("g"), lowered to annotate("perfgroup:g"); "the definition wins"
 *   select.cpp       which functions, which groups: the front end's walk that writes the table,
 *                    and the pass's choice among the module's functions
 *   instrument.cpp   the site, the hook pair (before/after listing), the module constructor
 *                    (instrument.h: the Instrumenter, shared with coroutines.cpp)
 *   threads.cpp      thread roots (pthread_create/thrd_create start routines), OpenMP regions
 *   coroutines.cpp   C++20 coroutines: runs between suspensions; the CoroElide fix
 *   elide.cpp        call-graph elision: no hooks where a group can only be re-entered
 *   table.h, table.cpp   the front end -> pass decision table: encoding, taken out of the module
 *   version.cpp      refuses to run in another clang release than the one it was built for
 *   llvm-compat.h    every LLVM/Clang-version #if
 *   ../common/plugin_texts.h   the texts both plugins print word for word
 *
 * ---- When it runs ---------------------------------------------------------------------------
 *
 * Clang 14 has no plugin hook into CodeGen. The front end's AST action pushes this .so's own
 * path onto CodeGenOpts.PassPlugins; clang then loads it as a pass plugin and
 * llvmGetPassPluginInfo registers the pass at PipelineStart — before inlining, at -O0..-O3
 * and in the -flto / -flto=thin pre-link pipelines, required (optnone cannot skip it). So one
 * -fplugin= flag is enough for ordinary compiles. Which functions get which groups is decided
 * by the front end (attribute, default=/map=/exclude=/system-headers, constructors and
 * destructors that clang never annotates, no_instrument_function, g++-style lambda names) and
 * handed over as a table inside the module (table.h); perfgroup: annotations written directly
 * (annotate("perfgroup:x")) are honoured as well. The pass consumes both, and marks what it
 * instrumented ("perfgroup-instrumented"): running it twice adds nothing.
 *
 * Where one flag is not enough (documented in docs/plugins.md, tested in tests/plugin-clang):
 *   -save-temps   cc1 runs -E (no plugin action: __PERFGROUP__ undefined), then AST -> .bc with
 *                 -disable-llvm-passes (no pass), then .bc -> .s (no AST). Add
 *                 -fpass-plugin=<this .so> -D__PERFGROUP__=1: the table travels in the .bc.
 *   .ll/.bc input no AST: add -fpass-plugin=<this .so>. Without it nothing is instrumented.
 *
 * ---- Debugging recipe ----------------------------------------------------------------------
 *   clang -fplugin=P -fplugin-arg-perfgroup-verbose -c x.c           decisions, one note each
 *   clang -fplugin=P -S -emit-llvm -o - x.c                         the instrumented IR
 *   clang -fplugin=P -S -emit-llvm -Xclang -disable-llvm-passes x.c -o x.ll
 *       IR before the pass, with the front end's table (@__perfgroup_table) in it; then
 *   opt -load=$(llvm-config-14 --libdir)/libclang-cpp.so.14 -load-pass-plugin=P \
 *       -passes=perfgroup,verify -S x.ll        (opt has no libclang-cpp of its own; the plugin
 *                                                links no clang/LLVM library)
 *   clang -fplugin=P -mllvm -print-after-all -c x.c 2>&1 | less   the pass among the others
 *   -save-temps: x.i/x.ii has PERF_GROUP expanded only with -D__PERFGROUP__=1; x.bc holds the
 *       table (llvm-dis x.bc) until the backend step's pass (-fpass-plugin=P) consumes it
 *   readelf -SW x.o | grep perfgroup; objdump -s -j perfgroup_sites x.o; readelf -r x.o
 *   PERFGROUP_TEXT=/dev/stderr ./app                                the runtime's text trace
 */
#include "plugin.h"

#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendPluginRegistry.h"
#include "clang/Lex/Preprocessor.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"

#include "llvm-compat.h" /* after clang/LLVM: every version #if */
#include "../common/pathmap.h" /* PGMAP_RULE_TEXT */
#include "instrument.h"          /* instrumentAll drives it */

#include <dlfcn.h>

#include <algorithm>

using namespace llvm;

namespace perfgroup_clang {

/* Every function of the work list: its hook pair (instrument.cpp), a coroutine's per run
 * (coroutines.cpp); then the module's constructor. */
void instrumentAll(Module &M, const WorkList &work, bool cxx, bool weak,
                   const std::set<const Function *> &roots)
{
    Instrumenter ins(M, cxx, weak);
    ins.Roots = roots;
    for (auto &fw : work) {
        if (!pgIsPresplitCoroutine(*fw.first)) {
            ins.instrument(*fw.first, fw.second);
        } else if (const char *why = ins.instrumentCoroutine(*fw.first, fw.second)) {
            /* the front end announced it as instrumented: say it is not, whatever verbose says */
            StringRef name = fw.second.display.empty() ? fw.first->getName() : StringRef(fw.second.display);
            errs() << fw.second.file << ':' << fw.second.line << ": warning: "
                   << pgFormat(PGTEXT_NOTE_SKIPPED, name.str().c_str(), why) << '\n';
        }
    }
    ins.emitModuleConstructor();
}

namespace {

/* ---- The front-end plugin ----------------------------------------------------------------- */

static void anchorForDladdr() {}

class Action : public clang::PluginASTAction {
protected:
    std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance &CI,
                                                          StringRef) override
    {
        clang::Preprocessor &PP = CI.getPreprocessor();
        PP.setPredefines(PP.getPredefines() + "#define __PERFGROUP__ 1\n");

        /* One -fplugin= must be enough: have CodeGen load this same .so as its pass plugin. */
        Dl_info info;
        if (dladdr(reinterpret_cast<void *>(&anchorForDladdr), &info) && info.dli_fname) {
            std::vector<std::string> &pp = CI.getCodeGenOpts().PassPlugins;
            if (std::find(pp.begin(), pp.end(), info.dli_fname) == pp.end())
                pp.push_back(info.dli_fname);
        }
        /* Only compiles that reach CodeGen get a table: a PCH or -fsyntax-only must not
         * carry one (it would be emitted again into every TU using the PCH). */
        namespace fe = clang::frontend;
        switch (CI.getFrontendOpts().ProgramAction) {
        case fe::EmitAssembly: case fe::EmitBC: case fe::EmitLLVM:
        case fe::EmitLLVMOnly: case fe::EmitCodeGenOnly: case fe::EmitObj:
            return makeTableWriter(CI, Opts);
        default:
            return std::make_unique<clang::ASTConsumer>();
        }
    }

    bool ParseArgs(const clang::CompilerInstance &CI, const std::vector<std::string> &args) override
    {
        return parseOptions(CI, args, Opts);
    }

    ActionType getActionType() override { return AddBeforeMainAction; }

private:
    Options Opts;
};

/* ---- The pass plugin ---------------------------------------------------------------------- */

/* The pass, once per module: inputs (table.cpp), choice (select.cpp), elision (elide.cpp),
 * OpenMP bodies (threads.cpp), hooks (instrument.cpp, coroutines.cpp). */
static bool runOnModule(Module &M)
{
    Table table;
    bool haveTable = takeTable(M, table);
    std::map<Function *, Want> annotated;
    takeAnnotations(M, annotated);

    /* Language for the personality routine: the front end knows; IR alone is guessed from
     * C++ symbols. */
    bool cxx = table.cxx, weak = table.weak;
    if (!haveTable)
        for (Function &F : M)
            if (pgStartsWith(F.getName(), "_Z") || F.getName() == "__gxx_personality_v0") cxx = true;

    WorkList work = selectFunctions(M, table, annotated);
    std::set<const Function *> roots = threadRoots(M);
    elideReentries(work, table, roots);
    chargeOmpRegions(work);
    /* a unit the plugin compiled (its table) or with work: where longjmps land */
    bool landings = (haveTable || !work.empty()) && addLandings(M) > 0;
    if (work.empty()) /* declare no hook in a module that calls none */
        return haveTable || !annotated.empty() || landings;
    instrumentAll(M, work, cxx, weak, roots);
    return true;
}

struct PerfGroupPass : PassInfoMixin<PerfGroupPass> {
    PreservedAnalyses run(Module &M, ModuleAnalysisManager &)
    {
        return runOnModule(M) ? PreservedAnalyses::none() : PreservedAnalyses::all();
    }
    /* Not skippable by optnone (-O0) or opt-bisect: hooks are part of the program. */
    static bool isRequired() { return true; }
};

} // namespace

} // namespace perfgroup_clang

using namespace perfgroup_clang;

static clang::FrontendPluginRegistry::Add<Action> RegisterAction(
    "perfgroup", "perfgroup instrumentation. Options: " PGTEXT_OPTIONS "; map=: " PGMAP_RULE_TEXT);

extern "C" __attribute__((visibility("default"))) PassPluginLibraryInfo llvmGetPassPluginInfo()
{
    return {LLVM_PLUGIN_API_VERSION, "perfgroup", "0.1", [](PassBuilder &PB) {
                /* Pipeline start: before inlining, at -O0..-O3 and in -flto/-flto=thin
                 * pre-link pipelines. */
                PB.registerPipelineStartEPCallback(
                    [](ModulePassManager &MPM, PgOptimizationLevel) { MPM.addPass(PerfGroupPass()); });
                registerCoroElideTailFix(PB);
                /* opt -load-pass-plugin=perfgroup-clang.so -passes=perfgroup */
                PB.registerPipelineParsingCallback(
                    [](StringRef name, ModulePassManager &MPM,
                       ArrayRef<PassBuilder::PipelineElement>) {
                        if (name != "perfgroup") return false;
                        MPM.addPass(PerfGroupPass());
                        return true;
                    });
            }};
}
