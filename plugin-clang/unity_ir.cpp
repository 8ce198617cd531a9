/* SPDX-License-Identifier: MIT */
/*
 * plugin-clang/unity_ir.cpp — the files that speak LLVM IR (`using namespace llvm`), compiled
 * as one unit: they parse the same headers and instantiate the same templates, once here
 * (PERFGROUP_CLANG_UNITY, CMakeLists.txt; docs/plugins.md, "Building the plugins"). A name
 * two of them define at file scope collides here: keep file-local names distinct.
 */
#include "instrument.cpp"
#include "coroutines.cpp"
#include "threads.cpp"
#include "elide.cpp"
#include "table.cpp"
