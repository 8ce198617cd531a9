/* SPDX-License-Identifier: MIT */
/*
 * plugin-clang/select.cpp — which functions are instrumented, with which groups, decided
 * twice: by the front end, which knows the source, and by the pass, which has the last word
 * on the IR.
 *
 * The front end (TableWriter), once per translation unit, before CodeGen sees it: walks every
 * function definition (template instantiations, lambdas, ctors/dtors included) and writes one
 * table row per function to instrument: attribute group (attribute.cpp), file group (map=,
 * default=; not in system headers unless system-headers), file, line, or the reason to skip
 * it; g++-style lambda names for the sites. The table goes into the module (emitTable, table.h)
 * and the pass takes it out (table.cpp).
 *
 * The pass (selectFunctions): matches the table's rows and the perfgroup: annotations to the
 * module's functions (multiversioned clones as their function) and leaves out what must never
 * get hooks (whySkip).
 */
#include "plugin.h"

#include "clang/AST/ASTConsumer.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/Attr.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/GlobalDecl.h"
#include "clang/AST/Mangle.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Frontend/CompilerInstance.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"

#include "llvm-compat.h" /* after clang/LLVM: every version #if */
#include "../common/pathmap.h" /* the map's path rule, shared with the GCC plugin */

#include <fnmatch.h>

using namespace clang;

namespace perfgroup_clang {

/* ---- The front end ------------------------------------------------------------------------ */

namespace {

/*
 * Lambda names as g++ emits them. Clang 14 mangles a lambda that needs no ODR-stable name (one
 * in a non-inline function body) as an unnamed local type, "$_0", where g++ writes the
 * Itanium form "{lambda(int)#1}". Sites carry names for people and for the shared corpus, so
 * the site gets the Itanium form: lambdas numbered from 1 in source order within their
 * enclosing context (g++'s counting; the ABI counts per signature). The IR keeps clang's name.
 */
static std::map<const CXXRecordDecl *, unsigned> *LambdaNumbers;

static pg_optional<unsigned> lambdaNumber(ASTContext &, const NamedDecl *ND)
{
    auto *RD = dyn_cast<CXXRecordDecl>(ND);
    if (!LambdaNumbers || !RD || !RD->isLambda() || RD->getLambdaManglingNumber())
        return pg_nullopt;
    auto it = LambdaNumbers->find(RD);
    if (it == LambdaNumbers->end()) return pg_nullopt;
    return it->second;
}

static bool insideNumberlessLambda(const DeclContext *DC)
{
    for (; DC; DC = DC->getParent())
        if (auto *RD = dyn_cast<CXXRecordDecl>(DC))
            if (RD->isLambda() && !RD->getLambdaManglingNumber()) return true;
    return false;
}

class Walker : public RecursiveASTVisitor<Walker> {
public:
    Walker(ASTContext &C, const Options &O, Table &T)
        : SM(C.getSourceManager()), Diags(C.getDiagnostics()), Opts(O), Tab(T),
          Mangle(C.createMangleContext()),
          Display(ItaniumMangleContext::create(C, C.getDiagnostics(), lambdaNumber))
    {
        static constexpr auto Instrumenting = pgDiagFormat(PGTEXT_NOTE_INSTRUMENTING);
        static constexpr auto Skipped = pgDiagFormat(PGTEXT_NOTE_SKIPPED);
        static constexpr auto StartsThread = pgDiagFormat(PGTEXT_NOTE_STARTS_THREAD);
        static constexpr auto Main = pgDiagFormat(PGTEXT_NOTE_MAIN);
        NoteInstrumenting = Diags.getCustomDiagID(DiagnosticsEngine::Note, Instrumenting.text);
        NoteSkipped = Diags.getCustomDiagID(DiagnosticsEngine::Note, Skipped.text);
        NoteStartsThread = Diags.getCustomDiagID(DiagnosticsEngine::Note, StartsThread.text);
        NoteMain = Diags.getCustomDiagID(DiagnosticsEngine::Note, Main.text);
        NoteFile = Diags.getCustomDiagID(DiagnosticsEngine::Note, "%0"); /* pgmap_note() */
    }

