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
#include "clang/AST/StmtCXX.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendPluginRegistry.h"
#include "clang/Lex/Preprocessor.h"
#include "clang/Sema/ParsedAttr.h"
#include "clang/Sema/Sema.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include "llvm-compat.h" /* after clang/LLVM: every version #if */
#include "../common/pathmap.h" /* the map's path rule, shared with the GCC plugin */

#include <dlfcn.h>
#include <fnmatch.h>

#include <algorithm>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

using namespace clang;
using namespace perfgroup_clang;

namespace {

/* ---- Options (same names, semantics and error texts as the GCC plugin) ------------------- */

/* A glob as written and as matched (pgmap_anchor); for map=, its group, map and line. */
struct MapEntry {
    std::string glob, pattern;
    int kind;
    std::string group, map;
    unsigned line;
};

struct Options {
    std::string cwd;                  /* the compile's working directory (physical) */
    std::string defaultGroup;         /* default=GROUP */
    std::vector<MapEntry> map;        /* map=FILE, in file order: first match wins */
    std::string lastMap;              /* the last map=FILE: the verbose note names it */
    std::vector<MapEntry> exclude;    /* exclude=GLOB[,GLOB...] */
    bool systemHeaders = false;       /* system-headers */
    bool verbose = false;             /* verbose: a note per function with a group */
    bool weakHooks = false;           /* weak-hooks: objects link without the runtime */
    bool allFunctions = false;        /* all-functions: no call-graph elision (profiling mode) */
    bool fileGroups() const { return !defaultGroup.empty() || !map.empty(); }
};

#define FLAG "-fplugin-arg-perfgroup-"

/* Option errors: one line, naming the exact flag. */
static void report(DiagnosticsEngine &D, const std::string &text)
{
    D.Report(D.getCustomDiagID(DiagnosticsEngine::Error, "%0")) << text;
}

/* Anchors E.glob at DIR (pgmap_anchor); a glob too long to anchor is an error naming FLAGTEXT. */
static bool anchorGlob(DiagnosticsEngine &D, const std::string &dir, MapEntry &e,
                       const std::string &flagText)
{
    char buf[PGMAP_PATH_MAX];
    e.kind = pgmap_anchor(dir.c_str(), e.glob.c_str(), buf);
    if (e.kind < 0)
        report(D, "'" + flagText + "': the glob '" + e.glob + "' is longer than a path can be");
    e.pattern = e.kind < 0 ? "" : buf;
    return e.kind >= 0;
}

/* Reads map=FILE: lines "GLOB GROUP", '#' starts a comment, blank lines are fine. Stops at
 * the first problem. */
static bool readMap(DiagnosticsEngine &D, const std::string &path, Options &o)
{
    std::string in = "(in '" FLAG "map=" + path + "')";
    auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
    if (!buf) {
        report(D, "'" FLAG "map=" + path + "': cannot open '" + path + "': " +
                      buf.getError().message());
        return false;
    }
    char dir[PGMAP_PATH_MAX];
    if (pgmap_map_dir(o.cwd.c_str(), path.c_str(), dir) < 0) {
        report(D, "'" FLAG "map=" + path +
                      "': the path of the map file is longer than a path can be");
        return false;
    }
    o.lastMap = path;
    llvm::StringRef text = (*buf)->getBuffer();
    unsigned lineno = 0;
    while (!text.empty()) {
        auto [line, rest] = text.split('\n');
        text = rest;
        lineno++;
        std::string where = path + ":" + std::to_string(lineno) + ": ";
        if (line.size() >= 4095) { /* the GCC plugin's line buffer */
            report(D, where + "line too long " + in);
            return false;
        }
        std::string copy = line.str();
        char *glob, *group;
        int fields = pgmap_split_line(&copy[0], &glob, &group);
        if (fields == 0) continue;
        if (fields < 0) {
            report(D, where + "expected 'GLOB GROUP' " + in);
            return false;
        }
        MapEntry e{glob, "", 0, group, path, lineno};
        if (!anchorGlob(D, dir, e, FLAG "map=" + path)) return false;
        o.map.push_back(e);
    }
    return true;
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
        OptArgs = 15; /* argument count is checked below, with the GCC plugin's message */
        static constexpr Spelling S[] = {{ParsedAttr::AS_GNU, "perf_group"},
                                         {ParsedAttr::AS_CXX11, "gnu::perf_group"},
                                         {ParsedAttr::AS_CXX11, "perfgroup::group"},
                                         {ParsedAttr::PG_AS_C23, "gnu::perf_group"},
                                         {ParsedAttr::PG_AS_C23, "perfgroup::group"}};
        Spellings = S;
    }

