/* SPDX-License-Identifier: MIT */
/*
 * plugin-clang/instrument.cpp — what perfgroup-clang.so's pass adds to a function: its site
 * descriptor, the enter/exit hook pair (an exit on every way out, unwinding included), and
 * once per module the constructor that registers the module's sites. Every name, size and
 * number comes from include/perfgroup/abi.h. (Coroutines: coroutines.cpp.)
 *
 * ---- What it does to a function -------------------------------------------------------------
 *
 *   PERF_GROUP("net") int parse(const char *s) { if (!s) return -1; return work(s); }
 *
 * Before (clang++ -O1, IR as CodeGen leaves it, after sroa):     After the pass:
 *
 *   define i32 @_Z5parsePKc(i8* %s) {          define i32 @_Z5parsePKc(i8* %s) personality @__gxx_personality_v0 {
 *   entry:                                     entry:
 *                                                %key = load i64, @__perfgroup_site._Z5parsePKc.key
 *                                                %mask = load i64, @__perfgroup_cur.mask  ; TLS, initial-exec
 *                                                %sp = load i64, @__perfgroup_cur.sp
 *                                                %cfa = llvm.addressofreturnaddress() + 8
 *                                                %both = %key | %mask
 *                                                br (%both == -1), %reentry, %start
 *                                              reentry:  br (%cfa > %sp), %call, %body, !prof 1:1000
 *                                              start:    %s = ~%both    ; exactly one group starts,
 *                                                br (%s & (%s-1)) == 0 && %s < 1<<63 && %cfa <= %sp, %lite, %call
 *                                              lite:     %ctl = load @__perfgroup_cur.ctl
 *                                                %left = load %ctl->left
 *                                                br (%left > 1), %make, %call
 *                                              make:     %top = load @__perfgroup_cur.top
 *                                                store volatile %mask, %sp, %top -> slots
 *                                                  (allocas %perfgroup.smask/ssp/stop)
 *                                                store %left - 1 -> %ctl->left; %cfa -> cur.sp;
 *                                                %mask | %s -> cur.mask; cttz(%s) -> cur.top;
 *                                                %ctl->acts[cttz(%s)] += 1; br %body
 *                                              call:
 *                                                %t = call i64 @__perfgroup_enter(@__perfgroup_site._Z5parsePKc)
 *                                                br label %body
 *                                              body:
 *                                                %perfgroup.token = phi i64 [ %t, %call ], [ 0, %reentry ], [ 1<<63, %make ]
 *     %tobool = icmp ne i8* %s, null             %tobool = icmp ne i8* %s, null
 *     br i1 %tobool, label %if.end, label %return    br i1 %tobool, label %if.end, label %return
 *   if.end:                                    if.end:
 *     %call = call i32 @_Z4workPKc(i8* %s)       %call1 = invoke i32 @_Z4workPKc(i8* %s)
 *     br label %return                                   to label %return unwind label %perfgroup.unwind
 *   return:                                    return:
 *     %retval.0 = phi i32 [...]                  %retval.0 = phi i32 [...]
 *                                                EXIT                         ; blocks of their own
 *     ret i32 %retval.0                          ret i32 %retval.0
 *   }                                          perfgroup.unwind:
 *                                                %0 = landingpad { i8*, i32 } cleanup
 *                                                EXIT
 *                                                resume { i8*, i32 } %0
 *                                              }
 *   where EXIT is
 *     if (%perfgroup.token == 1<<63) {          ; a lite frame (PERFGROUP_TOKEN_LITE)
 *       %smask, %ssp, %stop = load volatile the slots
 *       %left = load (load @__perfgroup_cur.ctl)->left
 *       if (%left > 1) { store %left - 1 -> ctl->left; %stop -> cur.top;
 *                        %smask -> cur.mask; %ssp -> cur.sp }
 *       else call void @__perfgroup_exit_lite(@site, i64 %smask, i64 %ssp, i64 %stop)
 *     } else if (%perfgroup.token != 0)
 *       call void @__perfgroup_exit(@__perfgroup_site._Z5parsePKc, i64 %perfgroup.token)
 *   plus
 *   @__perfgroup_site._Z5parsePKc = internal global %perfgroup_site { i16 3, i16 0x16 (CLANG|CXX|ATTR),
 *       i32 3, "net\0\0", "_Z5parsePKc\0dn.cc\0", null, i64 0 }, section "perfgroup_sites", align 8
 *   (in llvm.compiler.used), and once per module a hidden COMDAT __perfgroup_module_ctor
 *   (llvm.global_ctors, priority 101) calling __perfgroup_register_module(3,
 *   __start_perfgroup_sites, __stop_perfgroup_sites) with hidden extern bounds;
 *   __perfgroup_exit_lite is declared extern_weak (abi.h: a runtime of ABI 2 then refuses the
 *   module at its registration, the link and the load succeed).
 *   The tests before the enter hook are the inline re-entry check and the lite frame's
 *   (include/perfgroup/abi.h, the same sequence as the GCC plugin's add_enter/add_exit): a
 *   call of a function whose groups all run, below the innermost frame that started one,
 *   calls nothing; one that starts exactly one group with a bit, in a hot event, makes a lite
 *   frame inline (cur.ctl read only after the other tests: a module a runtime of ABI 2 refused
 *   never reads past cur.sp). Not in coroutines (their runs start at resume points: the hooks,
 *   an exit only for a token that is not 0).
 *   With weak-hooks, the three runtime functions are extern_weak, enter and register guarded
 *   by `icmp ne @hook, null` instead of the inline checks (the exit is guarded by its token,
 *   0 without the runtime): an object links and runs without the runtime, hooks doing
 *   nothing; linking the runtime makes them live. That is ABI 2's sequence: sites and
 *   constructor say 2, and nothing references the lite exit.
 *
 * Exits: before every `ret` (before the call, for a musttail call), before every `resume`, and
 * in one cleanup landing pad that every may-throw `call` is turned into an `invoke` of; a
 * personality is added when missing (__gxx_personality_v0 for C++, __gcc_personality_v0 for C
 * built with -fexceptions; nounwind functions get no pad). Inserted calls carry a debug
 * location (the subprogram's scope line, or the ret/resume's own). Names and layout come only
 * from perfgroup/abi.h.
 */
