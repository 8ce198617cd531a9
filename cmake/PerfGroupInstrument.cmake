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
# For each language of the target (C, CXX) the compiler decides the flags, with the plugin
# built for its major version (PerfGroup::gcc_plugin_<N> / PerfGroup::clang_plugin_<N>; none:
# a configure error naming the compiler and the -DPERFGROUP_GCC= / -DPERFGROUP_LLVM_CONFIG=
# that builds its plugin):
#   GCC    -fplugin=<perfgroup.so> -fplugin-arg-perfgroup-<option>...
#   Clang  -fplugin=<perfgroup-clang.so> -fpass-plugin=<perfgroup-clang.so> -D__PERFGROUP__=1
#          -fplugin-arg-perfgroup-<option>...   (Clang 13: -Xclang -plugin-arg-perfgroup -Xclang
#          <option>, it has no -fplugin-arg-)
# They are COMPILE options only: Clang warns about -fplugin-arg-* on a link line (an error
# under -Werror). -fpass-plugin= and -D__PERFGROUP__=1 are what instrument when clang runs cc1
# without the plugin's front-end action (-save-temps: the -E run and the .bc -> .o run;
# .ll/.bc input); in an ordinary compile the plugin adds itself as pass plugin once either way
# (docs/plugins.md).
#
# Where the plugins and the runtime come from: the PerfGroup:: targets (this build, or
# find_package(PerfGroup)); else, for a file include()d on its own, the paths in
# PERFGROUP_GCC_PLUGIN_FILE, PERFGROUP_CLANG_PLUGIN_FILE (versions not checked)
# and PERFGROUP_RUNTIME_FILE.
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

  # Each language's sources get the plugin of the compiler that compiles them, by family and
  # major version (PerfGroup::gcc_plugin_<N>, PerfGroup::clang_plugin_<N>): a plugin built for
  # another release does not load (GCC: undefined symbols) or crashes the compiler (Clang), so
  # a compiler without its plugin is an error here, at configure time.
  set(_flags "")
  get_property(_langs GLOBAL PROPERTY ENABLED_LANGUAGES)
  foreach(_lang IN ITEMS C CXX)
    set(_id "${CMAKE_${_lang}_COMPILER_ID}")
    if(NOT _lang IN_LIST _langs OR _id STREQUAL "")
      continue()   # not enabled, or enabled only inside an add_subdirectory()'d perfgroup
    endif()
    set(_version "${CMAKE_${_lang}_COMPILER_VERSION}")
    string(REGEX MATCH "^[0-9]+" _major "${_version}")
    if(_id STREQUAL "GNU")
      set(_p gcc_plugin)
      set(_up GCC)
      set(_name GCC)
      set(_fam GCC)
      set(_var PERFGROUP_GCC)
      set(_val gcc-${_major})
    elseif(_id STREQUAL "Clang")
      set(_p clang_plugin)
      set(_up CLANG)
      set(_name Clang)
      set(_fam LLVM)
      set(_var PERFGROUP_LLVM_CONFIG)
      set(_val llvm-config-${_major})
    else()
      message(FATAL_ERROR "${_where}: perfgroup has no plugin for the ${_lang} compiler "
                          "${_id} ${_version} (GCC and Clang only)")
    endif()
    set(_compiler "${_name} ${_version} (${CMAKE_${_lang}_COMPILER})")
    if(TARGET PerfGroup::${_p}_${_major})
      set(_so $<TARGET_FILE:PerfGroup::${_p}_${_major}>)
      # In a build tree the plugin is built by this build: build it before compiling.
      get_target_property(_real PerfGroup::${_p}_${_major} ALIASED_TARGET)
      if(TARGET "${_real}-build")          # a plugin built by another g++ (plugin-gcc/)
        add_dependencies(${target} ${_real}-build)
      elseif(_real)
        get_target_property(_imported ${_real} IMPORTED)
        if(NOT _imported)
          add_dependencies(${target} ${_real})
        endif()
      endif()
    elseif(NOT PerfGroup_${_fam}_MAJORS AND PERFGROUP_${_up}_PLUGIN_FILE)
      set(_so "${PERFGROUP_${_up}_PLUGIN_FILE}")   # a file include()d on its own: unchecked
    elseif(PerfGroup_${_fam}_MAJORS)
      list(JOIN PerfGroup_${_fam}_MAJORS ", " _have)
      message(FATAL_ERROR "${_where}: the ${_lang} compiler is ${_compiler}, but this perfgroup "
                          "has PerfGroup::${_p} only for ${_name} ${_have}; a plugin of another "
                          "release does not load into it or crashes it. Build perfgroup for it "
                          "with -D${_var}=${_val} (plugins for several compilers side by side: "
                          "a list, \"-D${_var}=${_val};...\"), or compile with ${_name} ${_have}.")
    else()
      message(FATAL_ERROR "${_where}: the ${_lang} compiler is ${_compiler}, but this perfgroup "
                          "was built without PerfGroup::${_p}")
    endif()
    set(_f -fplugin=${_so})
    if(_id STREQUAL "Clang")
      list(APPEND _f -fpass-plugin=${_so} -D__PERFGROUP__=1)
    endif()
    foreach(_o IN LISTS _opts)
      if(_id STREQUAL "Clang" AND _major LESS 14)
        list(APPEND _f "SHELL:-Xclang -plugin-arg-perfgroup -Xclang \"${_o}\"")  # no -fplugin-arg- before 14
      else()
        list(APPEND _f -fplugin-arg-perfgroup-${_o})
      endif()
    endforeach()
    list(JOIN _f "$<SEMICOLON>" _f)
    list(APPEND _flags "$<$<COMPILE_LANGUAGE:${_lang}>:${_f}>")
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
