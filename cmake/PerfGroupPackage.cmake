# SPDX-License-Identifier: MIT
# cmake/PerfGroupPackage.cmake — how other projects use perfgroup: the PerfGroup:: names and
# perfgroup_instrument() in this build (add_subdirectory(perfgroup)), and what `cmake --install`
# adds for users of an installed perfgroup: the CMake package (PerfGroupConfig.cmake, its version
# file, the exported PerfGroup:: targets) and the pkg-config file perfgroup.pc.
# Included at the end of the top-level CMakeLists.txt, once every part has made its targets.
#
# Installed layout (prefix P; LIBDIR as GNUInstallDirs says):
#   P/LIBDIR/libperfgroup.so*, libperfgroup.a        PerfGroup::perfgroup, ::perfgroup_static
#   P/include/perfgroup.h, perfgroup/*.h              PerfGroup::headers
#   P/bin/perfgroup-convert                           PerfGroup::convert
#   <gcc-N -print-file-name=plugin>/perfgroup.so      PerfGroup::gcc_plugin_N, one per GCC built
#                                                     (gcc-N -fplugin=perfgroup); the first GCC's
#                                                     is PerfGroup::gcc_plugin
#   P/LIBDIR/perfgroup-clang-N.so                     PerfGroup::clang_plugin_N, one per LLVM built
#   P/LIBDIR/perfgroup-clang.so                       PerfGroup::clang_plugin (the first LLVM's)
#   P/LIBDIR/cmake/PerfGroup/                         find_package(PerfGroup)
#   P/LIBDIR/pkgconfig/perfgroup.pc                   pkg-config perfgroup
include(CMakePackageConfigHelpers)

# ---- This build: the same names an installed package gives ------------------------------------
if(TARGET perfgroup-clang AND NOT TARGET PerfGroup::clang_plugin)
  add_library(PerfGroup::clang_plugin ALIAS perfgroup-clang)
endif()
if(TARGET perfgroup-convert AND NOT TARGET PerfGroup::convert)
  add_executable(PerfGroup::convert ALIAS perfgroup-convert)
endif()
# The compiler versions the plugins were built for (perfgroup_instrument() picks and checks by
# them): PerfGroup_GCC_MAJORS / PerfGroup_LLVM_MAJORS (plugin-gcc/, plugin-clang/: cache
# variables, so a parent project that add_subdirectory()s perfgroup sees them too) and the
# first of each, the one PerfGroup::gcc_plugin / PerfGroup::clang_plugin is.
foreach(_fam GCC LLVM)
  set(_v "")
  if(PerfGroup_${_fam}_MAJORS)
    list(GET PerfGroup_${_fam}_MAJORS 0 _v)
  endif()
  set(PerfGroup_${_fam}_MAJOR "${_v}" CACHE INTERNAL "${_fam} major version of the first plugin")
endforeach()
if(NOT TARGET perfgroup-gcc)
  set(PerfGroup_GCC_MAJORS "" CACHE INTERNAL "")
endif()
if(NOT TARGET perfgroup-clang)
  set(PerfGroup_LLVM_MAJORS "" CACHE INTERNAL "")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/PerfGroupInstrument.cmake)

# ---- The installed CMake package -----------------------------------------------------------------
set(PERFGROUP_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/PerfGroup)
set_target_properties(perfgroup_headers PROPERTIES EXPORT_NAME headers)
install(TARGETS perfgroup_headers EXPORT PerfGroupTargets)
install(EXPORT PerfGroupTargets NAMESPACE PerfGroup:: DESTINATION ${PERFGROUP_CMAKE_DIR})

# Paths PerfGroupConfig.cmake and perfgroup.pc give for the plugins and the converter; "" when
# not built. Relative ones are relative to the install prefix (which may move); the GCC plugin
# lives in GCC's own directory, an absolute path.
set(PERFGROUP_PKG_GCC_PLUGIN "")
set(PERFGROUP_PKG_CLANG_PLUGIN "")
# Every plugin by its compiler's major version: "<major>=<path>;..." for PerfGroupConfig.cmake,
# and the pkg-config variables gcc_plugin_<major> / clang_plugin_<major>.
set(PERFGROUP_PKG_GCC_PLUGINS "")
set(PERFGROUP_PKG_CLANG_PLUGINS "")
set(PERFGROUP_PC_PLUGIN_VARS "")
foreach(_m IN LISTS PerfGroup_GCC_MAJORS)
  set(_abs ${PERFGROUP_GCC_${_m}_PLUGIN_DIR}/perfgroup.so)
  list(APPEND PERFGROUP_PKG_GCC_PLUGINS "${_m}=${_abs}")
  string(APPEND PERFGROUP_PC_PLUGIN_VARS "gcc_plugin_${_m}=${_abs}\n")
