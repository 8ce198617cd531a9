# SPDX-License-Identifier: MIT
# cmake/PerfGroupInstrument.cmake — perfgroup_instrument(): compile a target with the perfgroup
# plugin of its compiler and link it against the runtime. Loaded by PerfGroupConfig.cmake
# (find_package(PerfGroup)) and by perfgroup's own CMakeLists.txt (add_subdirectory(perfgroup)).
#
#   perfgroup_instrument(<target> [GROUP <name>] [MAP <file>] [EXCLUDE <glob>...]
#                        [RUNTIME SHARED|STATIC] [OPTIONS <plugin option>...])
#
#   GROUP   the file group of every function of the target not placed by MAP
#           (the plugins' default=<name>; DEFAULT_GROUP is the same); without GROUP and MAP
#           only PERF_GROUP()-annotated functions are instrumented.
#   MAP     a map file, lines "GLOB GROUP" (the plugins' map=<file>, path made absolute).
#   EXCLUDE globs of functions or files never instrumented (the plugins' exclude=).
#   RUNTIME link PerfGroup::perfgroup (SHARED, the default) or PerfGroup::perfgroup_static.
#   OPTIONS further plugin options, e.g. system-headers or verbose.
#
# For each language of the target (C, CXX) the compiler decides the flags:
#   GCC    -fplugin=<perfgroup.so> -fplugin-arg-perfgroup-<option>...
#   Clang  -fplugin=<perfgroup-clang.so> -fpass-plugin=<perfgroup-clang.so> -D__PERFGROUP__=1
#          -fplugin-arg-perfgroup-<option>...
# They are COMPILE options only: Clang warns about -fplugin-arg-* on a link line (an error
# under -Werror). -fpass-plugin= and -D__PERFGROUP__=1 are what instrument when clang runs cc1
# without the plugin's front-end action (-save-temps: the -E run and the .bc -> .o run;
# .ll/.bc input); in an ordinary compile the plugin adds itself as pass plugin once either way
# (docs/plugins.md). The plugin must be the one built for the compiler's major version.
#
# Where the plugins and the runtime come from: the PerfGroup:: targets (this build, or
# find_package(PerfGroup)); else, for a file include()d on its own, the paths in
# PERFGROUP_GCC_PLUGIN_FILE, PERFGROUP_CLANG_PLUGIN_FILE and PERFGROUP_RUNTIME_FILE.
include_guard(GLOBAL)

