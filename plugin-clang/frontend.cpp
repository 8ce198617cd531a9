/* SPDX-License-Identifier: MIT */
/*
 * plugin-clang/frontend.cpp — the Clang side of perfgroup-clang.so: the perf_group attribute,
 * the -fplugin-arg-perfgroup-* options, __PERFGROUP__, and the AST action that decides which
 * functions get which groups and hands that decision to the LLVM pass (instrument.cpp, whose
 * file header is the design note) as a table embedded in the module (table.h).
 *
 * What the AST action does, once per translation unit, before CodeGen sees it:
 *   - defines __PERFGROUP__ (so <perfgroup.h>'s PERF_GROUP() expands to annotate("perfgroup:x"))
 *   - pushes this .so's own path onto CodeGenOpts.PassPlugins: clang 14 has no plugin hook into
 *     CodeGen, but it loads pass plugins listed there, so one -fplugin= flag also loads the pass
 *   - walks every function definition (template instantiations, lambdas, ctors/dtors included)
 *     and writes one table row per function to instrument: attribute group, file group, file,
 *     line, or the reason to skip it; the table becomes a string in section "llvm.metadata"
 *     that the pass reads and deletes.
 */
#include "table.h"

#include "clang/AST/ASTConsumer.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/Attr.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/GlobalDecl.h"
#include "clang/AST/Mangle.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendPluginRegistry.h"
#include "clang/Lex/Preprocessor.h"
#include "clang/Sema/ParsedAttr.h"
#include "clang/Sema/Sema.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <dlfcn.h>
#include <fnmatch.h>

#include <memory>
#include <string>
#include <vector>

using namespace clang;
using namespace perfgroup_clang;

namespace {

/* ---- Options ------------------------------------------------------------------------------ */

struct MapEntry {
    std::string glob, group;
};

struct Options {
    std::string defaultGroup;        /* default=GROUP */
    std::vector<MapEntry> map;       /* map=FILE, in file order: first match wins */
    std::vector<std::string> exclude; /* exclude=GLOB, matched against function names */
    bool systemHeaders = false;      /* system-headers */
    bool fileGroups() const { return !defaultGroup.empty() || !map.empty(); }
};

#define FLAG "-fplugin-arg-perfgroup-"

/* Option errors: one line, naming the exact flag. */
static void report(DiagnosticsEngine &D, const std::string &text)
{
    D.Report(D.getCustomDiagID(DiagnosticsEngine::Error, "%0")) << text;
}

/* Reads map=FILE: lines "GLOB GROUP", '#' starts a comment, blank lines are fine. */
static bool readMap(DiagnosticsEngine &D, const std::string &path, Options &o)
{
    auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
    if (!buf) {
        report(D, FLAG "map=" + path + ": cannot read '" + path + "': " +
                      buf.getError().message());
        return false;
    }
    llvm::StringRef text = (*buf)->getBuffer();
    unsigned lineno = 0;
    bool ok = true;
    while (!text.empty()) {
        auto [line, rest] = text.split('\n');
        text = rest;
        lineno++;
        line = line.split('#').first.trim();
        if (line.empty()) continue;
        llvm::SmallVector<llvm::StringRef, 4> f;
        line.split(f, ' ', -1, /*KeepEmpty=*/false);
        if (f.size() == 1 && line.contains('\t')) /* tab-separated */
            line.split(f, '\t', -1, false);
        if (f.size() != 2) {
            report(D, path + ":" + std::to_string(lineno) + ": expected 'GLOB GROUP' (" FLAG
                          "map=" + path + ")");
            ok = false;
            continue;
        }
        o.map.push_back({f[0].trim().str(), f[1].trim().str()});
    }
    return ok;
}

/* ---- The attribute ------------------------------------------------------------------------ */

/*
 * __attribute__((perf_group("x"))) becomes AnnotateAttr("perfgroup:x"), which CodeGen writes
 * to llvm.global.annotations and the front end's table reads back. The [[gnu::perf_group]]
 * and [[perfgroup::group]] spellings are registered only to explain, as an error, that clang
 * 14 throws their argument away before a plugin can see it.
 */
struct PerfGroupAttrInfo : public ParsedAttrInfo {
    PerfGroupAttrInfo()
    {
        OptArgs = 1;
        static constexpr Spelling S[] = {{ParsedAttr::AS_GNU, "perf_group"},
                                         {ParsedAttr::AS_CXX11, "gnu::perf_group"},
                                         {ParsedAttr::AS_CXX11, "perfgroup::group"},
                                         {ParsedAttr::AS_C2x, "gnu::perf_group"},
                                         {ParsedAttr::AS_C2x, "perfgroup::group"}};
        Spellings = S;
    }

