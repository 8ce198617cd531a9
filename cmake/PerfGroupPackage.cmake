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
#   <gcc -print-file-name=plugin>/perfgroup.so        PerfGroup::gcc_plugin (gcc -fplugin=perfgroup)
#   P/LIBDIR/perfgroup-clang.so                       PerfGroup::clang_plugin
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
# The compiler versions the plugins were built for (perfgroup_instrument() checks them). Cache
# variables, so a parent project that add_subdirectory()s perfgroup sees them too.
set(PerfGroup_GCC_MAJOR "" CACHE INTERNAL "GCC major version perfgroup.so is built for")
set(PerfGroup_LLVM_MAJOR "" CACHE INTERNAL "LLVM major version perfgroup-clang.so is built for")
if(TARGET perfgroup-gcc)
  execute_process(COMMAND ${PERFGROUP_GCC} -dumpversion OUTPUT_VARIABLE _v
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  string(REGEX MATCH "^[0-9]+" _v "${_v}")
  set(PerfGroup_GCC_MAJOR "${_v}" CACHE INTERNAL "GCC major version perfgroup.so is built for")
endif()
if(TARGET perfgroup-clang)
  execute_process(COMMAND ${PERFGROUP_LLVM_CONFIG} --version OUTPUT_VARIABLE _v
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  string(REGEX MATCH "^[0-9]+" _v "${_v}")
  set(PerfGroup_LLVM_MAJOR "${_v}" CACHE INTERNAL "LLVM major version perfgroup-clang.so is built for")
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
set(PERFGROUP_PKG_GCC_PLUGIN_REL "")
if(TARGET perfgroup-gcc)
  set(PERFGROUP_PKG_GCC_PLUGIN ${PERFGROUP_GCC_PLUGIN_DIR}/perfgroup.so)
  # The same file seen from the prefix: right for a whole-root copy (a DESTDIR staging).
  file(RELATIVE_PATH PERFGROUP_PKG_GCC_PLUGIN_REL ${CMAKE_INSTALL_PREFIX} ${PERFGROUP_PKG_GCC_PLUGIN})
endif()
set(PERFGROUP_PKG_CLANG_PLUGIN "")
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
