/* SPDX-License-Identifier: MIT */
/*
 * plugin-clang/elide.cpp — call-graph elision: no hooks where a group can only be re-entered
 * (the same rules as the GCC plugin's, plugin-gcc/elide.cc, and the same words:
 * common/plugin_texts.h).
 *
 * A call inside a running group changes nothing, so hooks pay only where a group can be
 * entered. An instrumented function gets no hooks when it can only be a re-entry: local
 * linkage (static, anonymous namespace); every use a direct call (no address taken: no
 * callback, function-pointer table, vtable, alias or llvm.used); no OpenMP region
 * (__kmpc_fork_call, __kmpc_fork_teams, __kmpc_omp_task_alloc: the outlined body is charged
 * through its site); at least one caller, and
 * every caller instrumented with the same attribute and file groups, neither beginning an
 * event or a nested loop (calls perfgroup_event_begin / perfgroup_nested_loop_begin) nor
 * `main` (a thread's root opens no implicit event, its callees do). The module is as CodeGen
 * left it (pipeline start: before inlining, at every -O level), so the uses are the source's
 * calls. An elided caller only runs inside its own group, so its elision never changes its
 * callees' verdict: one round over the uses is the fixed point. Nothing beyond the module.
 * all-functions (table.allFunctions) keeps every pair. Verbose notes word each verdict as GCC's
 * plugin does, so the corpus can compare the two.
 */
#include "plugin.h"

#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/Support/raw_ostream.h"

#include "llvm-compat.h" /* after LLVM: every version #if */

using namespace llvm;

namespace perfgroup_clang {

static bool callsNamed(const Function &F, StringRef a, StringRef b)
{
    for (const Instruction &I : instructions(F))
        if (auto *cb = dyn_cast<CallBase>(&I))
            if (const Function *c = cb->getCalledFunction())
                if (c->getName() == a || c->getName() == b) return true;
    return false;
}

/* Why F keeps its hooks, or "" if it is only ever a re-entry; `who` is the caller the reason
 * names (the first by name, as the GCC plugin picks it). */
static std::string keepReason(Function &F, const Want &w, const std::map<Function *, const Want *> &inst,
                              const std::set<const Function *> &roots, std::string &who)
{
    if (pgIsPresplitCoroutine(F)) return PGTEXT_KEEP_COROUTINE;
    if (!F.hasLocalLinkage()) return PGTEXT_KEEP_VISIBLE;
    F.removeDeadConstantUsers(); /* e.g. the llvm.global.annotations entry just taken out */
    for (const Use &u : F.uses()) {
        auto *cb = dyn_cast<CallBase>(u.getUser());
        if (!cb || !cb->isCallee(&u)) return PGTEXT_KEEP_ADDRESS_TAKEN;
    }
    if (callsNamed(F, "__kmpc_fork_call", "__kmpc_fork_teams") ||
        callsNamed(F, "__kmpc_omp_task_alloc", "__kmpc_omp_task_alloc"))
        return PGTEXT_KEEP_OPENMP;
    if (F.use_empty()) return PGTEXT_KEEP_NO_CALLER;
    static const char *const why[] = {
        "",
        PGTEXT_KEEP_CALLER_BEGINS,
        PGTEXT_KEEP_CALLER_OTHER_GROUPS,
        PGTEXT_KEEP_CALLER_NOT_INSTRUMENTED,
    };
    unsigned worst = 0;
    for (const Use &u : F.uses()) {
        Function *c = cast<CallBase>(u.getUser())->getFunction();
        StringRef name = c->getName();
        name.consume_front("\1");
        auto it = inst.find(c);
        unsigned level = 0;
        if (it == inst.end())
            level = 3;
        else if (it->second->attr != w.attr || it->second->filegroup != w.filegroup)
            level = 2;
        else if (name == "main" || roots.count(c) || callsNamed(*c, "perfgroup_event_begin", "perfgroup_nested_loop_begin"))
            level = 1;
        if (level > worst || (level && level == worst && name.str() < who)) {
            worst = level;
            who = name.str();
        }
    }
    std::string s = why[worst];
    size_t at = s.find("%s");
    if (at != std::string::npos) s.replace(at, 2, who);
    return s;
}

void elideReentries(WorkList &work, const Table &table, const std::set<const Function *> &roots)
{
    std::map<Function *, const Want *> inst;
    for (auto &fw : work) inst[fw.first] = &fw.second;
    std::vector<bool> elided(work.size());
    for (size_t i = 0; i < work.size(); i++) {
        Function &F = *work[i].first;
        const Want &w = work[i].second;
        std::string who;
        std::string why = table.allFunctions ? PGTEXT_KEEP_ALL_FUNCTIONS
                                             : keepReason(F, w, inst, roots, who);
        elided[i] = why.empty();
        if (!table.verbose) continue;
        StringRef shown = w.display.empty() ? F.getName() : StringRef(w.display);
        shown.consume_front("\1");
        errs() << w.file << ':' << w.line << ": note: "
               << (elided[i] ? pgFormat(PGTEXT_NOTE_ELIDED, shown.str().c_str())
                             : pgFormat(PGTEXT_NOTE_KEEPS, shown.str().c_str(), why.c_str()))
               << '\n';
    }
    size_t n = 0;
    for (size_t i = 0; i < work.size(); i++)
        if (!elided[i]) work[n++] = work[i];
    work.resize(n);
}

} // namespace perfgroup_clang
