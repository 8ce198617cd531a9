/* SPDX-License-Identifier: MIT */
/*
 * llvm-compat.h — every LLVM/Clang-version #if of the perfgroup Clang plugin.
 *
 * The plugin's files use the names below wherever clang's or LLVM's C++ API changed between
 * releases, so their bodies read the same on every supported version. Include it after every
 * clang/LLVM header: parts of it exist only if their header came first.
 * Built and tested: LLVM/Clang 13, 14, 15, 16 and 19 (Debian bookworm's llvm-N-dev,
 * libclang-N-dev). 17 and 18 are covered by the same guards (each #if below names the release
 * that made the change, from the LLVM release notes and headers): compiled and linked against
 * their headers (Debian trixie's llvm-N-dev, libclang-N-dev: scripts/headers.sh), not run.
 *
 *   change                                         release   here
 *   StringLiteral::Ascii / isAscii -> Ordinary      15        PG_STRING_ORDINARY, pgIsOrdinary
 *   StringLiteral::StringKind -> StringLiteralKind  18        PG_STRING_ORDINARY
 *   "coroutine.presplit" -> Attribute::PresplitCoroutine  15  pgIsPresplitCoroutine
 *   readnone, argmemonly, inaccessiblemem_* -> memory(...)  16  PG_FOR_EACH_MEMORY_FN_ATTR
 *   llvm::Optional -> std::optional (mangle hooks)  16        pg_optional, pg_nullopt
 *   StringRef::startswith -> starts_with            16 (old one removed in 19)  pgStartsWith
 *   StringRef::endswith -> ends_with                16 (old one removed in 19)  pgEndsWith
 *   ArrayType::Normal -> ArraySizeModifier::Normal  18        PG_ARRAY_SIZE_NORMAL
 *   AttributeCommonInfo::AS_C2x -> AS_C23           18        PG_AS_C23
 *   Type::getInt8PtrTy (opaque pointers)            17 (removed in 18)  pgI8Ptr
 *   PassBuilder::OptimizationLevel -> llvm::        14        PgOptimizationLevel
 */
#ifndef PERFGROUP_LLVM_COMPAT_H
#define PERFGROUP_LLVM_COMPAT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"

#include <optional>

#if LLVM_VERSION_MAJOR < 13
#error "perfgroup-clang.so needs LLVM/Clang 13 or newer"
#endif

#if LLVM_VERSION_MAJOR < 16
#include "llvm/ADT/Optional.h"
template <class T> using pg_optional = llvm::Optional<T>;
#define pg_nullopt llvm::None
#else
template <class T> using pg_optional = std::optional<T>;
#define pg_nullopt std::nullopt
#endif

/* StringRef prefix test: startswith until 15, starts_with from 16 (startswith gone in 19). */
inline bool pgStartsWith(llvm::StringRef s, llvm::StringRef prefix)
{
#if LLVM_VERSION_MAJOR < 16
    return s.startswith(prefix);
#else
    return s.starts_with(prefix);
#endif
}

/* StringRef suffix test: the same rename as startswith. */
inline bool pgEndsWith(llvm::StringRef s, llvm::StringRef suffix)
{
#if LLVM_VERSION_MAJOR < 16
    return s.endswith(suffix);
#else
    return s.ends_with(suffix);
#endif
}

/* i8* (typed pointers, 13–16) or ptr (opaque, 17+: getInt8PtrTy removed in 18). */
inline llvm::PointerType *pgI8Ptr(llvm::LLVMContext &Ctx)
{
    return llvm::PointerType::getUnqual(llvm::Type::getInt8Ty(Ctx));
}

/* A coroutine before CoroSplit: a string attribute until 14, an enum attribute from 15. */
inline bool pgIsPresplitCoroutine(const llvm::Function &F)
{
#if LLVM_VERSION_MAJOR < 15
    return F.hasFnAttribute("coroutine.presplit");
#else
    return F.hasFnAttribute(llvm::Attribute::PresplitCoroutine);
#endif
}

/* Function attributes stating what memory the function touches (from const/pure): six
 * attributes until 15, one `memory(...)` attribute from 16. X(kind) for each. */
#if LLVM_VERSION_MAJOR < 16
#define PG_FOR_EACH_MEMORY_FN_ATTR(X)                                                         \
    X(ReadNone) X(ReadOnly) X(WriteOnly) X(ArgMemOnly) X(InaccessibleMemOnly)                 \
    X(InaccessibleMemOrArgMemOnly)
#else
#define PG_FOR_EACH_MEMORY_FN_ATTR(X) X(Memory)
#endif

/* The optimisation level handed to pipeline callbacks: nested in PassBuilder until 13. Only
 * with llvm/Passes/PassBuilder.h included first. */
#ifdef LLVM_PASSES_PASSBUILDER_H
#if LLVM_VERSION_MAJOR < 14
using PgOptimizationLevel = llvm::PassBuilder::OptimizationLevel;
#else
using PgOptimizationLevel = llvm::OptimizationLevel;
#endif
#endif

/* Clang AST names (only with clang's headers included first). */
#ifdef LLVM_CLANG_AST_EXPR_H
#if LLVM_VERSION_MAJOR < 15
#define PG_STRING_ORDINARY clang::StringLiteral::Ascii
#elif LLVM_VERSION_MAJOR < 18
#define PG_STRING_ORDINARY clang::StringLiteral::Ordinary
#else
#define PG_STRING_ORDINARY clang::StringLiteralKind::Ordinary
#endif
inline bool pgIsOrdinary(const clang::StringLiteral *lit)
{
#if LLVM_VERSION_MAJOR < 15
    return lit->isAscii();
#else
    return lit->isOrdinary();
#endif
}
#if LLVM_VERSION_MAJOR < 18
#define PG_ARRAY_SIZE_NORMAL clang::ArrayType::Normal
#else
#define PG_ARRAY_SIZE_NORMAL clang::ArraySizeModifier::Normal
#endif
#endif /* LLVM_CLANG_AST_EXPR_H */

#if LLVM_VERSION_MAJOR < 18
#define PG_AS_C23 AS_C2x
#else
#define PG_AS_C23 AS_C23
#endif

#ifdef LLVM_IR_MODULE_H
#include "llvm/IR/Intrinsics.h"
/* An intrinsic's declaration, overloaded on one type: renamed getOrInsertDeclaration in 20. */
static inline llvm::Function *pgIntrinsic(llvm::Module &M, llvm::Intrinsic::ID id, llvm::Type *ty)
{
#if LLVM_VERSION_MAJOR < 20
    return llvm::Intrinsic::getDeclaration(&M, id, {ty});
#else
    return llvm::Intrinsic::getOrInsertDeclaration(&M, id, {ty});
#endif
}
#endif /* LLVM_IR_MODULE_H */

#endif /* PERFGROUP_LLVM_COMPAT_H */
