/* SPDX-License-Identifier: MIT */
/*
 * plugin-clang/unity_ast.cpp — the files that speak clang's AST and Sema (`using namespace
 * clang`), compiled as one unit: they parse the same headers and instantiate the same
 * templates, once here (PERFGROUP_CLANG_UNITY, CMakeLists.txt; docs/plugins.md, "Building
 * the plugins"). A name two of them define at file scope collides here: keep file-local
 * names distinct.
 */
#include "attribute.cpp"
#include "options.cpp"
#include "select.cpp"
