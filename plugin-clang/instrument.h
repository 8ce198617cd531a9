/* SPDX-License-Identifier: MIT */
/*
 * plugin-clang/instrument.h — the Instrumenter: what the pass adds to a module (sites, hook
 * calls, the module constructor), shared by instrument.cpp (ordinary functions) and
 * coroutines.cpp (C++20 coroutines, cut into runs). Included only by those two files, which
 * speak LLVM: hence the using-directive; and it includes every LLVM header either needs, since
 * llvm-compat.h must come after them.
 */
#ifndef PERFGROUP_CLANG_INSTRUMENT_H
#define PERFGROUP_CLANG_INSTRUMENT_H

#include "plugin.h"

#include "perfgroup/abi.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Local.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"
#include "llvm/Transforms/Utils/SSAUpdater.h"

#include "llvm-compat.h" /* after clang/LLVM: every version #if */

namespace perfgroup_clang {

using namespace llvm;

class Instrumenter {
public:
    Instrumenter(Module &M, bool cxx, bool weak) : M(M), Ctx(M.getContext()), Cxx(cxx), Weak(weak)
    {
        I8Ptr = pgI8Ptr(Ctx);
        I64 = Type::getInt64Ty(Ctx);
        SiteTy = StructType::getTypeByName(Ctx, "perfgroup_site");
        if (!SiteTy)
            SiteTy = StructType::create(Ctx,
                                        {Type::getInt16Ty(Ctx), Type::getInt16Ty(Ctx),
                                         Type::getInt32Ty(Ctx), I8Ptr, I8Ptr, I8Ptr, I64},
                                        "perfgroup_site");
        /* struct perfgroup_lite {left; acts[64]} and extern __thread struct perfgroup_cur
         * PERFGROUP_TLS_CUR {mask, sp, ctl, top}, initial-exec (abi.h) */
        LiteTy = StructType::get(Ctx, {I64, ArrayType::get(Type::getInt32Ty(Ctx), 64)});
        CurTy = StructType::get(Ctx, {I64, I64, PointerType::getUnqual(LiteTy), I64});
        Cur = M.getNamedGlobal(PERFGROUP_TLS_CUR_NAME);
        if (!Cur)
            Cur = new GlobalVariable(M, CurTy, /*isConstant=*/false, GlobalValue::ExternalLinkage,
                                     nullptr, PERFGROUP_TLS_CUR_NAME, nullptr,
                                     GlobalValue::InitialExecTLSModel);
        /* the source may declare it (abi.h) as its own struct type: typed pointers (13-16)
         * want a cast, opaque ones make none */
        CurPtr = ConstantExpr::getPointerCast(Cur, PointerType::getUnqual(CurTy));
        Enter = hook(PERFGROUP_HOOK_ENTER_NAME, FunctionType::get(I64, {I8Ptr}, false));
        Exit = hook(PERFGROUP_HOOK_EXIT_NAME,
                    FunctionType::get(Type::getVoidTy(Ctx), {I8Ptr, I64}, false));
    }

    /* The token of a call and, for a function that may make a lite frame (abi.h), the slots
     * where a lite frame saves the state its exit restores: cur's mask, sp and top as they were
     * (volatile stack slots, stored only by a lite frame's entry, loaded only by its exit).
     * `mask` null: no lite frame (a coroutine's runs, weak-hooks). */
    struct Token {
        Value *tok = nullptr;
        Value *mask = nullptr, *sp = nullptr, *top = nullptr;
    };

    void instrument(Function &F, const Want &w);
    const char *instrumentCoroutine(Function &F, const Want &w);
    void emitModuleConstructor();
    std::set<const Function *> Roots; /* thread start routines (threadRoots) */
    bool Launder = false; /* weak-hooks guards of a coroutine: not one value for all runs */

private:
    Module &M;
    LLVMContext &Ctx;
    bool Cxx;
    bool Weak; /* weak-hooks */
    Type *I8Ptr, *I64;
    StructType *SiteTy, *CurTy, *LiteTy;
    GlobalVariable *Cur; /* PERFGROUP_TLS_CUR */
    Constant *CurPtr;    /* Cur as a CurTy pointer */
    FunctionCallee Enter, Exit, ExitLite;
    StringMap<Constant *> Strings;

    FunctionCallee hook(StringRef name, FunctionType *t)
    {
        FunctionCallee c = M.getOrInsertFunction(name, t);
        if (auto *f = dyn_cast<Function>(c.getCallee())) {
            f->setDoesNotThrow();
            /* weak-hooks: an object links without the runtime (a build helper linked
             * without LIBS); every call is guarded by `&hook != 0` (guarded()). */
            if (Weak && f->isDeclaration()) f->setLinkage(GlobalValue::ExternalWeakLinkage);
        }
        return c;
    }