    /* verbose: a function passed straight to pthread_create/thrd_create as the start routine
     * (the pass flags its site PERFGROUP_SITE_F_ROOT; the GCC plugin's note, once each). */
    bool VisitCallExpr(CallExpr *CE)
    {
        const FunctionDecl *fn = Opts.verbose ? startRoutineOf(CE) : nullptr;
        if (!fn || !StartRoutines.insert(fn->getCanonicalDecl()).second) return true;
        std::string name = mangled(*Mangle, GlobalDecl(fn));
        llvm::StringRef shown(name);
        shown.consume_front("\1");
        Diags.setLastDiagnosticIgnored(false);
        Diags.Report(SM.getExpansionLoc(CE->getBeginLoc()), NoteStartsThread) << shown;
        return true;
    }

    bool shouldVisitTemplateInstantiations() const { return true; }
    bool shouldVisitImplicitCode() const { return true; }

    bool VisitLambdaExpr(LambdaExpr *L)
    {
        const CXXRecordDecl *RD = L->getLambdaClass();
        if (!RD->getLambdaManglingNumber()) {
            const Decl *ctx = cast<Decl>(RD->getDeclContext());
            Numbers[RD] = ++Counters[ctx];
        }
        return true;
    }

    bool VisitFunctionDecl(FunctionDecl *FD)
    {
        if (!FD->isThisDeclarationADefinition() || FD->isDependentContext())
            return true;
        if (!Opts.fileGroups() && !anyAnnotation(FD)) return true; /* the common, cheap case */
        decide(FD);
        return true;
    }

    /* Display names of lambda members, once every lambda of the TU has its number. */
    void finish()
    {
        LambdaNumbers = &Numbers;
        for (auto &p : PendingDisplay) {
            std::string d = mangled(*Display, p.second);
            for (auto &kv : Tab.rows)
                if (kv.first == p.first) kv.second.display = d;
        }
        LambdaNumbers = nullptr;
    }

private:
    SourceManager &SM;
    DiagnosticsEngine &Diags;
    const Options &Opts;
    Table &Tab;
    std::unique_ptr<MangleContext> Mangle;
    std::unique_ptr<MangleContext> Display;
    std::map<const CXXRecordDecl *, unsigned> Numbers;
    std::map<const Decl *, unsigned> Counters;
    std::vector<std::pair<std::string, GlobalDecl>> PendingDisplay;
    unsigned NoteInstrumenting, NoteSkipped, NoteStartsThread, NoteMain, NoteFile;
    std::set<const FunctionDecl *> StartRoutines;

    /* A defining file, resolved once per spelling: its absolute path and the first map entry
     * that matches it (-1: none). */
    struct FileInfo {
        std::string abs;
        int entry = -1;
        bool noted = false; /* verbose: its map note was given */
    };
    std::map<std::string, FileInfo> Files;

    FileInfo &fileInfo(const std::string &spelled)
    {
        auto [it, added] = Files.try_emplace(spelled);
        FileInfo &fi = it->second;
        if (!added) return fi;
        char abs[PGMAP_PATH_MAX];
        fi.abs = pgmap_file_path(Opts.cwd.c_str(), spelled.c_str(), abs) < 0 ? spelled : abs;
        for (size_t i = 0; i < Opts.map.size(); i++)
            if (pgmap_match(Opts.map[i].pattern.c_str(), Opts.map[i].kind, fi.abs.c_str(),
                            spelled.c_str())) {
                fi.entry = int(i);
                break;
            }
        return fi;
    }

    std::string fileGroup(const std::string &file, SourceLocation loc)
    {
        if (file.empty() || Opts.map.empty()) return Opts.defaultGroup;
        FileInfo &fi = fileInfo(file);
        const MapEntry *e = fi.entry >= 0 ? &Opts.map[fi.entry] : nullptr;
        if (Opts.verbose && !fi.noted) {
            char note[3 * PGMAP_PATH_MAX];
            pgmap_note(note, sizeof note, fi.abs.c_str(), e ? e->glob.c_str() : nullptr,
                       e ? e->map.c_str() : Opts.lastMap.c_str(), e ? e->line : 0,
                       e ? e->group.c_str() : nullptr, Opts.defaultGroup.c_str());
            Diags.setLastDiagnosticIgnored(false); /* as below: a note after no warning */
            Diags.Report(loc, NoteFile) << note;
            fi.noted = true;
        }
        return e ? e->group : Opts.defaultGroup;
    }

    static std::string mangled(MangleContext &MC, GlobalDecl GD)
    {
        const auto *ND = cast<NamedDecl>(GD.getDecl());
        if (!MC.shouldMangleDeclName(ND)) return ND->getName().str();
        std::string s;
        llvm::raw_string_ostream os(s);
        MC.mangleName(GD, os);
        return os.str();
    }