endforeach()
foreach(_m IN LISTS PerfGroup_LLVM_MAJORS)
  list(APPEND PERFGROUP_PKG_CLANG_PLUGINS "${_m}=${CMAKE_INSTALL_LIBDIR}/perfgroup-clang-${_m}.so")
  string(APPEND PERFGROUP_PC_PLUGIN_VARS
         "clang_plugin_${_m}=\${prefix}/${CMAKE_INSTALL_LIBDIR}/perfgroup-clang-${_m}.so\n")
endforeach()
string(REPLACE ";" " " PERFGROUP_PC_GCC_MAJORS "${PerfGroup_GCC_MAJORS}")
string(REPLACE ";" " " PERFGROUP_PC_LLVM_MAJORS "${PerfGroup_LLVM_MAJORS}")
if(TARGET perfgroup-gcc)
  set(PERFGROUP_PKG_GCC_PLUGIN ${PERFGROUP_GCC_PLUGIN_DIR}/perfgroup.so)
endif()
if(TARGET perfgroup-clang)
  set(PERFGROUP_PKG_CLANG_PLUGIN ${CMAKE_INSTALL_LIBDIR}/perfgroup-clang.so)   # plugin-clang/
endif()
set(PERFGROUP_PKG_CONVERT "")
if(TARGET perfgroup-convert)
  set(PERFGROUP_PKG_CONVERT ${CMAKE_INSTALL_BINDIR}/perfgroup-convert)
endif()

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/PerfGroupConfig.cmake.in
  ${PROJECT_BINARY_DIR}/pkg/PerfGroupConfig.cmake INSTALL_DESTINATION ${PERFGROUP_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/pkg/PerfGroupConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)   # 0.x: a minor release may change the hook ABI
install(FILES ${PROJECT_BINARY_DIR}/pkg/PerfGroupConfig.cmake
              ${PROJECT_BINARY_DIR}/pkg/PerfGroupConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/PerfGroupInstrument.cmake
        DESTINATION ${PERFGROUP_CMAKE_DIR})

# ---- pkg-config -----------------------------------------------------------------------------------
# prefix is found from the .pc file's own place (${pcfiledir}), so the tree can move.
set(PERFGROUP_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH PERFGROUP_PC_TO_PREFIX /p/${PERFGROUP_PC_DIR} /p)
string(REGEX REPLACE "/$" "" PERFGROUP_PC_TO_PREFIX "${PERFGROUP_PC_TO_PREFIX}")
find_package(PkgConfig QUIET)
# What a static link needs besides libperfgroup.a: msgpack-c (by its own .pc when it has one),
# threads, libdl.
set(PERFGROUP_PC_REQUIRES_PRIVATE "")
set(PERFGROUP_PC_LIBS_PRIVATE "-pthread")
if(PKG_CONFIG_FOUND)
  pkg_check_modules(PERFGROUP_PC_MSGPACK QUIET msgpack)
endif()
if(PERFGROUP_PC_MSGPACK_FOUND)
  set(PERFGROUP_PC_REQUIRES_PRIVATE msgpack)
else()
  string(APPEND PERFGROUP_PC_LIBS_PRIVATE " -lmsgpackc")
endif()
foreach(_l IN LISTS CMAKE_DL_LIBS)
  string(APPEND PERFGROUP_PC_LIBS_PRIVATE " -l${_l}")
endforeach()
configure_file(${CMAKE_CURRENT_LIST_DIR}/perfgroup.pc.in ${PROJECT_BINARY_DIR}/pkg/perfgroup.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/pkg/perfgroup.pc DESTINATION ${PERFGROUP_PC_DIR})