    static std::string spelled(const ParsedAttr &A)
    {
        return A.getAttrName()->getName() == "group" ? "perfgroup::group" : "perf_group";
    }

    bool diagAppertainsToDecl(Sema &S, const ParsedAttr &A, const Decl *D) const override
    {
        if (isa<FunctionDecl>(D)) return true;
        S.Diag(A.getLoc(), S.getDiagnostics().getCustomDiagID(
                               DiagnosticsEngine::Warning,
                               "'%0' attribute only applies to functions; ignored"))
            << spelled(A);
        return false;
    }

    AttrHandling handleDeclAttribute(Sema &S, Decl *D, const ParsedAttr &A) const override
    {
        DiagnosticsEngine &De = S.getDiagnostics();
        auto error = [&](std::string text) { /* "%0" in text: the attribute as spelled */
            size_t at = text.find("%0");
            if (at != std::string::npos) text.replace(at, 2, spelled(A));
            S.Diag(A.getLoc(), De.getCustomDiagID(DiagnosticsEngine::Error, "%0")) << text;
            return AttributeNotApplied;
        };
        if (A.getNumArgs() == 0 && A.getSyntax() != ParsedAttr::AS_GNU)
            return error("clang 14 drops the argument of '[[%0(...)]]' before a plugin sees it; "
                         "write __attribute__((perf_group(\"name\"))) or "
                         "[[clang::annotate(\"perfgroup:name\")]] (PERF_GROUP(\"name\") from "
                         "<perfgroup.h> does)");
        if (A.getNumArgs() != 1)
            return error("wrong number of arguments specified for '%0' attribute");
        const StringLiteral *lit = nullptr;
        if (A.isArgExpr(0) && A.getArgAsExpr(0))
            lit = dyn_cast<StringLiteral>(A.getArgAsExpr(0)->IgnoreParenCasts());
        if (!lit || !(pgIsOrdinary(lit) || lit->isUTF8()))
            return error("'%0' attribute argument must be a string literal naming a group");
        llvm::StringRef group = lit->getString();
        if (group.empty())
            return error("'%0' attribute: the group name must not be empty");
        if (group.contains('\0'))
            return error("'%0' attribute: the group name must not contain a NUL character");
        D->addAttr(AnnotateAttr::Create(S.Context, std::string(AnnotationPrefix) + group.str(),
                                        nullptr, 0, A));
        return AttributeApplied;
    }
};

/* ---- Walking the translation unit --------------------------------------------------------- */