    bool diagAppertainsToDecl(Sema &S, const ParsedAttr &A, const Decl *D) const override
    {
        if (isa<FunctionDecl>(D)) return true;
        unsigned id = S.getDiagnostics().getCustomDiagID(
            DiagnosticsEngine::Warning, "'perf_group' attribute only applies to functions; ignored");
        S.Diag(A.getLoc(), id);
        return false;
    }

    AttrHandling handleDeclAttribute(Sema &S, Decl *D, const ParsedAttr &A) const override
    {
        DiagnosticsEngine &De = S.getDiagnostics();
        if (A.getNumArgs() == 0) {
            if (A.getSyntax() != ParsedAttr::AS_GNU) {
                S.Diag(A.getLoc(), De.getCustomDiagID(
                    DiagnosticsEngine::Error,
                    "clang 14 drops the argument of '[[%0]]' before a plugin sees it; write "
                    "__attribute__((perf_group(\"name\"))) or [[clang::annotate(\"perfgroup:name\")]] "
                    "(PERF_GROUP(\"name\") from <perfgroup.h> does this)"))
                    << A.getNormalizedFullName();
            } else {
                S.Diag(A.getLoc(), De.getCustomDiagID(
                    DiagnosticsEngine::Error,
                    "'perf_group' attribute needs one string argument, the group name"));
            }
            return AttributeNotApplied;
        }
        const StringLiteral *lit = nullptr;
        if (A.isArgExpr(0))
            lit = dyn_cast_or_null<StringLiteral>(A.getArgAsExpr(0)->IgnoreParenCasts());
        if (!lit || !lit->isAscii()) {
            S.Diag(A.getLoc(), De.getCustomDiagID(
                DiagnosticsEngine::Error,
                "'perf_group' attribute argument must be a string literal"));
            return AttributeNotApplied;
        }
        if (lit->getString().empty()) {
            S.Diag(A.getLoc(), De.getCustomDiagID(
                DiagnosticsEngine::Error, "'perf_group' attribute argument is an empty group name"));
            return AttributeNotApplied;
        }
        std::string ann = std::string(AnnotationPrefix) + lit->getString().str();
        D->addAttr(AnnotateAttr::Create(S.Context, ann, nullptr, 0, A));
        return AttributeApplied;
    }
};

/* ---- Walking the translation unit --------------------------------------------------------- */

/* The group of one AnnotateAttr, or nullptr if it is not ours. */
static const AnnotateAttr *ours(const Attr *a)
{
    auto *an = dyn_cast<AnnotateAttr>(a);
    if (an && an->getAnnotation().startswith(AnnotationPrefix)) return an;
    return nullptr;
}

static llvm::StringRef groupOf(const AnnotateAttr *a)
{
    return a->getAnnotation().drop_front(llvm::StringRef(AnnotationPrefix).size());
}

/* The last perf_group written on this very declaration (not inherited), or nullptr. */
static const AnnotateAttr *ownAnnotation(const FunctionDecl *FD)
{
    const AnnotateAttr *own = nullptr;
    for (const Attr *a : FD->attrs())
        if (const AnnotateAttr *an = ours(a))
            if (!an->isInherited()) own = an;
    return own;
}

class Walker : public RecursiveASTVisitor<Walker> {
public:
    Walker(ASTContext &C, const Options &O, Table &T)
        : Ctx(C), SM(C.getSourceManager()), Diags(C.getDiagnostics()), Opts(O), Tab(T),
          Mangle(C.createMangleContext())
    {
        WarnConflict = Diags.getCustomDiagID(
            DiagnosticsEngine::Warning,
            "'perf_group' group \"%0\" of %1 differs from group \"%2\" of another declaration; "
            "the group of the definition is used");
        NotePrevious = Diags.getCustomDiagID(DiagnosticsEngine::Note, "other group given here");
        ErrEmpty = Diags.getCustomDiagID(DiagnosticsEngine::Error,
                                         "'perf_group' attribute argument is an empty group name");
        WarnTwice = Diags.getCustomDiagID(
            DiagnosticsEngine::Warning,
            "'perf_group' given twice on one declaration with groups \"%0\" and \"%1\"; the last "
            "one is used");
    }

    bool shouldVisitTemplateInstantiations() const { return true; }
    bool shouldVisitImplicitCode() const { return true; }

