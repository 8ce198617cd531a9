/* SPDX-License-Identifier: MIT */
/*
 * plugin-clang/instrument.cpp — the LLVM pass of perfgroup-clang.so: enter/exit hooks, site
 * descriptors and per-module registration. This header is the plugin's design note; the
 * front-end half (attribute, options, AST table) is frontend.cpp, the table format table.h.
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
 * ---- Options (-fplugin-arg-perfgroup-NAME[=VALUE], as the GCC plugin) ------------------------
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
#include "table.h"

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
#include "llvm/Passes/PassPlugin.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Local.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"
#include "llvm/Transforms/Utils/SSAUpdater.h"

#include "llvm-compat.h" /* after clang/LLVM: every version #if */

#include <map>
#include <set>
#include <string>
#include <vector>

using namespace llvm;
using namespace perfgroup_clang;

namespace {

/* What the pass knows about one function it is asked to instrument. */
struct Want {
    std::string attr, filegroup, file;
    unsigned line = 0;
    std::string skip;
    std::string display; /* the site's function name if not the IR name */
    bool inl = false;    /* the front end says: inline or a template instantiation */
};

/* ---- Inputs: the front end's table and llvm.global.annotations ---------------------------- */

static std::string cString(const Value *v)
{
    auto *gv = dyn_cast<GlobalVariable>(v->stripPointerCasts());
    if (!gv || !gv->hasInitializer()) return "";
    auto *cda = dyn_cast<ConstantDataSequential>(gv->getInitializer());
    if (!cda || !cda->isString()) return "";
    StringRef s = cda->getAsString();
    return s.substr(0, s.find('\0')).str();
}

/* Rewrites the array global `name` (llvm.used, llvm.compiler.used, llvm.global.annotations)
 * keeping the elements `keep` accepts; deletes it when nothing is left. */
static void filterArrayGlobal(Module &M, StringRef name, function_ref<bool(Constant *)> keep)
{
    GlobalVariable *gv = M.getNamedGlobal(name);
    if (!gv || !gv->hasInitializer()) return;
    auto *arr = dyn_cast<ConstantArray>(gv->getInitializer());
    if (!arr) return;
    std::vector<Constant *> kept;
    for (Use &u : arr->operands())
        if (keep(cast<Constant>(u.get()))) kept.push_back(cast<Constant>(u.get()));
    if (kept.size() == arr->getNumOperands()) return;
    std::string section = gv->getSection().str();
    GlobalValue::LinkageTypes linkage = gv->getLinkage();
    gv->setName("");
    if (!kept.empty()) {
        ArrayType *t = ArrayType::get(arr->getType()->getElementType(), kept.size());
        auto *n = new GlobalVariable(M, t, gv->isConstant(), linkage, ConstantArray::get(t, kept),
                                     name);
        n->setSection(section);
    }
    gv->eraseFromParent();
}

/* Takes the front end's table out of the module (see table.h). Returns false if there is none:
 * IR that did not come through the front end (.ll/.bc input, -save-temps' backend step of a
 * module compiled without the plugin). */
static bool takeTable(Module &M, Table &t)
{
    GlobalVariable *found = nullptr;
    for (GlobalVariable &gv : M.globals()) {
        if (gv.getSection() != "llvm.metadata" || !gv.hasInitializer()) continue;
        auto *cda = dyn_cast<ConstantDataSequential>(gv.getInitializer());
        if (cda && cda->isString() && pgStartsWith(cda->getAsString(), TableMagic)) {
            found = &gv;
            break;
        }
    }
    if (!found) return false;
    StringRef s = cast<ConstantDataSequential>(found->getInitializer())->getAsString();
    bool ok = decodeTable(s.substr(0, s.find('\0')).str(), t);
    for (const char *used : {"llvm.used", "llvm.compiler.used"})
        filterArrayGlobal(M, used, [&](Constant *c) { return c->stripPointerCasts() != found; });
    found->removeDeadConstantUsers();
    if (found->use_empty()) found->eraseFromParent();
    if (!ok) report_fatal_error(Twine("perfgroup: malformed front-end table in module ") +
                                M.getModuleIdentifier(), false);
    return true;
}

/* Takes our "perfgroup:<group>" entries out of llvm.global.annotations: they would keep
 * annotated inline functions alive, and consuming them makes the pass idempotent. */
static void takeAnnotations(Module &M, std::map<Function *, Want> &out)
{
    std::set<GlobalVariable *> strings; /* one file name string serves many entries */
    filterArrayGlobal(M, "llvm.global.annotations", [&](Constant *e) {
        auto *cs = dyn_cast<ConstantStruct>(e);
        if (!cs || cs->getNumOperands() < 4) return true;
        std::string ann = cString(cs->getOperand(1));
        if (!pgStartsWith(StringRef(ann), AnnotationPrefix)) return true;
        if (auto *f = dyn_cast<Function>(cs->getOperand(0)->stripPointerCasts())) {
            Want &w = out[f];
            if (w.attr.empty()) { /* the first is the definition's own attribute */
                w.attr = ann.substr(strlen(AnnotationPrefix));
                w.file = cString(cs->getOperand(2));
                if (auto *ci = dyn_cast<ConstantInt>(cs->getOperand(3)))
                    w.line = (unsigned)ci->getZExtValue();
            }
        }
        for (unsigned i : {1u, 2u})
            if (auto *gv = dyn_cast<GlobalVariable>(cs->getOperand(i)->stripPointerCasts()))
                strings.insert(gv);
        return false;
    });
    for (GlobalVariable *gv : strings) {
        gv->removeDeadConstantUsers();
        if (gv->use_empty() && gv->hasLocalLinkage()) gv->eraseFromParent();
    }
}

/* ---- Emitting sites, hooks and the module constructor ------------------------------------- */

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
        SiteTy, {ConstantInt::get(Type::getInt16Ty(Ctx), PERFGROUP_ABI_VERSION),
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
        exitsOnUnwind(F, siteArg, tokAt, dl, [&](const Instruction *i) { return inRun.count(i) > 0; });
    /* after the unwinding invokes: their splits move instructions between blocks */
    for (Instruction *at : exits) exitCall(at, siteArg, tokAt(at), locOf(at));
    Launder = false;
    F.addFnAttr("perfgroup-instrumented");
    return nullptr;
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
            {b.getInt32(PERFGROUP_ABI_VERSION), bound(PERFGROUP_SITES_START_NAME),
             bound(PERFGROUP_SITES_STOP_NAME)},
            DebugLoc());
    /* 101: the first priority not reserved for the implementation, as the GCC plugin. */
    appendToGlobalCtors(M, ctor, 101, ctor);
}

