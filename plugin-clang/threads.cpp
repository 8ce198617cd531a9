/* SPDX-License-Identifier: MIT */
/*
 * plugin-clang/threads.cpp — the threads a function's group reaches beyond its own calls: the
 * start routines it passes to pthread_create/thrd_create (thread roots, flagged in their
 * sites) and the OpenMP regions the threads of a team run (charged to its group).
 */
#include "plugin.h"

#include "clang/AST/Expr.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"

#include "llvm-compat.h" /* after clang/LLVM: every version #if */

using namespace llvm;

namespace perfgroup_clang {

/* ---- Thread roots -----------------------------------------------------------------------------
 * Functions this module passes as the start routine of pthread_create (3rd argument) or
 * thrd_create (2nd): a thread's root, whose site gets PERFGROUP_SITE_F_ROOT (the runtime opens
 * no implicit event for it as the thread's outermost frame; `main` it knows by name). As the
 * GCC plugin: a start routine passed through a variable is not seen. The front end gives the
 * verbose note. */
std::set<const Function *> threadRoots(Module &M)
{
    std::set<const Function *> roots;
    for (const char *name : {"pthread_create", "thrd_create"}) {
        Function *create = M.getFunction(name);
        unsigned arg = name[0] == 'p' ? 2 : 1;
        if (!create) continue;
        for (User *u : create->users()) {
            auto *call = dyn_cast<CallBase>(u);
            if (!call || call->getCalledOperand()->stripPointerCasts() != create ||
                call->arg_size() <= arg)
                continue;
            if (auto *f = dyn_cast<Function>(call->getArgOperand(arg)->stripPointerCasts()))
                roots.insert(f);
        }
    }
    return roots;
}

/* The front end's view of the same calls, for the verbose note: the function a direct call of
 * pthread_create/thrd_create passes (by name or by address) as the start routine. */
const clang::FunctionDecl *startRoutineOf(const clang::CallExpr *CE)
{
    const clang::FunctionDecl *callee = CE->getDirectCallee();
    if (!callee || !callee->getDeclName().isIdentifier()) return nullptr;
    unsigned arg = callee->getName() == "pthread_create" ? 2
                   : callee->getName() == "thrd_create" ? 1 : 0;
    if (!arg || CE->getNumArgs() <= arg) return nullptr;
    const clang::Expr *e = CE->getArg(arg)->IgnoreParenImpCasts();
    if (auto *uo = dyn_cast<clang::UnaryOperator>(e))
        if (uo->getOpcode() == clang::UO_AddrOf) e = uo->getSubExpr()->IgnoreParenImpCasts();
    auto *ref = dyn_cast<clang::DeclRefExpr>(e);
    return ref ? dyn_cast<clang::FunctionDecl>(ref->getDecl()) : nullptr;
}

/* ---- OpenMP regions ----------------------------------------------------------------------------
 * Clang outlines each `#pragma omp parallel` body into a function (.omp_outlined.)
 * that __kmpc_fork_call runs on every thread of the team, a host `teams` body likewise
 * (__kmpc_fork_teams), and a `task`'s or `taskloop`'s into a task entry (.omp_task_entry.)
 * that __kmpc_omp_task_alloc hands to whichever thread runs the task; the front end gives
 * them no group. To charge the threads that run them to the enclosing function's group, each
 * such body of an instrumented function is instrumented as that function (its group, its
 * name), as the GCC plugin does inside the region; nested regions too. On the thread that
 * forked, the pair nests inside the function's own (re-entry of the same group). A `target`
 * region is not charged. */
static int ompBodyArg(const Function &callee)
{
    StringRef n = callee.getName();
    if (n == "__kmpc_fork_call" || n == "__kmpc_fork_teams") return 2; /* (loc, argc, body, ...) */
    if (n == "__kmpc_omp_task_alloc") return 5; /* (loc, gtid, flags, size, shareds, entry) */
    return -1;
}

void chargeOmpRegions(WorkList &work)
{
    std::set<Function *> seen, scanned;
    for (auto &fw : work) seen.insert(fw.first);
    /* what to look into: the instrumented functions and their outlined bodies, and, with -g,
     * the body an outlined wrapper calls (.omp_outlined._debug__, from clang 16 on
     * <fn>.omp_outlined_debug__: the wrapper is what the runtime call gets, the nested
     * regions are in the body), looked into, not instrumented */
    std::vector<std::pair<Function *, Want>> scan(work.begin(), work.end());
    for (size_t i = 0; i < scan.size(); i++) {
        Function *F = scan[i].first;
        if (!scanned.insert(F).second)
            continue;
        for (Instruction &I : instructions(*F)) {
            auto *call = dyn_cast<CallBase>(&I);
            Function *callee = call ? call->getCalledFunction() : nullptr;
            if (!callee || callee->isDeclaration()) {
                int arg = callee ? ompBodyArg(*callee) : -1;
                if (arg < 0 || call->arg_size() <= (unsigned)arg)
                    continue;
                auto *body = dyn_cast<Function>(call->getArgOperand(arg)->stripPointerCasts());
                if (!body || body->isDeclaration() || !seen.insert(body).second)
                    continue;
                Want w = scan[i].second;
                if (w.display.empty()) w.display = F->getName().str();
                work.emplace_back(body, w);
                scan.emplace_back(body, w);
            } else if (callee->hasLocalLinkage() &&
                       callee->getName().find(".omp_outlined") != StringRef::npos) {
                scan.emplace_back(callee, scan[i].second);
            }
        }
    }
}

} // namespace perfgroup_clang