    bool VisitFunctionDecl(FunctionDecl *FD)
    {
        if (FD->hasAttrs()) checkAnnotations(FD);
        if (!FD->isThisDeclarationADefinition() || FD->isDependentContext() || FD->isMultiVersion())
            return true;
        if (!Opts.fileGroups() && !FD->hasAttrs()) return true; /* the common, cheap case */
        decide(FD);
        return true;
    }

private:
    ASTContext &Ctx;
    SourceManager &SM;
    DiagnosticsEngine &Diags;
    const Options &Opts;
    Table &Tab;
    std::unique_ptr<MangleContext> Mangle;
    unsigned WarnConflict, NotePrevious, ErrEmpty, WarnTwice;

    /* Misuse that only shows once declarations are merged: an empty annotate("perfgroup:"),
     * two groups on one declaration, a declaration and the definition disagreeing. */
    void checkAnnotations(const FunctionDecl *FD)
    {
        const AnnotateAttr *own = nullptr;
        for (const Attr *a : FD->attrs()) {
            const AnnotateAttr *an = ours(a);
            if (!an || an->isInherited()) continue;
            if (groupOf(an).empty()) Diags.Report(an->getLocation(), ErrEmpty);
            if (own && groupOf(own) != groupOf(an))
                Diags.Report(an->getLocation(), WarnTwice) << groupOf(own) << groupOf(an);
            own = an;
        }
        if (!own) return;
        for (const FunctionDecl *p = FD->getPreviousDecl(); p; p = p->getPreviousDecl()) {
            const AnnotateAttr *prev = ownAnnotation(p);
            if (!prev) continue;
            if (groupOf(prev) != groupOf(own)) {
                Diags.Report(own->getLocation(), WarnConflict)
                    << groupOf(own) << FD << groupOf(prev);
                Diags.Report(prev->getLocation(), NotePrevious);
            }
            break; /* earlier pairs were checked when that declaration was visited */
        }
    }

    /* The definition's own group, else the nearest earlier declaration's, else the nearest
     * later one's (a declaration after the definition). */
    std::string attributeGroup(const FunctionDecl *FD)
    {
        if (const AnnotateAttr *a = ownAnnotation(FD)) return groupOf(a).str();
        for (const FunctionDecl *p = FD->getPreviousDecl(); p; p = p->getPreviousDecl())
            if (const AnnotateAttr *a = ownAnnotation(p)) return groupOf(a).str();
        for (const FunctionDecl *r : FD->redecls())
            if (const AnnotateAttr *a = ownAnnotation(r)) return groupOf(a).str();
        /* Instantiations carry instantiated (non-inherited) copies; anything else inherited. */
        for (const Attr *a : FD->attrs())
            if (const AnnotateAttr *an = ours(a)) return groupOf(an).str();
        return "";
    }

    std::string fileGroup(const std::string &file)
    {
        for (const MapEntry &m : Opts.map)
            if (fnmatch(m.glob.c_str(), file.c_str(), 0) == 0) return m.group;
        return Opts.defaultGroup;
    }

    std::string mangled(GlobalDecl GD)
    {
        const auto *ND = cast<NamedDecl>(GD.getDecl());
        if (!Mangle->shouldMangleDeclName(ND)) return ND->getName().str();
        std::string s;
        llvm::raw_string_ostream os(s);
        Mangle->mangleName(GD, os);
        return os.str();
    }

