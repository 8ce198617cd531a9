# SPDX-License-Identifier: MIT
# cmake/PerfGroupInstrument.cmake — perfgroup_instrument(<target> ...): compile a target's C and
# C++ sources with the perfgroup plugin that matches each source's compiler, and link the
# runtime.
#
#   perfgroup_instrument(app [DEFAULT_GROUP core] [MAP groups.map] [EXCLUDE glob...])
#
# GCC sources get -fplugin=<perfgroup.so>; Clang sources get -fplugin=<perfgroup-clang.so> and
# also -fpass-plugin=<same .so> -D__PERFGROUP__=1, which clang 14 needs when the compile is
# split into several cc1 runs (-save-temps: the -E run defines no macro, the .bc -> .o run has
# no AST) and which is harmless otherwise (docs/plugins.md). Plugin options go to the compile
# step only (clang warns about -fplugin-arg-* at a link step).
#
# The plugins and the runtime: the in-tree targets perfgroup-gcc / perfgroup-clang / perfgroup
# when they exist, else the files named by PERFGROUP_GCC_PLUGIN_FILE,
# PERFGROUP_CLANG_PLUGIN_FILE and PERFGROUP_RUNTIME_FILE (e.g. an installed perfgroup).
include_guard(GLOBAL)

function(perfgroup_instrument target)
  cmake_parse_arguments(PG "" "DEFAULT_GROUP;MAP" "EXCLUDE" ${ARGN})
  set(_opts "")
  if(PG_DEFAULT_GROUP)
    list(APPEND _opts -fplugin-arg-perfgroup-default=${PG_DEFAULT_GROUP})
  endif()
  if(PG_MAP)
    get_filename_component(_map "${PG_MAP}" ABSOLUTE)
    list(APPEND _opts -fplugin-arg-perfgroup-map=${_map})
  endif()
  if(PG_EXCLUDE)
    string(JOIN "," _ex ${PG_EXCLUDE})
    list(APPEND _opts -fplugin-arg-perfgroup-exclude=${_ex})
  endif()

  if(TARGET perfgroup-gcc)
    set(_gcc $<TARGET_FILE:perfgroup-gcc>)
    add_dependencies(${target} perfgroup-gcc)
  else()
    set(_gcc "${PERFGROUP_GCC_PLUGIN_FILE}")
  endif()
  if(TARGET perfgroup-clang)
    set(_clang $<TARGET_FILE:perfgroup-clang>)
    add_dependencies(${target} perfgroup-clang)
  else()
    set(_clang "${PERFGROUP_CLANG_PLUGIN_FILE}")
  endif()

  foreach(lang C CXX)
    if(_gcc)
      target_compile_options(${target} PRIVATE
        "$<$<COMPILE_LANG_AND_ID:${lang},GNU>:-fplugin=${_gcc};${_opts}>")
    endif()
    if(_clang)
      target_compile_options(${target} PRIVATE
        "$<$<COMPILE_LANG_AND_ID:${lang},Clang>:-fplugin=${_clang};-fpass-plugin=${_clang};-D__PERFGROUP__=1;${_opts}>")
    endif()
  endforeach()

  if(TARGET perfgroup)
    target_link_libraries(${target} PRIVATE perfgroup)
  elseif(PERFGROUP_RUNTIME_FILE)
    target_link_libraries(${target} PRIVATE "${PERFGROUP_RUNTIME_FILE}")
  endif()
endfunction()
