# SPDX-License-Identifier: MIT
# cmake/PerfGroupTestCompilers.cmake — pg_test_compilers(): which compilers the project's own
# test and benchmark programs are built with (tests/, bench/peers/), set in the caller's scope.
# Included after plugin-gcc/ and plugin-clang/, whose drivers it reads.
#
# The compilers the plugins were built for (a plugin loads only into its own compiler release;
# scripts/compilers.sh does the same per plugin), so a build for one non-default compiler
# (-DPERFGROUP_GCC=gcc-11, -DPERFGROUP_LLVM_CONFIG=llvm-config-19) tests with it: PG_TEST_gcc,
# PG_TEST_gxx (the g++ of the same GCC), PG_TEST_clang, PG_TEST_clangxx, PG_TEST_opt (the
# plugin's LLVM's bin directory); without a plugin, Debian's versioned names first. The Python
# tests get them from the environment ctest runs them in (PERFGROUP_TEST_GCC, _GXX, _CLANG,
# _CLANGXX, _OPT: tests/CMakeLists.txt).
macro(pg_test_compilers)
  if(TARGET perfgroup-gcc AND PERFGROUP_GCC_DRIVER)
    set(PG_TEST_gcc ${PERFGROUP_GCC_DRIVER})
    get_filename_component(_pgtc_dir "${PERFGROUP_GCC_DRIVER}" DIRECTORY)
    get_filename_component(_pgtc_name "${PERFGROUP_GCC_DRIVER}" NAME)
    string(REGEX REPLACE "gcc(-[0-9.]+|)$" "g++\\1" _pgtc_name "${_pgtc_name}")
    find_program(PG_TEST_gxx NAMES ${_pgtc_name} HINTS "${_pgtc_dir}" NO_CACHE REQUIRED)
  else()
    find_program(PG_TEST_gcc NAMES gcc-12 gcc)
    find_program(PG_TEST_gxx NAMES g++-12 g++)
  endif()
  if(TARGET perfgroup-clang AND PERFGROUP_LLVM_BINDIR)
    set(PG_TEST_clang ${PERFGROUP_LLVM_BINDIR}/clang)
    set(PG_TEST_clangxx ${PERFGROUP_LLVM_BINDIR}/clang++)
    set(PG_TEST_opt ${PERFGROUP_LLVM_BINDIR}/opt)
  else()
    find_program(PG_TEST_clang NAMES clang-14 clang)
    find_program(PG_TEST_clangxx NAMES clang++-14 clang++)
    find_program(PG_TEST_opt NAMES opt-14 opt)
  endif()
endmacro()