    bool excluded(const FunctionDecl *FD, const std::string &mangledName, const std::string &file)
    {
        std::string plain = FD->getDeclName().isIdentifier() ? FD->getName().str() : "";
        std::string qualified = FD->getQualifiedNameAsString();
        llvm::StringRef m(mangledName);
        m.consume_front("\1");
        for (const MapEntry &x : Opts.exclude) {
            const char *g = x.glob.c_str();
            if (fnmatch(g, plain.c_str(), 0) == 0 || fnmatch(g, qualified.c_str(), 0) == 0 ||
                fnmatch(g, m.str().c_str(), 0) == 0 ||
                (!file.empty() && pgmap_match(x.pattern.c_str(), x.kind,
                                              fileInfo(file).abs.c_str(), file.c_str())))
                return true;
        }
        return false;
    }

    /* Why a function with a group is never instrumented, or "" (the GCC plugin's reasons). */
    static const char *skipReason(const FunctionDecl *FD)
    {
        /* A naked function has no prologue or frame: inserted calls would corrupt the stack. */
        if (FD->hasAttr<NakedAttr>()) return PGTEXT_SKIP_NAKED;
        /* The user's explicit opt-out (PERF_GROUP_NONE). */
        if (FD->hasAttr<NoInstrumentFunctionAttr>()) return PGTEXT_SKIP_NO_INSTRUMENT;
        /* The runtime's own functions: instrumenting them would recurse into the hooks. */
        if (FD->getDeclName().isIdentifier() &&
            (pgStartsWith(FD->getName(), "__perfgroup") || pgStartsWith(FD->getName(), "perfgroup_")))
            return PGTEXT_SKIP_RUNTIME;
        return "";
    }

    void decide(FunctionDecl *FD)
    {
        Row r;
        r.attr = attributeGroup(Diags, FD);
        SourceLocation loc = SM.getExpansionLoc(FD->getLocation());
        PresumedLoc p = SM.getPresumedLoc(loc);
        if (p.isValid()) {
            r.file = p.getFilename();
            r.line = p.getLine();
        }
        /* Compiler-generated functions (implicit members, lambda invokers) are no source
         * function a user could have meant; functions from system headers get no file group
         * unless asked (one STL test went from 2 to 33,208 hook calls). */
        if (!FD->isImplicit() && (!SM.isInSystemHeader(loc) || Opts.systemHeaders))
            r.filegroup = fileGroup(r.file, loc);
        if (r.attr.empty() && r.filegroup.empty()) return;
        r.skip = skipReason(FD);
        r.inl = FD->isInlined() || FD->isTemplateInstantiation();

        std::vector<GlobalDecl> gds;
        if (auto *CD = dyn_cast<CXXConstructorDecl>(FD)) {
            gds.emplace_back(CD, Ctor_Complete);
            gds.emplace_back(CD, Ctor_Base);
        } else if (auto *DD = dyn_cast<CXXDestructorDecl>(FD)) {
            if (DD->isVirtual()) gds.emplace_back(DD, Dtor_Deleting);
            gds.emplace_back(DD, Dtor_Complete);
            gds.emplace_back(DD, Dtor_Base);
        } else {
            gds.emplace_back(FD);
        }
        bool lambda = insideNumberlessLambda(FD->getDeclContext());
        for (size_t i = 0; i < gds.size(); i++) {
            std::string name = mangled(*Mangle, gds[i]);
            Row rn = r;
            if (rn.skip.empty() && excluded(FD, name, r.file))
                rn.skip = PGTEXT_SKIP_EXCLUDED;
            if (Opts.verbose && i + 1 == gds.size()) { /* one note per source function */
                llvm::StringRef shown(name);
                shown.consume_front("\1");
                /* Clang drops a note that follows no warning or error: say there was one. */
                Diags.setLastDiagnosticIgnored(false);
                if (rn.skip.empty()) {
                    Diags.Report(loc, NoteInstrumenting) << shown << rn.attr << rn.filegroup;
                    if (shown == "main") Diags.Report(loc, NoteMain) << shown;
                } else
                    Diags.Report(loc, NoteSkipped) << shown << rn.skip;
            }
            if (lambda) PendingDisplay.emplace_back(name, gds[i]);
            Tab.rows[name] = rn;
        }
    }
};

/*
 * Embeds the table in the module: a `static const char[]` marked used, in section
 * "llvm.metadata" (never emitted to an object file), handed straight to CodeGen.
 */
static void emitTable(CompilerInstance &CI, ASTContext &Ctx, const Table &T)
{
    std::string text = encodeTable(T);
    QualType elem = Ctx.CharTy.withConst();
    QualType type = Ctx.getConstantArrayType(elem, llvm::APInt(32, text.size() + 1), nullptr,
                                             PG_ARRAY_SIZE_NORMAL, 0);
    SourceLocation loc;
    StringLiteral *lit =
        StringLiteral::Create(Ctx, text, PG_STRING_ORDINARY, false, type, loc);
    TranslationUnitDecl *TU = Ctx.getTranslationUnitDecl();
    VarDecl *VD = VarDecl::Create(Ctx, TU, loc, loc, &Ctx.Idents.get(TableGlobal), type, nullptr,
                                  SC_Static);
    /* {"..."}: an init list marked as a string-literal init, as Sema builds for
     * `const char x[] = {"..."}`, so constant evaluation yields the array, not its address. */
    auto *init = new (Ctx) InitListExpr(Ctx, loc, {lit}, loc);
    init->setType(type);
    VD->setInit(init);
    VD->addAttr(UsedAttr::CreateImplicit(Ctx));
    VD->addAttr(SectionAttr::CreateImplicit(Ctx, "llvm.metadata"));
    TU->addDecl(VD);
    CI.getASTConsumer().HandleTopLevelDecl(DeclGroupRef(VD));
}

class TableWriter : public ASTConsumer {
public:
    TableWriter(CompilerInstance &CI, Options O) : CI(CI), Opts(std::move(O)) {}