function(perfgroup_instrument target)
  cmake_parse_arguments(PARSE_ARGV 1 _pg "" "GROUP;DEFAULT_GROUP;MAP;RUNTIME" "OPTIONS;EXCLUDE")
  set(_where "perfgroup_instrument(${target})")
  if(_pg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${_where}: unknown argument(s): ${_pg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET ${target})
    message(FATAL_ERROR "${_where}: no such target")
  endif()
  get_target_property(_type ${target} TYPE)
  if(_type STREQUAL "INTERFACE_LIBRARY")
    message(FATAL_ERROR "${_where}: an INTERFACE library has nothing to compile")
  endif()

  set(_opts ${_pg_OPTIONS})
  if(DEFINED _pg_DEFAULT_GROUP)
    if(DEFINED _pg_GROUP)
      message(FATAL_ERROR "${_where}: GROUP and DEFAULT_GROUP are the same; give one")
    endif()
    set(_pg_GROUP "${_pg_DEFAULT_GROUP}")
  endif()
  if(DEFINED _pg_GROUP)
    if(NOT _pg_GROUP MATCHES "^[^ \t,=]+$")
      message(FATAL_ERROR "${_where}: GROUP '${_pg_GROUP}' must be one word (no space, ',' or '=')")
    endif()
    list(APPEND _opts default=${_pg_GROUP})
  endif()
  if(DEFINED _pg_MAP)
    get_filename_component(_map "${_pg_MAP}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT EXISTS "${_map}")
      message(FATAL_ERROR "${_where}: MAP file '${_map}' does not exist")
    endif()
    list(APPEND _opts map=${_map})
  endif()
  if(_pg_EXCLUDE)
    list(JOIN _pg_EXCLUDE "," _ex)
    list(APPEND _opts exclude=${_ex})
  endif()
  if(NOT DEFINED _pg_RUNTIME OR _pg_RUNTIME STREQUAL "SHARED")
    set(_runtime PerfGroup::perfgroup)
  elseif(_pg_RUNTIME STREQUAL "STATIC")
    set(_runtime PerfGroup::perfgroup_static)
  else()
    message(FATAL_ERROR "${_where}: RUNTIME must be SHARED or STATIC, not '${_pg_RUNTIME}'")
  endif()
  if(NOT TARGET ${_runtime} AND PERFGROUP_RUNTIME_FILE)
    set(_runtime "${PERFGROUP_RUNTIME_FILE}")
  endif()

  # The flags of each plugin, chosen per source by generator expressions on the compiler that
  # compiles it; checked here for the languages whose compiler this directory knows (a language
  # enabled only inside an add_subdirectory()'d perfgroup is not).
  set(_flags "")
  set(_file_gcc_plugin "${PERFGROUP_GCC_PLUGIN_FILE}")
  set(_file_clang_plugin "${PERFGROUP_CLANG_PLUGIN_FILE}")
  set(_have "")
  foreach(_plugin gcc_plugin clang_plugin)
    if(TARGET PerfGroup::${_plugin})
      set(_so $<TARGET_FILE:PerfGroup::${_plugin}>)
    elseif(_file_${_plugin})
      set(_so "${_file_${_plugin}}")
    else()
      continue()
    endif()
    list(APPEND _have ${_plugin})
    set(_f -fplugin=${_so})
    if(_plugin STREQUAL "clang_plugin")
      list(APPEND _f -fpass-plugin=${_so} -D__PERFGROUP__=1)
      set(_id Clang)
    else()
      set(_id GNU)
    endif()
    foreach(_o IN LISTS _opts)
      list(APPEND _f -fplugin-arg-perfgroup-${_o})
    endforeach()
    list(JOIN _f "$<SEMICOLON>" _f)
    foreach(_lang C CXX)
      list(APPEND _flags "$<$<COMPILE_LANG_AND_ID:${_lang},${_id}>:${_f}>")
    endforeach()
    # In a build tree the plugin is a target of this build: build it before compiling.
    if(TARGET PerfGroup::${_plugin})
      get_target_property(_real PerfGroup::${_plugin} ALIASED_TARGET)
      if(_real)
        add_dependencies(${target} ${_real})
      endif()
    endif()
  endforeach()
  get_property(_langs GLOBAL PROPERTY ENABLED_LANGUAGES)
  foreach(_lang IN ITEMS C CXX)
    set(_id "${CMAKE_${_lang}_COMPILER_ID}")
    if(NOT _lang IN_LIST _langs OR _id STREQUAL "")
      continue()
    endif()
    string(REGEX MATCH "^[0-9]+" _major "${CMAKE_${_lang}_COMPILER_VERSION}")
    if(_id STREQUAL "GNU")
      set(_plugin PerfGroup::gcc_plugin)
      set(_want "${PerfGroup_GCC_MAJOR}")
    elseif(_id STREQUAL "Clang")
      set(_plugin PerfGroup::clang_plugin)
      set(_want "${PerfGroup_LLVM_MAJOR}")
    else()
      message(FATAL_ERROR "${_where}: perfgroup has no plugin for the ${_lang} compiler "
                          "${_id} (GCC and Clang only)")
    endif()
    string(REPLACE "PerfGroup::" "" _p ${_plugin})
    if(NOT _p IN_LIST _have)
      message(FATAL_ERROR "${_where}: the ${_lang} compiler is ${_id}, but this perfgroup was "
                          "built without ${_plugin}")
    endif()
    if(_want AND NOT _major STREQUAL _want)
      message(FATAL_ERROR "${_where}: ${_plugin} is built for ${_id} ${_want}, the ${_lang} "
                          "compiler is ${_id} ${CMAKE_${_lang}_COMPILER_VERSION}")
    endif()
  endforeach()
  target_compile_options(${target} PRIVATE ${_flags})

  # Link the runtime without choosing target_link_libraries()' plain or keyword signature
  # for the caller (CMake forbids mixing them on one target).
  set(_headers "")
  if(TARGET PerfGroup::headers)
    set(_headers PerfGroup::headers)
  endif()
  if(_type STREQUAL "STATIC_LIBRARY")
    set_property(TARGET ${target} APPEND PROPERTY INTERFACE_LINK_LIBRARIES ${_runtime})
    set_property(TARGET ${target} APPEND PROPERTY LINK_LIBRARIES ${_headers})
  elseif(_type STREQUAL "OBJECT_LIBRARY")
    set_property(TARGET ${target} APPEND PROPERTY LINK_LIBRARIES ${_headers})
  else()
    set_property(TARGET ${target} APPEND PROPERTY LINK_LIBRARIES ${_runtime})
  endif()
endfunction()
