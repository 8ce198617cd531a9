# SPDX-License-Identifier: MIT
# tests/real/uvhook.cmake — given to libuv's own CMake build as CMAKE_PROJECT_libuv_INCLUDE:
# once libuv's top-level CMakeLists.txt is done, links uvhook.c into its static test runner
# with the --wrap options that make each loop iteration a perfgroup event. libuv's sources
# are not touched. PERFGROUP_UVHOOK_INCLUDE: perfgroup's include directory.
set(PERFGROUP_UVHOOK_DIR ${CMAKE_CURRENT_LIST_DIR})
function(perfgroup_uvhook)
  if(TARGET uv_run_tests_a)
    target_sources(uv_run_tests_a PRIVATE ${PERFGROUP_UVHOOK_DIR}/uvhook.c)
    target_include_directories(uv_run_tests_a PRIVATE ${PERFGROUP_UVHOOK_INCLUDE})
    target_link_options(uv_run_tests_a PRIVATE -Wl,--wrap=uv_run -Wl,--wrap=uv__io_poll)
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL perfgroup_uvhook)