#include "instrument.h" /* the LLVM headers, llvm-compat.h */

namespace perfgroup_clang {

GlobalVariable *Instrumenter::site(Function &F, const Want &w, StringRef fname)
{
    unsigned flags = PERFGROUP_SITE_F_CLANG;
    if (pgStartsWith(fname, "_Z")) flags |= PERFGROUP_SITE_F_CXX;
    if (w.inl || F.hasLinkOnceLinkage() || F.hasWeakLinkage() || F.hasAvailableExternallyLinkage() ||
        F.hasComdat())
        flags |= PERFGROUP_SITE_F_INLINE;
    if (!w.attr.empty()) flags |= PERFGROUP_SITE_F_ATTR;
    if (!w.filegroup.empty()) flags |= PERFGROUP_SITE_F_FILEGROUP;
    if (Roots.count(&F)) flags |= PERFGROUP_SITE_F_ROOT;

    std::string groups = w.attr + '\0' + w.filegroup + '\0';
    std::string where = fname.str() + '\0' + w.file + '\0';
    Constant *init = ConstantStruct::get(
        SiteTy, {ConstantInt::get(Type::getInt16Ty(Ctx), emittedAbi()),
                 ConstantInt::get(Type::getInt16Ty(Ctx), flags),
                 ConstantInt::get(Type::getInt32Ty(Ctx), w.line), string(groups), string(where),
                 ConstantPointerNull::get(cast<PointerType>(I8Ptr)), ConstantInt::get(I64, 0)});
    auto *gv = new GlobalVariable(M, SiteTy, /*isConstant=*/false, GlobalValue::InternalLinkage,
                                  init, "__perfgroup_site." + fname);
    gv->setSection(PERFGROUP_SITES_SECTION);
    gv->setAlignment(Align(8));
    /* One site per executable or shared object for a function emitted in every unit that
     * uses it (inline, template: linkonce/weak in a COMDAT): a hidden linkonce_odr COMDAT of
     * its own, as the GCC plugin does. Not in the function's group: a unit whose calls were
     * all inlined keeps the site without the function. */
    if (F.hasComdat() || F.hasLinkOnceLinkage() || F.hasWeakLinkage()) {
        gv->setName("__perfgroup_site." + F.getName()); /* the symbol: one per function */
        gv->setLinkage(GlobalValue::LinkOnceODRLinkage);
        gv->setVisibility(GlobalValue::HiddenVisibility);
        gv->setComdat(M.getOrInsertComdat(gv->getName()));
    }
    /* Keep every site until the linker: the constructor's __start_/__stop_ references need the
     * section to exist, and the runtime wants to know a function even if no call survived. */
    appendToCompilerUsed(M, {gv});
    return gv;
}

/*
 * Exits on unwinding. An exception leaves F either through a `resume` (a landing pad that
 * did not catch) or straight out of a call that may throw and has no landing pad. The first
 * gets an exit before it; the second is turned into an invoke of a new cleanup pad that calls
 * exit and resumes. LLVM's own EntryExitInstrumenter does neither (clang
 * -finstrument-functions: 6 enters, 0 exits across a C++ throw).
 */
void Instrumenter::exitsOnUnwind(Function &F,
                                 function_ref<void(Instruction *, const DebugLoc &)> exitHere,
                                 const DebugLoc &dl, function_ref<bool(const Instruction *)> open)
{
    std::vector<ResumeInst *> resumes;
    std::vector<CallInst *> calls;
    Type *lpTy = nullptr;
    for (BasicBlock &BB : F)
        for (Instruction &I : BB) {
            if (auto *lp = dyn_cast<LandingPadInst>(&I)) lpTy = lp->getType();
            if (!open(&I)) continue;
            if (auto *r = dyn_cast<ResumeInst>(&I)) resumes.push_back(r);
            auto *c = dyn_cast<CallInst>(&I);
            /* Intrinsics and inline asm do not unwind here; a musttail call has its exit
             * before it already, and cannot become an invoke. */
            if (c && !c->doesNotThrow() && !isa<IntrinsicInst>(c) && !c->isInlineAsm() &&
                !c->isMustTailCall())
                calls.push_back(c);
        }
    for (ResumeInst *r : resumes)
        exitHere(r, r->getDebugLoc() ? r->getDebugLoc() : dl);
    if (calls.empty()) return;
    if (F.hasPersonalityFn()) {
        /* Funclet-based EH (Windows) would need cleanuppads: not a target of this project. */
        if (isa<Function>(F.getPersonalityFn()->stripPointerCasts()) &&
            pgStartsWith(F.getPersonalityFn()->stripPointerCasts()->getName(), "__CxxFrameHandler"))
            return;
    } else {
        /* The personality routine of the language: C++, or C built with -fexceptions. */
        const char *name = Cxx ? "__gxx_personality_v0" : "__gcc_personality_v0";
        FunctionCallee p = M.getOrInsertFunction(
            name, FunctionType::get(Type::getInt32Ty(Ctx), {}, /*isVarArg=*/true));
        F.setPersonalityFn(cast<Constant>(p.getCallee()));
    }
    if (!lpTy) lpTy = StructType::get(I8Ptr, Type::getInt32Ty(Ctx));

    BasicBlock *pad = BasicBlock::Create(Ctx, "perfgroup.unwind", &F);
    IRBuilder<> b(pad);
    b.SetCurrentDebugLocation(dl);
    LandingPadInst *lp = b.CreateLandingPad(lpTy, 0);
    lp->setCleanup(true);
    ResumeInst *r = b.CreateResume(lp);
    for (CallInst *c : calls) changeToInvokeAndSplitBasicBlock(c, pad);
    exitHere(r, dl); /* the pad's predecessors exist now */
}

/*
 * The entry of an instrumented function (abi.h, "Re-entry without a call" and "Lite frames"),
 * as the GCC plugin's add_enter: a re-entry below the innermost frame calls nothing; a call
 * that starts exactly one group with a bit (not bit 63: a key of 0, as emitted, never makes
 * one), below the innermost frame, makes a lite frame when the thread has more than one lite
 * transition left; anything else calls the enter hook. The tests come in that order and
 * cur.ctl is loaded last, so a module whose keys stay 0 (a runtime of ABI 2 refused it; its
 * cur has 16 bytes) never reads past cur.sp. With weak-hooks: ABI 2's guarded call only.
 *
 *   head:     key, mask, sp loaded; both = key | mask; cfa
 *             br both == ~0, reentry, start
 *   reentry:  br cfa > sp, call, body                     (1:1000)
 *   start:    s = ~both; br s & (s-1) == 0 && s < 1<<63 && cfa <= sp, lite, call
 *   lite:     ctl = cur.ctl; left = ctl->left; br left > 1, make, call
 *   make:     top = cur.top; slots = mask, sp, top (volatile); ctl->left = left - 1;
 *             cur.sp = cfa; cur.mask = mask | s;
 *             cur.top = ctz(s); ctl->acts[ctz(s)]++; br body
 *   call:     t = enter(site); br body
 *   body:     tok = phi [t, call] [0, reentry] [LITE, make]
 */
Instrumenter::Token Instrumenter::enterFunction(Instruction *at, Value *siteArg, const DebugLoc &dl)
{
    Token t;
    if (Weak) { /* the thread-local may not exist: no check, no lite frame */
        t.tok = enterCall(at, siteArg, dl);
        return t;
    }
    Function &F = *at->getFunction();
    BasicBlock *head = at->getParent();
    BasicBlock *body = head->splitBasicBlock(at->getIterator(), "perfgroup.body");
    head->getTerminator()->eraseFromParent();
    auto block = [&](const char *name) { return BasicBlock::Create(Ctx, name, &F, body); };
    BasicBlock *reentry = block("perfgroup.reentry"), *start = block("perfgroup.start"),
               *lite = block("perfgroup.lite"), *make = block("perfgroup.lite.make"),
               *call = block("perfgroup.call");

    IRBuilder<> b(head);
    b.SetCurrentDebugLocation(dl);
    Value *key = b.CreateLoad(I64, b.CreateConstInBoundsGEP2_32(SiteTy, siteArg->stripPointerCasts(), 0, 6),
                              "perfgroup.key");
    Value *mask = b.CreateLoad(I64, curField(b, 0), "perfgroup.cur.mask");
    Value *sp = b.CreateLoad(I64, curField(b, 1), "perfgroup.cur.sp");
    /* the CFA: the address of the return address, plus its slot (no frame pointer needed,
     * unlike llvm.eh.dwarf.cfa); an inlined copy gets its caller's */
    Function *aora = pgIntrinsic(M, Intrinsic::addressofreturnaddress, I8Ptr);
    Value *cfa = b.CreateAdd(b.CreatePtrToInt(b.CreateCall(aora), I64), b.getInt64(8), "perfgroup.cfa");
    Value *both = b.CreateOr(key, mask, "perfgroup.both");
    b.CreateCondBr(b.CreateICmpEQ(both, b.getInt64(~0ull)), reentry, start);

    b.SetInsertPoint(reentry);
    b.CreateCondBr(b.CreateICmpUGT(cfa, sp), call, body, MDBuilder(Ctx).createBranchWeights(1, 1000));

    b.SetInsertPoint(start);
    Value *s = b.CreateNot(both, "perfgroup.s");
    Value *one = b.CreateICmpEQ(b.CreateAnd(s, b.CreateSub(s, b.getInt64(1))), b.getInt64(0));
    Value *bit = b.CreateICmpULT(s, b.getInt64(PERFGROUP_TOKEN_LITE));
    Value *below = b.CreateICmpULE(cfa, sp);
    b.CreateCondBr(b.CreateAnd(b.CreateAnd(one, bit), below, "perfgroup.may.lite"), lite, call);

    b.SetInsertPoint(lite);
    Value *ctl = b.CreateLoad(PointerType::getUnqual(LiteTy), curField(b, 2), "perfgroup.ctl");
    Value *left = b.CreateLoad(I64, leftOf(b, ctl), "perfgroup.left");
    b.CreateCondBr(b.CreateICmpUGT(left, b.getInt64(1)), make, call);

    /* The state the exit restores, saved in volatile stack slots: as SSA values (the mask and
     * sp the check loaded, the top this block loads) they were live across the body in
     * callee-saved registers on every path, re-entries too (Lua's luaH_getshortstr: five
     * pushes and pops, two of them the arguments'; plain has none). A slot is stored here only
     * and loaded by a lite exit only. */
    IRBuilder<> e(&F.getEntryBlock(), F.getEntryBlock().begin());
    AllocaInst *smask = e.CreateAlloca(I64, nullptr, "perfgroup.smask");
    AllocaInst *ssp = e.CreateAlloca(I64, nullptr, "perfgroup.ssp");
    AllocaInst *stop = e.CreateAlloca(I64, nullptr, "perfgroup.stop");

    /* the order of the GCC plugin's stores: left, sp, mask, top, then the activation */
    b.SetInsertPoint(make);
    Value *top = b.CreateLoad(I64, curField(b, 3), "perfgroup.top");
    b.CreateStore(mask, smask, /*isVolatile=*/true);
    b.CreateStore(sp, ssp, /*isVolatile=*/true);
    b.CreateStore(top, stop, /*isVolatile=*/true);
    b.CreateStore(b.CreateSub(left, b.getInt64(1)), leftOf(b, ctl));
    b.CreateStore(cfa, curField(b, 1));
    b.CreateStore(b.CreateOr(mask, s), curField(b, 0));
    Value *idx = b.CreateCall(pgIntrinsic(M, Intrinsic::cttz, I64), {s, b.getTrue()}, "perfgroup.idx");
    b.CreateStore(idx, curField(b, 3));
    Value *act = b.CreateInBoundsGEP(LiteTy, ctl, {b.getInt64(0), b.getInt32(1), idx});
    b.CreateStore(b.CreateAdd(b.CreateLoad(Type::getInt32Ty(Ctx), act), b.getInt32(1)), act);
    b.CreateBr(body);

    b.SetInsertPoint(call);
    CallInst *c = b.CreateCall(Enter, {siteArg});
    c->setDoesNotThrow();
    b.CreateBr(body);

    PHINode *tok = PHINode::Create(I64, 3, "perfgroup.token", &body->front());
    tok->addIncoming(c, call);
    tok->addIncoming(ConstantInt::get(I64, 0), reentry);
    tok->addIncoming(ConstantInt::get(I64, PERFGROUP_TOKEN_LITE), make);
    t.tok = tok;
    t.mask = smask;
    t.sp = ssp;
    t.top = stop;
    return t;
}

/*
 * An exit before `at`, as the GCC plugin's add_exit: nothing for a token of 0; a lite frame's
 * token counts `left` down and restores top, mask, then sp — or, with no lite transition left,
 * calls __perfgroup_exit_lite with the saved state (a weak reference: abi.h); any other token
 * goes to the exit hook.
 */
void Instrumenter::exitAt(Instruction *at, Value *siteArg, const Token &t, const DebugLoc &dl)
{
    if (!t.mask) {
        exitCall(at, siteArg, t.tok, dl);
        return;
    }
    if (!ExitLite) {
        ExitLite = hook(PERFGROUP_HOOK_EXIT_LITE_NAME,
                        FunctionType::get(Type::getVoidTy(Ctx), {I8Ptr, I64, I64, I64}, false));
        /* Weak (abi.h): a module of ABI 3 links and loads with a runtime of ABI 2, which
         * refuses it at its registration; only a lite frame calls it, none is made then. */
        if (auto *f = dyn_cast<Function>(ExitLite.getCallee()))
            if (f->isDeclaration()) f->setLinkage(GlobalValue::ExternalWeakLinkage);
    }
    IRBuilder<> b(at);
    Instruction *some = SplitBlockAndInsertIfThen(b.CreateICmpNE(t.tok, b.getInt64(0)), at,
                                                  /*Unreachable=*/false);
    Instruction *liteT, *hookT;
    IRBuilder<> s(some);
    SplitBlockAndInsertIfThenElse(s.CreateICmpEQ(t.tok, s.getInt64(PERFGROUP_TOKEN_LITE)), some,
                                  &liteT, &hookT);
    IRBuilder<> h(hookT);
    h.SetCurrentDebugLocation(dl);
    h.CreateCall(Exit, {siteArg, t.tok})->setDoesNotThrow();

    IRBuilder<> l(liteT);
    l.SetCurrentDebugLocation(dl);
    Value *smask = l.CreateLoad(I64, t.mask, /*isVolatile=*/true, "perfgroup.smask.v");
    Value *ssp = l.CreateLoad(I64, t.sp, /*isVolatile=*/true, "perfgroup.ssp.v");
    Value *stop = l.CreateLoad(I64, t.top, /*isVolatile=*/true, "perfgroup.stop.v");
    Value *ctl = l.CreateLoad(PointerType::getUnqual(LiteTy), curField(l, 2), "perfgroup.ctl");
    Value *left = l.CreateLoad(I64, leftOf(l, ctl), "perfgroup.left");
    Instruction *fastT, *slowT;
    SplitBlockAndInsertIfThenElse(l.CreateICmpUGT(left, l.getInt64(1)), liteT, &fastT, &slowT);
    IRBuilder<> f(fastT);
    f.SetCurrentDebugLocation(dl);
    f.CreateStore(f.CreateSub(left, f.getInt64(1)), leftOf(f, ctl));
    f.CreateStore(stop, curField(f, 3));
    f.CreateStore(smask, curField(f, 0));
    f.CreateStore(ssp, curField(f, 1));
    IRBuilder<> w(slowT);
    w.SetCurrentDebugLocation(dl);
    w.CreateCall(ExitLite, {siteArg, smask, ssp, stop})->setDoesNotThrow();
}

/* if (&__perfgroup_landed) __perfgroup_landed() after every setjmp call (returns twice,
 * named *setjmp*: not vfork, nor getcontext, whose second return may be on another stack) of
 * every defined function but a naked one, as the GCC plugin's add_landings (abi.h,
 * PERFGROUP_HOOK_LANDED): where a longjmp lands, the runtime drops the frames it skipped at
 * once. The hook is declared extern_weak: no link dependency. Returns how many. */
unsigned addLandings(Module &M)
{
    LLVMContext &Ctx = M.getContext();
    std::vector<CallInst *> calls;
    for (Function &F : M) {
        if (F.isDeclaration() || F.hasFnAttribute(Attribute::Naked))
            continue;
        for (BasicBlock &BB : F)
            for (Instruction &I : BB) {
                auto *c = dyn_cast<CallInst>(&I);
                Function *callee = c ? c->getCalledFunction() : nullptr;
                if (callee && c->hasFnAttr(Attribute::ReturnsTwice) &&
                    callee->getName().contains("setjmp") && !c->isMustTailCall())
                    calls.push_back(c);
            }
    }
    if (calls.empty())
        return 0;
    FunctionCallee landed = M.getOrInsertFunction(PERFGROUP_HOOK_LANDED_NAME,
                                                  FunctionType::get(Type::getVoidTy(Ctx), false));
    auto *decl = dyn_cast<Function>(landed.getCallee());
    if (decl && decl->isDeclaration()) {
        decl->setLinkage(GlobalValue::ExternalWeakLinkage);
        decl->setDoesNotThrow();
    }
    for (CallInst *c : calls) {
        Instruction *next = c->getNextNode();
        IRBuilder<> b(next);
        Value *there = b.CreateICmpNE(landed.getCallee(),
                                      ConstantPointerNull::get(cast<PointerType>(landed.getCallee()->getType())));
        Instruction *then = SplitBlockAndInsertIfThen(there, next, /*Unreachable=*/false);
        IRBuilder<> t(then);
        t.SetCurrentDebugLocation(c->getDebugLoc());
        t.CreateCall(landed)->setDoesNotThrow();
    }
    return (unsigned)calls.size();
}

void Instrumenter::instrument(Function &F, const Want &w)
{
    StringRef fname = w.display.empty() ? F.getName() : StringRef(w.display);
    fname.consume_front("\1"); /* asm("label") names */
    GlobalVariable *gv = site(F, w, fname);

    DebugLoc dl;
    if (DISubprogram *sp = F.getSubprogram())
        dl = DILocation::get(Ctx, sp->getScopeLine(), 0, sp);

    std::vector<Instruction *> rets;
    for (BasicBlock &BB : F)
        if (auto *r = dyn_cast<ReturnInst>(BB.getTerminator())) {
            /* Nothing may come between a musttail call and its ret: exit goes before the call. */
            if (CallInst *mt = BB.getTerminatingMustTailCall()) rets.push_back(mt);
            else rets.push_back(r);
        }

    BasicBlock &entry = F.getEntryBlock();
    BasicBlock::iterator at = entry.getFirstInsertionPt();
    while (isa<AllocaInst>(*at)) ++at; /* keep the static allocas together */
    Value *siteArg = ConstantExpr::getPointerCast(gv, I8Ptr);
    Token tok = enterFunction(&*at, siteArg, dl);

    for (Instruction *r : rets)
        exitAt(r, siteArg, tok, r->getDebugLoc() ? r->getDebugLoc() : dl);
    if (!F.doesNotThrow())
        exitsOnUnwind(
            F, [&](Instruction *r, const DebugLoc &l) { exitAt(r, siteArg, tok, l); }, dl,
            [](const Instruction *) { return true; });

    /* The body now calls the runtime: memory-effect attributes clang derived from
     * __attribute__((const/pure)) would be false for the definition. (Call sites keep theirs:
     * CSE of const/pure calls is a documented limit, as with GCC.) */
#define PG_REMOVE(kind) F.removeFnAttr(Attribute::kind);
    PG_FOR_EACH_MEMORY_FN_ATTR(PG_REMOVE)
#undef PG_REMOVE
    F.removeFnAttr(Attribute::Speculatable);
    F.addFnAttr("perfgroup-instrumented");
}

/*
 * One constructor per module, hidden and COMDAT (PERFGROUP_MODULE_CTOR_NAME), so N
 * translation units of one executable or shared object register its sites once: the
 * __start_/__stop_ symbols the linker defines for the section are per module.
 */
void Instrumenter::emitModuleConstructor()
{
    if (M.getFunction(PERFGROUP_MODULE_CTOR_NAME)) return;
    auto *fty = FunctionType::get(Type::getVoidTy(Ctx), false);
    Function *ctor = Function::Create(fty, GlobalValue::LinkOnceODRLinkage,
                                      PERFGROUP_MODULE_CTOR_NAME, M);
    ctor->setVisibility(GlobalValue::HiddenVisibility);
    ctor->setComdat(M.getOrInsertComdat(PERFGROUP_MODULE_CTOR_NAME));
    ctor->setDoesNotThrow();
    ctor->addFnAttr(Attribute::NoInline);

    auto bound = [&](const char *name) {
        GlobalVariable *g = M.getNamedGlobal(name);
        if (!g)
            g = new GlobalVariable(M, Type::getInt8Ty(Ctx), false, GlobalValue::ExternalLinkage,
                                   nullptr, name);
        /* Hidden even when the source declared it (a module reading its own sites): bound to
         * another module's section, registration would report someone else's sites. */
        g->setVisibility(GlobalValue::HiddenVisibility);
        return ConstantExpr::getPointerCast(g, I8Ptr);
    };
    FunctionCallee reg = hook(PERFGROUP_MODULE_REGISTER_NAME,
                              FunctionType::get(Type::getVoidTy(Ctx),
                                                {Type::getInt32Ty(Ctx), I8Ptr, I8Ptr}, false));
    IRBuilder<> b(BasicBlock::Create(Ctx, "", ctor));
    guarded(b.CreateRetVoid(), reg,
            {b.getInt32(emittedAbi()), bound(PERFGROUP_SITES_START_NAME),
             bound(PERFGROUP_SITES_STOP_NAME)},
            DebugLoc());
    /* 101: the first priority not reserved for the implementation, as the GCC plugin. */
    appendToGlobalCtors(M, ctor, 101, ctor);
}

} // namespace perfgroup_clang