    void HandleTranslationUnit(ASTContext &Ctx) override
    {
        if (Ctx.getDiagnostics().hasErrorOccurred()) return;
        Table T;
        T.cxx = Ctx.getLangOpts().CPlusPlus;
        T.weak = Opts.weakHooks;
        T.verbose = Opts.verbose;
        T.allFunctions = Opts.allFunctions;
        Walker W(Ctx, Opts, T);
        W.TraverseDecl(Ctx.getTranslationUnitDecl());
        W.finish();
        if (!T.rows.empty() && !Ctx.getDiagnostics().hasErrorOccurred())
            emitTable(CI, Ctx, T);
    }

    /* Re-entry from emitTable's HandleTopLevelDecl: nothing to do here. */
    bool HandleTopLevelDecl(DeclGroupRef) override { return true; }

private:
    CompilerInstance &CI;
    Options Opts;
};

} // namespace

std::unique_ptr<ASTConsumer> makeTableWriter(CompilerInstance &CI, Options O)
{
    return std::make_unique<TableWriter>(CI, std::move(O));
}

/* ---- The pass ------------------------------------------------------------------------------ */

/* Function multiversioning (target_clones, target("...") versions): CodeGen names each
 * version <name>.<features>[.<n>] ("sum.avx2.0", "_Z3sumPKii.default.1"), the front end's table
 * knows <name>. Every version is instrumented as the function itself (same group and name: the
 * trace does not depend on the CPU); the resolver (<name>.resolver, the ifunc's) never is, as
 * GCC's plugin does. Returns <name>, or "" for anything else. */
static std::string multiversionedAs(const llvm::Function &F)
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
static const char *whySkip(const llvm::Function &F, const Want &w)
{
    StringRef n = F.getName();
    n.consume_front("\1");
    if (F.isDeclaration())
        return "no body in this module";
    if (F.hasFnAttribute("perfgroup-instrumented"))
        return "already instrumented: running the pass twice adds nothing";
    if (F.hasFnAttribute(llvm::Attribute::Naked))
        return "naked: no prologue, the body is asm that expects the caller's registers";
    if (pgStartsWith(n, "__perfgroup") || pgStartsWith(n, "perfgroup_"))
        return "the runtime's own function: instrumenting it recursed to a crash";
    if (!w.skip.empty())
        return "no_instrument_function or exclude=: the user asked for no hooks";
    /* available_externally bodies ARE instrumented: they exist only to be inlined, and an
     * uninstrumented copy would make every inlined call vanish from the trace. */
    return nullptr;
}

WorkList selectFunctions(llvm::Module &M, const Table &table,
                         const std::map<llvm::Function *, Want> &annotated)
{
    WorkList work;
    for (llvm::Function &F : M) {
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
                if (llvm::DISubprogram *sp = F.getSubprogram()) {
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
    return work;
}

} // namespace perfgroup_clang