/* Function multiversioning (target_clones, target("...") versions): CodeGen names each
 * version <name>.<features>[.<n>] ("sum.avx2.0", "_Z3sumPKii.default.1"), the front end's table
 * knows <name>. Every version is instrumented as the function itself (same group and name: the
 * trace does not depend on the CPU); the resolver (<name>.resolver, the ifunc's) never is, as
 * GCC's plugin does. Returns <name>, or "" for anything else. */
static std::string multiversionedAs(const Function &F)
{
    StringRef n = F.getName();
    size_t dot = n.find('.');
    if (dot == StringRef::npos || dot == 0 || pgEndsWith(n, ".resolver") || pgEndsWith(n, ".ifunc"))
        return "";
    /* Only a function whose versions an ifunc resolver chooses (<name>.resolver, every release
     * 13-19): other dotted names (work.omp_outlined, clang 16+) are not versions of <name>. */
    std::string base = n.substr(0, dot).str();
    if (!F.getParent()->getFunction(base + ".resolver")) return "";
    return base;
}

/* Why a function with a group is still left alone; nullptr if it is instrumented. */
static const char *whySkip(const Function &F, const Want &w)
{
    StringRef n = F.getName();
    n.consume_front("\1");
    if (F.isDeclaration())
        return "no body in this module";
    if (F.hasFnAttribute("perfgroup-instrumented"))
        return "already instrumented: running the pass twice adds nothing";
    if (F.hasFnAttribute(Attribute::Naked))
        return "naked: no prologue, the body is asm that expects the caller's registers";
    if (pgStartsWith(n, "__perfgroup") || pgStartsWith(n, "perfgroup_"))
        return "the runtime's own function: instrumenting it recursed to a crash";
    if (!w.skip.empty())
        return "no_instrument_function or exclude=: the user asked for no hooks";
    /* available_externally bodies ARE instrumented: they exist only to be inlined, and an
     * uninstrumented copy would make every inlined call vanish from the trace. */
    return nullptr;
}

/* OpenMP: clang outlines each `#pragma omp parallel` body into a function (.omp_outlined.)
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

static void chargeOmpRegions(std::vector<std::pair<Function *, Want>> &work)
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

/* Functions this module passes as the start routine of pthread_create (3rd argument) or
 * thrd_create (2nd): a thread's root, whose site gets PERFGROUP_SITE_F_ROOT (the runtime opens
 * no implicit event for it as the thread's outermost frame; `main` it knows by name). As the
 * GCC plugin: a start routine passed through a variable is not seen. The front end gives the
 * verbose note. */
static std::set<const Function *> threadRoots(Module &M)
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

