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
 *                                                %enter = (%key | %mask) != -1 || %cfa > %sp
 *                                                br i1 %enter, label %call, label %body, !prof 1:1000
 *                                              call:
 *                                                %t = call i64 @__perfgroup_enter(@__perfgroup_site._Z5parsePKc)
 *                                                br label %body
 *                                              body:
 *                                                %perfgroup.token = phi i64 [ %t, %call ], [ 0, %entry ]
 *     %tobool = icmp ne i8* %s, null             %tobool = icmp ne i8* %s, null
 *     br i1 %tobool, label %if.end, label %return    br i1 %tobool, label %if.end, label %return
 *   if.end:                                    if.end:
 *     %call = call i32 @_Z4workPKc(i8* %s)       %call1 = invoke i32 @_Z4workPKc(i8* %s)
 *     br label %return                                   to label %return unwind label %perfgroup.unwind
 *   return:                                    return:
 *     %retval.0 = phi i32 [...]                  %retval.0 = phi i32 [...]
 *                                                if (%perfgroup.token != 0)   ; a block of its own
 *                                                  call void @__perfgroup_exit(@__perfgroup_site._Z5parsePKc, i64 %perfgroup.token)
 *     ret i32 %retval.0                          ret i32 %retval.0
 *   }                                          perfgroup.unwind:
 *                                                %0 = landingpad { i8*, i32 } cleanup
 *                                                if (%perfgroup.token != 0)
 *                                                  call void @__perfgroup_exit(@__perfgroup_site._Z5parsePKc, i64 %perfgroup.token)
 *                                                resume { i8*, i32 } %0
 *                                              }
 *   plus
 *   @__perfgroup_site._Z5parsePKc = internal global %perfgroup_site { i16 2, i16 0x16 (CLANG|CXX|ATTR),
 *       i32 3, "net\0\0", "_Z5parsePKc\0dn.cc\0", null, i64 0 }, section "perfgroup_sites", align 8
 *   (in llvm.compiler.used), and once per module a hidden COMDAT __perfgroup_module_ctor
 *   (llvm.global_ctors, priority 101) calling __perfgroup_register_module(2,
 *   __start_perfgroup_sites, __stop_perfgroup_sites) with hidden extern bounds.
 *   The test before the enter hook is the inline re-entry check (include/perfgroup/abi.h): a
 *   call of a function whose groups all run, below the innermost frame that started one,
 *   calls nothing. Not in coroutines (their runs start at resume points).
 *   With weak-hooks, the three runtime functions are extern_weak, enter and register guarded
 *   by `icmp ne @hook, null` instead of the inline check (the exit is guarded by its token,
 *   0 without the runtime): an object links and runs without the runtime, hooks doing
 *   nothing; linking the runtime makes them live.
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
    /* Version 2 (abi.h): this plugin makes no lite frames, its sequence is ABI 2's. */
    Constant *init = ConstantStruct::get(
        SiteTy, {ConstantInt::get(Type::getInt16Ty(Ctx), PERFGROUP_ABI_VERSION_NO_LITE),
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
void Instrumenter::exitsOnUnwind(Function &F, Value *siteArg,
                                 function_ref<Value *(Instruction *)> tokAt, const DebugLoc &dl,
                                 function_ref<bool(const Instruction *)> open)
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
        exitCall(r, siteArg, tokAt(r), r->getDebugLoc() ? r->getDebugLoc() : dl);
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
    exitCall(r, siteArg, tokAt(r), dl); /* the pad's predecessors exist now */
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
    Instruction *tok = enterCall(&*at, siteArg, dl, /*check=*/true);

    for (Instruction *r : rets)
        exitCall(r, siteArg, tok, r->getDebugLoc() ? r->getDebugLoc() : dl);
    if (!F.doesNotThrow())
        exitsOnUnwind(
            F, siteArg, [&](Instruction *) { return tok; }, dl,
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
            {b.getInt32(PERFGROUP_ABI_VERSION_NO_LITE), bound(PERFGROUP_SITES_START_NAME),
             bound(PERFGROUP_SITES_STOP_NAME)},
            DebugLoc());
    /* 101: the first priority not reserved for the implementation, as the GCC plugin. */
    appendToGlobalCtors(M, ctor, 101, ctor);
}

} // namespace perfgroup_clang
