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
        /* extern __thread struct perfgroup_cur PERFGROUP_TLS_CUR, initial-exec (abi.h) */
        CurTy = StructType::get(Ctx, {I64, I64});
        Cur = M.getNamedGlobal(PERFGROUP_TLS_CUR_NAME);
        if (!Cur)
            Cur = new GlobalVariable(M, CurTy, /*isConstant=*/false, GlobalValue::ExternalLinkage,
                                     nullptr, PERFGROUP_TLS_CUR_NAME, nullptr,
                                     GlobalValue::InitialExecTLSModel);
        Enter = hook(PERFGROUP_HOOK_ENTER_NAME, FunctionType::get(I64, {I8Ptr}, false));
        Exit = hook(PERFGROUP_HOOK_EXIT_NAME,
                    FunctionType::get(Type::getVoidTy(Ctx), {I8Ptr, I64}, false));
    }

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
    StructType *SiteTy, *CurTy;
    GlobalVariable *Cur; /* PERFGROUP_TLS_CUR */
    FunctionCallee Enter, Exit;
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

    /* token = enter(site) before `at`; with weak-hooks, &enter ? enter(site) : 0 (a phi).
     * check: the inline re-entry check of abi.h first (not with weak-hooks: the thread-local
     * may not exist), `(key | cur.mask) != ~0 || CFA > cur.sp ? enter(site) : 0` (a phi): a
     * call of a function whose groups already run, below the innermost frame that started
     * one, calls nothing. */
    Instruction *enterCall(Instruction *at, Value *siteArg, const DebugLoc &dl, bool check = false)
    {
        if (check && !Weak) {
            IRBuilder<> b(at);
            Value *key = b.CreateLoad(I64, b.CreateConstInBoundsGEP2_32(SiteTy, siteArg->stripPointerCasts(), 0, 6),
                                      "perfgroup.key");
            Value *curMask = b.CreateLoad(I64, b.CreateConstInBoundsGEP2_32(CurTy, Cur, 0, 0),
                                          "perfgroup.cur.mask");
            Value *curSp = b.CreateLoad(I64, b.CreateConstInBoundsGEP2_32(CurTy, Cur, 0, 1),
                                        "perfgroup.cur.sp");
            /* the CFA: the address of the return address, plus its slot (no frame pointer
             * needed, unlike llvm.eh.dwarf.cfa); an inlined copy gets its caller's */
            Function *aora = pgIntrinsic(M, Intrinsic::addressofreturnaddress, I8Ptr);
            Value *cfa = b.CreateAdd(b.CreatePtrToInt(b.CreateCall(aora), I64), b.getInt64(8),
                                     "perfgroup.cfa");
            Value *need = b.CreateOr(b.CreateICmpNE(b.CreateOr(key, curMask), b.getInt64(~0ull)),
                                     b.CreateICmpUGT(cfa, curSp), "perfgroup.enter");
            Instruction *then = SplitBlockAndInsertIfThen(need, at, /*Unreachable=*/false,
                                                          MDBuilder(Ctx).createBranchWeights(1, 1000));
            IRBuilder<> t(then);
            t.SetCurrentDebugLocation(dl);
            CallInst *call = t.CreateCall(Enter, {siteArg});
            call->setDoesNotThrow();
            PHINode *phi = PHINode::Create(I64, 2, "perfgroup.token", &at->getParent()->front());
            phi->addIncoming(call, then->getParent());
            phi->addIncoming(ConstantInt::get(I64, 0), then->getParent()->getSinglePredecessor());
            return phi;
        }
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

    GlobalVariable *site(Function &F, const Want &w, StringRef fname);
    void exitsOnUnwind(Function &F, Value *site, function_ref<Value *(Instruction *)> tokAt,
                       const DebugLoc &dl, function_ref<bool(const Instruction *)> open);
};

} // namespace perfgroup_clang

#endif /* PERFGROUP_CLANG_INSTRUMENT_H */