    void decide(FunctionDecl *FD)
    {
        Row r;
        r.attr = attributeGroup(FD);
        SourceLocation loc = SM.getExpansionLoc(FD->getLocation());
        PresumedLoc p = SM.getPresumedLoc(loc);
        if (p.isValid()) {
            r.file = p.getFilename();
            r.line = p.getLine();
        }
        bool system = SM.isInSystemHeader(loc);
        /* Compiler-generated functions (implicit special members, lambda invokers) have no
         * source of their own; system headers exploded one STL test to 33,208 hook calls. */
        if (!FD->isImplicit() && (!system || Opts.systemHeaders))
            r.filegroup = fileGroup(r.file);
        if (r.attr.empty() && r.filegroup.empty()) return;
        if (FD->hasAttr<NoInstrumentFunctionAttr>())
            r.skip = "no_instrument_function"; /* the user said so, whatever the group */

        std::vector<std::string> names;
        if (auto *CD = dyn_cast<CXXConstructorDecl>(FD)) {
            names.push_back(mangled(GlobalDecl(CD, Ctor_Complete)));
            names.push_back(mangled(GlobalDecl(CD, Ctor_Base)));
        } else if (auto *DD = dyn_cast<CXXDestructorDecl>(FD)) {
            if (DD->isVirtual()) names.push_back(mangled(GlobalDecl(DD, Dtor_Deleting)));
            names.push_back(mangled(GlobalDecl(DD, Dtor_Complete)));
            names.push_back(mangled(GlobalDecl(DD, Dtor_Base)));
        } else {
            names.push_back(mangled(GlobalDecl(FD)));
        }
        for (const std::string &n : names) {
            bool excluded = false;
            for (const std::string &g : Opts.exclude)
                if (fnmatch(g.c_str(), n.c_str(), 0) == 0 ||
                    fnmatch(g.c_str(), FD->getQualifiedNameAsString().c_str(), 0) == 0)
                    excluded = true;
            Row rn = r;
            if (excluded && rn.skip.empty()) rn.skip = "exclude";
            Tab.rows[n] = rn;
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
                                             ArrayType::Normal, 0);
    SourceLocation loc;
    StringLiteral *lit =
        StringLiteral::Create(Ctx, text, StringLiteral::Ascii, false, type, loc);
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

class Consumer : public ASTConsumer {
public:
    Consumer(CompilerInstance &CI, Options O) : CI(CI), Opts(std::move(O)) {}

    void HandleTranslationUnit(ASTContext &Ctx) override
    {
        if (Ctx.getDiagnostics().hasErrorOccurred()) return;
        Table T;
        T.cxx = Ctx.getLangOpts().CPlusPlus;
        Walker W(Ctx, Opts, T);
        W.TraverseDecl(Ctx.getTranslationUnitDecl());
        if (!T.rows.empty() && !Ctx.getDiagnostics().hasErrorOccurred())
            emitTable(CI, Ctx, T);
    }

    /* Re-entry from emitTable's HandleTopLevelDecl: nothing to do here. */
    bool HandleTopLevelDecl(DeclGroupRef) override { return true; }

private:
    CompilerInstance &CI;
    Options Opts;
};

/* ---- The plugin action -------------------------------------------------------------------- */

static void anchorForDladdr() {}

class Action : public PluginASTAction {
protected:
    std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &CI, llvm::StringRef) override
    {
        Preprocessor &PP = CI.getPreprocessor();
        PP.setPredefines(PP.getPredefines() + "#define __PERFGROUP__ 1\n");

        /* One -fplugin= must be enough: have CodeGen load this same .so as its pass plugin. */
        Dl_info info;
        if (dladdr(reinterpret_cast<void *>(&anchorForDladdr), &info) && info.dli_fname) {
            std::vector<std::string> &pp = CI.getCodeGenOpts().PassPlugins;
            if (std::find(pp.begin(), pp.end(), info.dli_fname) == pp.end())
                pp.push_back(info.dli_fname);
        }
        return std::make_unique<Consumer>(CI, Opts);
    }

    bool ParseArgs(const CompilerInstance &CI, const std::vector<std::string> &args) override
    {
        DiagnosticsEngine &D = CI.getDiagnostics();
        bool ok = true;
        for (const std::string &a : args) {
            llvm::StringRef s(a);
            if (s.consume_front("default=")) {
                if (s.empty()) {
                    report(D, FLAG "default= needs a group name");
                    ok = false;
                }
                Opts.defaultGroup = s.str();
            } else if (s.consume_front("map=")) {
                if (s.empty()) {
                    report(D, FLAG "map= needs a file name");
                    ok = false;
                } else if (!readMap(D, s.str(), Opts)) {
                    ok = false;
                }
            } else if (s.consume_front("exclude=")) {
                if (s.empty()) {
                    report(D, FLAG "exclude= needs a pattern");
                    ok = false;
                }
                Opts.exclude.push_back(s.str());
            } else if (s == "system-headers") {
                Opts.systemHeaders = true;
            } else {
                report(D, "unknown option '" FLAG + a + "'");
                ok = false;
            }
        }
        return ok;
    }

    ActionType getActionType() override { return AddBeforeMainAction; }

private:
    Options Opts;
};

} // namespace

static ParsedAttrInfoRegistry::Add<PerfGroupAttrInfo> RegisterAttr("perf_group",
                                                                   "perfgroup function groups");
static FrontendPluginRegistry::Add<Action> RegisterAction("perfgroup",
                                                          "perfgroup instrumentation");
