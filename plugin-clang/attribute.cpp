/* SPDX-License-Identifier: MIT */
/*
 * plugin-clang/attribute.cpp — the attribute that puts a function in a group:
 * __attribute__((perf_group("x"))) becomes AnnotateAttr("perfgroup:x"), which CodeGen writes
 * to llvm.global.annotations and the front end's table reads back (select.cpp). Declaration
 * and definition with different groups: a warning, the definition wins (the GCC plugin's rule
 * too). The [[gnu::perf_group]] and [[perfgroup::group]] spellings are registered only to
 * explain, as an error, that clang 14 throws their argument away before a plugin can see it.
 */
#include "plugin.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/Attr.h"
#include "clang/Sema/ParsedAttr.h"
#include "clang/Sema/Sema.h"

#include "llvm-compat.h" /* after clang/LLVM: every version #if */

using namespace clang;

namespace perfgroup_clang {

namespace {

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
        static constexpr auto F = pgDiagFormat(PGTEXT_ATTR_NOT_A_FUNCTION);
        S.Diag(A.getLoc(), S.getDiagnostics().getCustomDiagID(DiagnosticsEngine::Warning, F.text))
            << spelled(A);
        return false;
    }

    AttrHandling handleDeclAttribute(Sema &S, Decl *D, const ParsedAttr &A) const override
    {
        DiagnosticsEngine &De = S.getDiagnostics();
        std::string name = spelled(A);
        auto error = [&](const std::string &text) {
            S.Diag(A.getLoc(), De.getCustomDiagID(DiagnosticsEngine::Error, "%0")) << text;
            return AttributeNotApplied;
        };
        if (A.getNumArgs() == 0 && A.getSyntax() != ParsedAttr::AS_GNU)
            return error(pgFormat("clang 14 drops the argument of '[[%s(...)]]' before a plugin "
                                  "sees it; write __attribute__((perf_group(\"name\"))) or "
                                  "[[clang::annotate(\"perfgroup:name\")]] (PERF_GROUP(\"name\") "
                                  "from <perfgroup.h> does)", name.c_str()));
        if (A.getNumArgs() != 1) /* GCC's own words for it */
            return error(pgFormat("wrong number of arguments specified for '%s' attribute",
                                  name.c_str()));
        const StringLiteral *lit = nullptr;
        if (A.isArgExpr(0) && A.getArgAsExpr(0))
            lit = dyn_cast<StringLiteral>(A.getArgAsExpr(0)->IgnoreParenCasts());
        if (!lit || !(pgIsOrdinary(lit) || lit->isUTF8()))
            return error(pgFormat(PGTEXT_ATTR_NOT_A_STRING, name.c_str()));
        llvm::StringRef group = lit->getString();
        if (group.empty())
            return error(pgFormat(PGTEXT_ATTR_EMPTY, name.c_str()));
        if (group.contains('\0'))
            return error(pgFormat(PGTEXT_ATTR_NUL, name.c_str()));
        D->addAttr(AnnotateAttr::Create(S.Context, std::string(AnnotationPrefix) + group.str(),
                                        nullptr, 0, A));
        return AttributeApplied;
    }
};

} // namespace

static ParsedAttrInfoRegistry::Add<PerfGroupAttrInfo> RegisterAttr("perf_group",
                                                                   "perfgroup function groups");

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

bool anyAnnotation(const FunctionDecl *FD)
{
    for (const FunctionDecl *r : FD->redecls())
        if (r->hasAttr<AnnotateAttr>()) return true;
    return false;
}

/* Its own perf_group, else the nearest other declaration's. Warns once if another declaration
 * says otherwise: the definition wins, whichever comes first in the source. */
std::string attributeGroup(DiagnosticsEngine &Diags, const FunctionDecl *FD)
{
    for (const Attr *a : FD->attrs())
        if (const AnnotateAttr *an = ours(a))
            if (!an->isInherited() && groupOf(an).empty()) /* annotate("perfgroup:") */
                Diags.Report(an->getLocation(),
                             Diags.getCustomDiagID(DiagnosticsEngine::Error, "%0"))
                    << pgFormat(PGTEXT_ATTR_EMPTY, "perf_group");
    const AnnotateAttr *own = ownAnnotation(FD);
    const AnnotateAttr *other = nullptr;
    for (const FunctionDecl *r : FD->redecls()) {
        if (r == FD) continue;
        const AnnotateAttr *a = ownAnnotation(r);
        if (a && (!other || (own && groupOf(a) != groupOf(own)))) other = a;
    }
    static constexpr auto Conflict = pgDiagFormat(PGTEXT_ATTR_CONFLICT);
    if (own && other && groupOf(own) != groupOf(other))
        Diags.Report(FD->getLocation(),
                     Diags.getCustomDiagID(DiagnosticsEngine::Warning, Conflict.text))
            << FD << groupOf(own) << groupOf(other);
    if (own) return groupOf(own).str();
    if (other) return groupOf(other).str();
    /* Template instantiations carry instantiated copies; anything else, inherited. */
    for (const Attr *a : FD->attrs())
        if (const AnnotateAttr *an = ours(a)) return groupOf(an).str();
    return "";
}

} // namespace perfgroup_clang