/* Our AnnotateAttr, or nullptr. */
static const AnnotateAttr *ours(const Attr *a)
{
    auto *an = dyn_cast<AnnotateAttr>(a);
    if (an && pgStartsWith(an->getAnnotation(), AnnotationPrefix)) return an;
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

/* Some declaration of FD carries an annotate attribute (ours or not). */
static bool anyAnnotation(const FunctionDecl *FD)
{
    for (const FunctionDecl *r : FD->redecls())
        if (r->hasAttr<AnnotateAttr>()) return true;
    return false;
}

class Walker : public RecursiveASTVisitor<Walker> {
public:
    Walker(ASTContext &C, const Options &O, Table &T)
        : SM(C.getSourceManager()), Diags(C.getDiagnostics()), Opts(O), Tab(T),
          Mangle(C.createMangleContext()),
          Display(ItaniumMangleContext::create(C, C.getDiagnostics(), lambdaNumber))
    {
        WarnConflict = Diags.getCustomDiagID(
            DiagnosticsEngine::Warning,
            "'perf_group' attribute: the definition of %0 is in group '%1' but an earlier "
            "declaration says '%2'; the definition wins");
        ErrEmpty = Diags.getCustomDiagID(
            DiagnosticsEngine::Error, "'perf_group' attribute: the group name must not be empty");
        NoteInstrumenting = Diags.getCustomDiagID(
            DiagnosticsEngine::Note, "perfgroup: instrumenting '%0' (group '%1', file group '%2')");
        NoteSkipped =
            Diags.getCustomDiagID(DiagnosticsEngine::Note, "perfgroup: '%0' not instrumented: %1");
        NoteStartsThread = Diags.getCustomDiagID(
            DiagnosticsEngine::Note, "perfgroup: '%0' starts a thread: as its outermost frame it "
                                     "opens no implicit event (its calls do)");
        NoteMain = Diags.getCustomDiagID(
            DiagnosticsEngine::Note, "perfgroup: '%0' is the outermost frame of the main thread: "
                                     "it opens no implicit event (its calls do)");
        NoteFile = Diags.getCustomDiagID(DiagnosticsEngine::Note, "%0"); /* pgmap_note() */
    }

    /* verbose: a function passed straight to pthread_create/thrd_create as the start routine
     * (the pass flags its site PERFGROUP_SITE_F_ROOT; the GCC plugin's note, once each). */
    bool VisitCallExpr(CallExpr *CE)
    {
        const FunctionDecl *callee = Opts.verbose ? CE->getDirectCallee() : nullptr;
        if (!callee || !callee->getDeclName().isIdentifier()) return true;
        unsigned arg = callee->getName() == "pthread_create" ? 2
                       : callee->getName() == "thrd_create" ? 1 : 0;
        if (!arg || CE->getNumArgs() <= arg) return true;
        const Expr *e = CE->getArg(arg)->IgnoreParenImpCasts();
        if (auto *uo = dyn_cast<UnaryOperator>(e))
            if (uo->getOpcode() == UO_AddrOf) e = uo->getSubExpr()->IgnoreParenImpCasts();
        auto *ref = dyn_cast<DeclRefExpr>(e);
        auto *fn = ref ? dyn_cast<FunctionDecl>(ref->getDecl()) : nullptr;
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
    unsigned WarnConflict, ErrEmpty, NoteInstrumenting, NoteSkipped, NoteStartsThread, NoteMain,
        NoteFile;
    std::set<const FunctionDecl *> StartRoutines;

    /* The attribute group of a definition: its own perf_group, else the nearest other
     * declaration's. Warns once if another declaration says otherwise: the definition wins,
     * whichever comes first in the source (the GCC plugin's rule). */
    std::string attributeGroup(const FunctionDecl *FD)
    {
        for (const Attr *a : FD->attrs())
            if (const AnnotateAttr *an = ours(a))
                if (!an->isInherited() && groupOf(an).empty())
                    Diags.Report(an->getLocation(), ErrEmpty); /* annotate("perfgroup:") */
        const AnnotateAttr *own = ownAnnotation(FD);
        const AnnotateAttr *other = nullptr;
        for (const FunctionDecl *r : FD->redecls()) {
            if (r == FD) continue;
            const AnnotateAttr *a = ownAnnotation(r);
            if (a && (!other || (own && groupOf(a) != groupOf(own)))) other = a;
        }
        if (own && other && groupOf(own) != groupOf(other))
            Diags.Report(FD->getLocation(), WarnConflict) << FD << groupOf(own) << groupOf(other);
        if (own) return groupOf(own).str();
        if (other) return groupOf(other).str();
        /* Template instantiations carry instantiated copies; anything else, inherited. */
        for (const Attr *a : FD->attrs())
            if (const AnnotateAttr *an = ours(a)) return groupOf(an).str();
        return "";
    }

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
        if (FD->hasAttr<NakedAttr>()) return "naked function";
        /* The user's explicit opt-out (PERF_GROUP_NONE). */
        if (FD->hasAttr<NoInstrumentFunctionAttr>()) return "no_instrument_function attribute";
        /* The runtime's own functions: instrumenting them would recurse into the hooks. */
        if (FD->getDeclName().isIdentifier() &&
            (pgStartsWith(FD->getName(), "__perfgroup") || pgStartsWith(FD->getName(), "perfgroup_")))
            return "perfgroup runtime function";
        return "";
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
                rn.skip = "matches " FLAG "exclude=";
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

class Consumer : public ASTConsumer {
public:
    Consumer(CompilerInstance &CI, Options O) : CI(CI), Opts(std::move(O)) {}

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
        /* Only compiles that reach CodeGen get a table: a PCH or -fsyntax-only must not
         * carry one (it would be emitted again into every TU using the PCH). */
        switch (CI.getFrontendOpts().ProgramAction) {
        case frontend::EmitAssembly: case frontend::EmitBC: case frontend::EmitLLVM:
        case frontend::EmitLLVMOnly: case frontend::EmitCodeGenOnly: case frontend::EmitObj:
            return std::make_unique<Consumer>(CI, Opts);
        default:
            return std::make_unique<ASTConsumer>();
        }
    }

    bool ParseArgs(const CompilerInstance &CI, const std::vector<std::string> &args) override
    {
        DiagnosticsEngine &D = CI.getDiagnostics();
        bool ok = true;
        /* Relative paths are the working directory's: -working-directory's if given */
        char here[PGMAP_PATH_MAX];
        Opts.cwd = getcwd(here, sizeof here) ? here : "."; /* "." : realpath(3) still finds it */
        const std::string &wd = CI.getFileSystemOpts().WorkingDir;
        if (!wd.empty()) Opts.cwd = wd[0] == '/' ? wd : Opts.cwd + "/" + wd;
        for (const std::string &a : args) {
            size_t eq = a.find('=');
            std::string key = a.substr(0, eq);
            bool hasValue = eq != std::string::npos;
            std::string value = hasValue ? a.substr(eq + 1) : "";
            bool wantsValue = key == "default" || key == "map" || key == "exclude";
            bool isSwitch = key == "system-headers" || key == "verbose" || key == "weak-hooks" ||
                            key == "all-functions";
            if (!wantsValue && !isSwitch) {
                report(D, "unknown option '" FLAG + key + "' (known: default=GROUP, map=FILE, "
                          "exclude=GLOB, system-headers, verbose, weak-hooks, all-functions)");
                ok = false;
            } else if (wantsValue && value.empty()) {
                report(D, "'" FLAG + key + "' needs a value: '" FLAG + key + "=" +
                              (key == "default" ? "GROUP" : key == "map" ? "FILE" : "GLOB") + "'");
                ok = false;
            } else if (isSwitch && hasValue) {
                report(D, "'" FLAG + key + "' takes no value (got '" FLAG + a + "')");
                ok = false;
            } else if (key == "default") {
                if (!Opts.defaultGroup.empty() && Opts.defaultGroup != value) {
                    report(D, "'" FLAG "default=" + value + "' conflicts with an earlier '" FLAG
                              "default=" + Opts.defaultGroup + "'");
                    ok = false;
                }
                Opts.defaultGroup = value;
            } else if (key == "map") {
                ok &= readMap(D, value, Opts);
            } else if (key == "exclude") {
                llvm::SmallVector<llvm::StringRef, 4> globs;
                llvm::StringRef(value).split(globs, ',', -1, false);
                for (llvm::StringRef g : globs) {
                    MapEntry x{g.str(), "", 0, "", "", 0};
                    ok &= anchorGlob(D, Opts.cwd, x, FLAG "exclude=" + value);
                    Opts.exclude.push_back(x);
                }
            } else if (key == "system-headers") {
                Opts.systemHeaders = true;
            } else if (key == "weak-hooks") {
                Opts.weakHooks = true;
            } else if (key == "all-functions") {
                Opts.allFunctions = true;
            } else {
                Opts.verbose = true;
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
static FrontendPluginRegistry::Add<Action> RegisterAction(
    "perfgroup", "perfgroup instrumentation. Options: default=GROUP map=FILE exclude=GLOB "
                 "system-headers verbose weak-hooks all-functions; map=: " PGMAP_RULE_TEXT);