/* ---- Call-graph elision (the same rules as the GCC plugin's, plugin-gcc/perfgroup.cc) --------
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
 * plugin does, so the corpus can compare the two. */

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
    if (pgIsPresplitCoroutine(F)) return "a C++20 coroutine: resumed through its handle, from anywhere";
    if (!F.hasLocalLinkage()) return "externally visible: callers outside this unit";
    F.removeDeadConstantUsers(); /* e.g. the llvm.global.annotations entry just taken out */
    for (const Use &u : F.uses()) {
        auto *cb = dyn_cast<CallBase>(u.getUser());
        if (!cb || !cb->isCallee(&u)) return "address taken: may be called from anywhere";
    }
    if (callsNamed(F, "__kmpc_fork_call", "__kmpc_fork_teams") ||
        callsNamed(F, "__kmpc_omp_task_alloc", "__kmpc_omp_task_alloc"))
        return "holds an OpenMP region";
    if (F.use_empty()) return "no direct caller in this unit";
    static const char *const why[] = {
        "",
        "called from '%s', which begins an event or a nested loop or is a thread's outermost frame",
        "called from '%s', in other groups",
        "called from '%s', which is not instrumented",
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

/* Takes out of `work` the functions that are only ever re-entries (notes each verdict with
 * verbose). */
static void elideReentries(std::vector<std::pair<Function *, Want>> &work, const Table &table,
                           const std::set<const Function *> &roots)
{
    std::map<Function *, const Want *> inst;
    for (auto &fw : work) inst[fw.first] = &fw.second;
    std::vector<bool> elided(work.size());
    for (size_t i = 0; i < work.size(); i++) {
        Function &F = *work[i].first;
        const Want &w = work[i].second;
        std::string who;
        std::string why = table.allFunctions ? "all-functions: every instrumented function keeps its hooks"
                                             : keepReason(F, w, inst, roots, who);
        elided[i] = why.empty();
        if (!table.verbose) continue;
        StringRef shown = w.display.empty() ? F.getName() : StringRef(w.display);
        shown.consume_front("\1");
        errs() << w.file << ':' << w.line << ": note: perfgroup: '" << shown << "' ";
        if (elided[i])
            errs() << "elided: every caller is in its groups, it is only ever a re-entry\n";
        else
            errs() << "keeps its hooks: " << why << '\n';
    }
    size_t n = 0;
    for (size_t i = 0; i < work.size(); i++)
        if (!elided[i]) work[n++] = work[i];
    work.resize(n);
}

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

    std::vector<std::pair<Function *, Want>> work;
    for (Function &F : M) {
        Want w;
        auto row = table.rows.find(F.getName().str());
        auto ann = annotated.find(&F);
        std::string clone = multiversionedAs(F);
        if (row == table.rows.end() && !clone.empty()) row = table.rows.find(clone);
        if (row != table.rows.end()) {
            const Row &r = row->second;
            w = Want{r.attr, r.filegroup, r.file, r.line, r.skip, r.display, r.inl};
            if (w.display.empty() && !clone.empty()) w.display = clone;
        } else if (ann != annotated.end()) {
            w = ann->second;
            if (w.file.empty()) {
                if (DISubprogram *sp = F.getSubprogram()) {
                    w.file = sp->getFilename().str();
                    w.line = sp->getLine();
                } else {
                    w.file = M.getSourceFileName();
                }
            }
        } else {
            continue;
        }
        if (w.attr.empty() && w.filegroup.empty()) continue; /* annotate("perfgroup:") */
        if (!whySkip(F, w)) work.emplace_back(&F, w);
    }
    std::set<const Function *> roots = threadRoots(M);
    elideReentries(work, table, roots);
    chargeOmpRegions(work);
    if (work.empty()) /* declare no hook in a module that calls none */
        return haveTable || !annotated.empty();
    Instrumenter ins(M, cxx, weak);
    ins.Roots = roots;
    for (auto &fw : work) {
        if (!pgIsPresplitCoroutine(*fw.first)) {
            ins.instrument(*fw.first, fw.second);
        } else if (const char *why = ins.instrumentCoroutine(*fw.first, fw.second)) {
            /* the front end announced it as instrumented: say it is not, whatever verbose says */
            errs() << fw.second.file << ':' << fw.second.line << ": warning: perfgroup: '"
                   << (fw.second.display.empty() ? fw.first->getName() : StringRef(fw.second.display))
                   << "' not instrumented: " << why << '\n';
        }
    }
    ins.emitModuleConstructor();
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

extern "C" __attribute__((visibility("default"))) PassPluginLibraryInfo llvmGetPassPluginInfo()
{
    return {LLVM_PLUGIN_API_VERSION, "perfgroup", "0.1", [](PassBuilder &PB) {
                /* Pipeline start: before inlining, at -O0..-O3 and in -flto/-flto=thin
                 * pre-link pipelines. */
                PB.registerPipelineStartEPCallback(
                    [](ModulePassManager &MPM, PgOptimizationLevel) { MPM.addPass(PerfGroupPass()); });
                /* Right after CoroElide (see CoroElideTailFix). */
                PB.registerScalarOptimizerLateEPCallback(
                    [](FunctionPassManager &FPM, PgOptimizationLevel) { FPM.addPass(CoroElideTailFix()); });
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