    /* if (tok != 0) exit(site, tok) before `at`: the exit hook only ever gets a token (abi.h;
     * with weak-hooks too: a token that is not 0 came from the runtime). */
    void exitCall(Instruction *at, Value *siteArg, Value *tok, const DebugLoc &dl)
    {
        IRBuilder<> b(at);
        Value *live = b.CreateICmpNE(tok, ConstantInt::get(I64, 0));
        Instruction *then = SplitBlockAndInsertIfThen(live, at, /*Unreachable=*/false,
                                                      MDBuilder(Ctx).createBranchWeights(1, 1000));
        IRBuilder<> t(then);
        t.SetCurrentDebugLocation(dl);
        t.CreateCall(Exit, {siteArg, tok})->setDoesNotThrow();
    }

    /* hook(args) before `at`; with weak-hooks, if (&hook != 0) hook(args), the call in its
     * own block. Returns the call. */
    CallInst *guarded(Instruction *at, FunctionCallee h, ArrayRef<Value *> args, const DebugLoc &dl)
    {
        IRBuilder<> b(at);
        if (!Weak) {
            b.SetCurrentDebugLocation(dl);
            CallInst *c = b.CreateCall(h, args);
            c->setDoesNotThrow();
            return c;
        }
        Value *addr = h.getCallee();
        if (Launder) /* an opaque copy: see instrumentCoroutine */
            addr = b.CreateCall(InlineAsm::get(FunctionType::get(addr->getType(), {addr->getType()}, false),
                                               "", "=r,0", /*hasSideEffects=*/true),
                                {addr});
        Value *live = b.CreateICmpNE(addr, ConstantPointerNull::get(cast<PointerType>(addr->getType())));
        Instruction *then = SplitBlockAndInsertIfThen(live, at, /*Unreachable=*/false);
        IRBuilder<> t(then);
        t.SetCurrentDebugLocation(dl);
        CallInst *c = t.CreateCall(h, args);
        c->setDoesNotThrow();
        return c;
    }

    /* token = enter(site) before `at`; with weak-hooks, &enter ? enter(site) : 0 (a phi). No
     * re-entry check, no lite frame: a coroutine's runs (coroutines.cpp). */
    Instruction *enterCall(Instruction *at, Value *siteArg, const DebugLoc &dl)
    {
        auto *call = guarded(at, Enter, {siteArg}, dl);
        if (!Weak) {
            call->setName("perfgroup.token");
            return call;
        }
        BasicBlock *test = call->getParent()->getSinglePredecessor();
        PHINode *phi = PHINode::Create(I64, 2, "perfgroup.token",
                                       &call->getParent()->getSingleSuccessor()->front());
        phi->addIncoming(call, call->getParent());
        phi->addIncoming(ConstantInt::get(I64, 0), test);
        return phi;
    }

    /* A field of PERFGROUP_TLS_CUR: 0 mask, 1 sp, 2 ctl, 3 top. */
    Value *curField(IRBuilder<> &b, unsigned i) { return b.CreateConstInBoundsGEP2_32(CurTy, CurPtr, 0, i); }
    /* ctl->left of the thread's control words (cur.ctl, never NULL). */
    Value *leftOf(IRBuilder<> &b, Value *ctl) { return b.CreateConstInBoundsGEP2_32(LiteTy, ctl, 0, 0); }

    Token enterFunction(Instruction *at, Value *siteArg, const DebugLoc &dl);
    void exitAt(Instruction *at, Value *siteArg, const Token &t, const DebugLoc &dl);

    /* A private, mergeable string holding `s` as is (it carries its own NULs). */
    Constant *string(const std::string &s)
    {
        Constant *&slot = Strings[s];
        if (slot) return slot;
        Constant *data = ConstantDataArray::getString(Ctx, s, /*AddNull=*/false);
        auto *gv = new GlobalVariable(M, data->getType(), true, GlobalValue::PrivateLinkage, data,
                                      ".perfgroup.str");
        gv->setUnnamedAddr(GlobalValue::UnnamedAddr::Global);
        gv->setAlignment(Align(1));
        slot = ConstantExpr::getPointerCast(gv, I8Ptr);
        return slot;
    }

    /* The ABI version this module's sites and constructor say (abi.h): 3 where enterFunction
     * may make lite frames, 2 with weak-hooks (ABI 2's sequence: no lite frame, no reference to
     * the lite exit), as the GCC plugin. */
    unsigned emittedAbi() const { return Weak ? PERFGROUP_ABI_VERSION_NO_LITE : PERFGROUP_ABI_VERSION; }

    GlobalVariable *site(Function &F, const Want &w, StringRef fname);
    void exitsOnUnwind(Function &F, function_ref<void(Instruction *, const DebugLoc &)> exitHere,
                       const DebugLoc &dl, function_ref<bool(const Instruction *)> open);
};

} // namespace perfgroup_clang

#endif /* PERFGROUP_CLANG_INSTRUMENT_H */
