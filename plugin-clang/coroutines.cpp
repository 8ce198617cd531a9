/* SPDX-License-Identifier: MIT */
/*
 * plugin-clang/coroutines.cpp — C++20 coroutines: where the runs of a coroutine's body begin
 * and end (the pass runs before CoroSplit cuts it into ramp, .resume and .destroy), and a fix
 * for what LLVM's CoroElide does to an instrumented coroutine's caller.
 */
#include "instrument.h" /* the LLVM headers, llvm-compat.h */

namespace perfgroup_clang {

/*
 * C++20 coroutines. Clang emits a coroutine as one function that LLVM's CoroSplit later splits
 * into the ramp (the call: the body up to its first suspension), a .resume clone (every
 * resumption, from wherever the handle is resumed) and a .destroy clone (destroying a
 * suspended frame). This pass runs before the split (pipeline start), so it cuts the body into
 * the runs that will exist after it, as the GCC plugin charges g++'s actor:
 *
 *   get_return_object()         enter (after it: the frame, the promise and the return object
 *                               are the caller's, as with g++; else after coro.begin)
 *   ... body ...
 *   [llvm.coro.resume(h) |      exit: before the symmetric transfer that await_suspend asked
 *    coro.await.suspend.handle]       for (the other coroutine's run, a musttail call after
 *   coro.suspend                       CoroSplit), else just before the suspension
 *   switch -> 0: resume         enter, on the edge
 *          -> 1: destroy        enter, on the edge
 *          -> default: ret      (suspended: nothing open)
 *   ret, resume, unwinding      exit where a run is open
 *
 * "Open" is decided on the CFG: a block reached from coro.begin without a suspension's
 * default edge is open; one reached from a default edge (the return to the resumer) is closed;
 * where an open block flows into a closed one (the end of the body or of a destruction, into
 * the shared coro.end/ret), the exit goes on that edge. Each run's token is an SSA value of its
 * own (never live across a suspension, so never in the frame: a run that hands its handle to
 * another thread in await_suspend cannot read the token of the run that thread starts).
 * Returns why the coroutine was left alone, or nullptr.
 */
static bool isCall(const Instruction &I, StringRef name)
{
    auto *cb = dyn_cast<CallBase>(&I);
    const Function *f = cb ? cb->getCalledFunction() : nullptr;
    return f && f->getName() == name;
}

const char *Instrumenter::instrumentCoroutine(Function &F, const Want &w)
{
    Instruction *begin = nullptr;
    std::vector<CallBase *> suspends;
    for (Instruction &I : instructions(F)) {
        if (isCall(I, "llvm.coro.begin")) begin = begin ? nullptr : &I;
        if (isCall(I, "llvm.coro.suspend")) suspends.push_back(cast<CallBase>(&I));
        if (isCall(I, "llvm.coro.suspend.retcon") || isCall(I, "llvm.coro.suspend.async"))
            return "C++20 coroutine of a shape this pass does not know (not switch-lowered)";
    }
    if (!begin || suspends.empty())
        return "C++20 coroutine of a shape this pass does not know (no single coro.begin)";

    /* Each suspension: its switch (0 resume, 1 destroy, default: suspended) and where its run
     * ends. */
    struct Suspend {
        CallBase *call;
        SwitchInst *sw;
        Instruction *end;
    };
    std::vector<Suspend> points;
    std::set<const BasicBlock *> closedEntries;
    std::set<const Instruction *> suspendSwitches;
    for (CallBase *c : suspends) {
        SwitchInst *sw = c->hasOneUse() ? dyn_cast<SwitchInst>(c->user_back()) : nullptr;
        if (!sw || sw->getNumCases() != 2)
            return "C++20 coroutine of a shape this pass does not know (suspension without its switch)";
        std::set<BasicBlock *> dests{sw->getDefaultDest()};
        for (auto &cs : sw->cases()) dests.insert(cs.getCaseSuccessor());
        if (dests.size() != 3)
            return "C++20 coroutine of a shape this pass does not know (suspension switch)";
        /* the symmetric transfer, if any, between the save and the suspension */
        Instruction *end = c;
        if (auto *save = dyn_cast<Instruction>(c->getArgOperand(0))) {
            Instruction *i = save->getNextNode();
            for (unsigned steps = 0; i && i != c && steps < 256; steps++) {
                if (isCall(*i, "llvm.coro.resume") || isCall(*i, "llvm.coro.await.suspend.handle")) {
                    end = i;
                    break;
                }
                if (auto *br = dyn_cast<BranchInst>(i))
                    i = br->isUnconditional() ? &br->getSuccessor(0)->front() : nullptr;
                else if (auto *inv = dyn_cast<InvokeInst>(i))
                    i = &inv->getNormalDest()->front();
                else
                    i = i->getNextNode();
            }
        }
        points.push_back({c, sw, end});
        closedEntries.insert(sw->getDefaultDest());
        suspendSwitches.insert(sw);
    }

    /* Open: reached from coro.begin without a default edge. Closed: reached from one. */
    auto reach = [&](std::vector<const BasicBlock *> from, bool skipDefaults) {
        std::set<const BasicBlock *> seen(from.begin(), from.end());
        while (!from.empty()) {
            const BasicBlock *b = from.back();
            from.pop_back();
            const Instruction *t = b->getTerminator();
            for (unsigned k = 0; k < t->getNumSuccessors(); k++) {
                if (skipDefaults && suspendSwitches.count(t) &&
                    t->getSuccessor(k) == cast<SwitchInst>(t)->getDefaultDest())
                    continue;
                if (seen.insert(t->getSuccessor(k)).second) from.push_back(t->getSuccessor(k));
            }
        }
        return seen;
    };
    /* The first run starts after the promise's get_return_object(), as g++'s actor does (its
     * ramp calls get_return_object before the actor): the frame, the promise and the return
     * object are the caller's. If the call is not found once, after coro.begin. */
    Instruction *start = begin->getNextNode();
    {
        CallBase *gro = nullptr;
        unsigned n = 0;
        for (Instruction &I : instructions(F))
            if (auto *cb = dyn_cast<CallBase>(&I))
                if (Function *f = cb->getCalledFunction())
                    if (f->getName().find("17get_return_object") != StringRef::npos) {
                        gro = cb;
                        n++;
                    }
        if (n == 1) {
            if (auto *inv = dyn_cast<InvokeInst>(gro))
                start = &*inv->getNormalDest()->getFirstInsertionPt();
            else
                start = gro->getNextNode();
        }
    }
    std::set<const BasicBlock *> open = reach({start->getParent()}, true);
    std::set<const BasicBlock *> closed =
        reach(std::vector<const BasicBlock *>(closedEntries.begin(), closedEntries.end()), false);
    auto isOpen = [&](const BasicBlock *b) { return open.count(b) && !closed.count(b); };
    /* Blocks of the ramp's own paths (from the entry, not through the start) that flow into
     * open blocks (a landing pad of get_return_object joining the body's cleanups): the run
     * is entered on those edges too, so every path into an open block has one. */
    std::vector<std::pair<BasicBlock *, BasicBlock *>> opening;
    {
        std::set<const BasicBlock *> pre{&F.getEntryBlock()};
        std::vector<const BasicBlock *> work{&F.getEntryBlock()};
        while (!work.empty()) {
            const BasicBlock *b = work.back();
            work.pop_back();
            if (b == start->getParent() || isOpen(b)) continue; /* the start, or joined a run */
            const Instruction *t = b->getTerminator();
            for (unsigned k = 0; k < t->getNumSuccessors(); k++) {
                BasicBlock *to = t->getSuccessor(k);
                if (isOpen(to) && to != start->getParent()) {
                    if (isa<InvokeInst>(t) && cast<InvokeInst>(t)->getUnwindDest() == to)
                        return "C++20 coroutine of a shape this pass does not know (the ramp unwinds into a run)";
                    opening.emplace_back(const_cast<BasicBlock *>(b), to);
                } else if (pre.insert(to).second) {
                    work.push_back(to);
                }
            }
        }
    }
    std::vector<std::pair<BasicBlock *, BasicBlock *>> closing; /* open -> closed edges */
    for (const BasicBlock *cb : open) {
        if (closed.count(cb)) continue;
        auto *b = const_cast<BasicBlock *>(cb);
        Instruction *t = b->getTerminator();
        std::set<BasicBlock *> done;
        for (unsigned k = 0; k < t->getNumSuccessors(); k++) {
            BasicBlock *to = t->getSuccessor(k);
            if (!closed.count(to) || !done.insert(to).second) continue;
            if (suspendSwitches.count(t) && to == cast<SwitchInst>(t)->getDefaultDest()) continue;
            if (isa<InvokeInst>(t) && cast<InvokeInst>(t)->getUnwindDest() == to)
                return "C++20 coroutine of a shape this pass does not know (unwinding into its return)";
            closing.emplace_back(b, to);
        }
    }

    StringRef fname = w.display.empty() ? F.getName() : StringRef(w.display);
    fname.consume_front("\1");
    GlobalVariable *gv = site(F, w, fname);
    Value *siteArg = ConstantExpr::getPointerCast(gv, I8Ptr);
    DebugLoc dl;
    if (DISubprogram *sp = F.getSubprogram()) dl = DILocation::get(Ctx, sp->getScopeLine(), 0, sp);
    /* weak-hooks: GVN makes every `&hook != 0` of the function one value, defined in the ramp
     * and live across the suspensions, which CoroSplit 19 turned into poison in a .resume
     * clone's unwinding path (the guard of that exit chose at random: a crash at -O2 without
     * the runtime). Each guard tests an opaque copy of the address instead (an empty asm:
     * one register move). */
    Launder = Weak;
    auto locOf = [&](Instruction *i) { return i->getDebugLoc() ? i->getDebugLoc() : dl; };

    /* What exits where, found before the CFG changes (splits move instructions to new blocks). */
    std::vector<Instruction *> rets;
    std::set<const Instruction *> inRun; /* the instructions of open blocks, from the start */
    for (BasicBlock &BB : F)
        if (isOpen(&BB)) {
            bool before = &BB == start->getParent();
            for (Instruction &I : BB) {
                before = before && &I != start;
                if (!before) inRun.insert(&I);
            }
            if (isa<ReturnInst>(BB.getTerminator())) rets.push_back(BB.getTerminator());
        }

    /* The enters: at the start, on the ramp's edges into a run, and on each suspension's
     * resume and destroy edges. */
    std::vector<Instruction *> enters;
    auto enterAt = [&](Instruction *at) { enters.push_back(enterCall(at, siteArg, locOf(at))); };
    enterAt(start);
    for (auto &e : opening) {
        BasicBlock *nb = SplitEdge(e.first, e.second);
        enterAt(nb->getTerminator());
    }
    for (Suspend &p : points)
        for (auto &cs : p.sw->cases()) {
            BasicBlock *nb = SplitEdge(p.sw->getParent(), cs.getCaseSuccessor());
            enterAt(nb->getTerminator());
        }

    /* Where the exits go (before the token values are asked for: the CFG still changes). */
    std::vector<Instruction *> exits;
    for (Suspend &p : points) exits.push_back(p.end);
    for (auto &e : closing) {
        BasicBlock *from = e.first, *to = e.second;
        if (from->getSingleSuccessor() == to) {
            exits.push_back(from->getTerminator());
        } else if (to->getUniquePredecessor() == from) {
            exits.push_back(&*to->getFirstInsertionPt());
        } else {
            Instruction *t = from->getTerminator();
            unsigned k = 0;
            while (t->getSuccessor(k) != to) k++;
            BasicBlock *nb = SplitCriticalEdge(t, k, CriticalEdgeSplittingOptions().setMergeIdenticalEdges());
            if (!nb) nb = SplitEdge(from, to);
            exits.push_back(nb->getTerminator());
        }
    }
    for (Instruction *r : rets) exits.push_back(r);

    /* Each exit gets the token of the run it ends: the enter before it in its block, else
     * the value reaching the block (phis where runs meet, e.g. an unwinding pad). */
    SSAUpdater ssa;
    bool ssaReady = false;
    auto tokAt = [&](Instruction *at) -> Value * {
        for (Instruction *i = at->getPrevNode(); i; i = i->getPrevNode())
            for (Instruction *e : enters)
                if (e == i) return e;
        if (!ssaReady) {
            ssa.Initialize(I64, "perfgroup.token");
            for (Instruction *e : enters) ssa.AddAvailableValue(e->getParent(), e);
            ssaReady = true;
        }
        return ssa.GetValueInMiddleOfBlock(at->getParent());
    };
    if (!F.doesNotThrow())
        exitsOnUnwind(
            F, [&](Instruction *at, const DebugLoc &l) { exitCall(at, siteArg, tokAt(at), l); }, dl,
            [&](const Instruction *i) { return inRun.count(i) > 0; });
    /* after the unwinding invokes: their splits move instructions between blocks */
    for (Instruction *at : exits) exitCall(at, siteArg, tokAt(at), locOf(at));
    Launder = false;
    F.addFnAttr("perfgroup-instrumented");
    return nullptr;
}

/*
 * LLVM's CoroElide (13-19, at -O1 and above) puts a coroutine's frame on its caller's stack
 * when the caller destroys it on every path, and then clears the `tail` marker only of the
 * calls whose operands may point into that frame (removeTailCallAttribute: operandReferences).
 * A `tail` call promises that the callee touches no alloca of the caller, so when the frame's
 * handle escaped through memory first (stored into another coroutine's promise, which a
 * symmetric transfer then resumes), DSE deletes the frame's initialisation and the program
 * jumps to a null resume pointer. Uninstrumented programs rarely meet it (the resumed
 * coroutine is usually inlined and elided too); an instrumented coroutine, bigger by its
 * hooks, is not inlined: clang 19 -O2 crashed on the corpus's coroutine.cc. So, right after
 * CoroElide (the scalar-optimizer-late extension point follows it in every release 13-19), a
 * function holding an elided frame (an alloca a `.resume` function's address is stored into,
 * at its start: CoroElide reaches it through a cast)
 * loses the `tail` marker of every call that is not musttail: a hint for code generation,
 * never a change of meaning.
 */
namespace {

struct CoroElideTailFix : PassInfoMixin<CoroElideTailFix> {
    PreservedAnalyses run(Function &F, FunctionAnalysisManager &)
    {
        bool elided = false;
        for (Instruction &I : instructions(F))
            if (auto *st = dyn_cast<StoreInst>(&I))
                if (auto *fn = dyn_cast<Function>(st->getValueOperand()->stripPointerCasts()))
                    elided |= pgEndsWith(fn->getName(), ".resume") &&
                              isa<AllocaInst>(getUnderlyingObject(st->getPointerOperand()));
        if (!elided) return PreservedAnalyses::all();
        bool changed = false;
        for (Instruction &I : instructions(F))
            if (auto *c = dyn_cast<CallInst>(&I))
                if (c->isTailCall() && !c->isMustTailCall()) {
                    c->setTailCall(false);
                    changed = true;
                }
        return changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
    }
    static bool isRequired() { return true; }
};

} // namespace

void registerCoroElideTailFix(PassBuilder &PB)
{
    /* Right after CoroElide (see CoroElideTailFix). */
    PB.registerScalarOptimizerLateEPCallback(
        [](FunctionPassManager &FPM, PgOptimizationLevel) { FPM.addPass(CoroElideTailFix()); });
}

} // namespace perfgroup_clang
