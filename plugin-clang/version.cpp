// SPDX-License-Identifier: MIT
/* version.cpp — perfgroup-clang.so refuses to run in a clang (or opt) of another major release
 * than the one whose headers built it.
 *
 * LLVM's C++ API has no stable ABI: a plugin built against LLVM 14 loads into clang 19 without
 * a complaint (every symbol it names still exists) and then crashes in its first call
 * (clang-19 -fplugin=<14's plugin>: std::length_error in CreateASTConsumer, an ICE; clang-14
 * with 19's: SIGSEGV). Before:
 *
 *     $ clang-19 -fplugin=/usr/local/lib/perfgroup-clang-14.so -c m.c
 *     terminate called after throwing an instance of 'std::length_error'
 *     PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ ...
 *
 * After: at load, before any static constructor of the plugin touches clang (priority 101
 * runs before C++ initializers without one), the host's major version is read and compared:
 *
 *     $ clang-19 -fplugin=/usr/local/lib/perfgroup-clang-14.so -c m.c
 *     error: /usr/local/lib/perfgroup-clang-14.so is perfgroup's plugin for clang 14 and cannot
 *     run in clang 19: use the perfgroup-clang-19.so built for clang 19 (cmake
 *     -DPERFGROUP_LLVM_CONFIG=llvm-config-19)
 *     clang-19: error: clang frontend command failed with exit code 1
 *
 * The host's version, looked up by name so that the plugin names no symbol a release lacks:
 * clang::getClangFullVersion() ("Debian clang version 19.1.7 (...)", in every clang), else
 * LLVMGetVersion() (LLVM 16 and later: opt). A host that has neither is not checked.
 */
#include "llvm/Config/llvm-config.h"   // LLVM_VERSION_MAJOR

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <string>

namespace {

unsigned hostMajor(const char **what) {
  using FullVersion = std::string (*)();
  // std::string getClangFullVersion(), mangled with libstdc++'s [abi:cxx11] tag.
  if (auto f = reinterpret_cast<FullVersion>(
          dlsym(RTLD_DEFAULT, "_ZN5clang19getClangFullVersionB5cxx11Ev"))) {
    std::string v = f();
    size_t at = v.find("clang version ");
    if (at != std::string::npos) {
      *what = "clang";
      return static_cast<unsigned>(strtoul(v.c_str() + at + strlen("clang version "), nullptr, 10));
    }
  }
  using GetVersion = void (*)(unsigned *, unsigned *, unsigned *);
  if (auto g = reinterpret_cast<GetVersion>(dlsym(RTLD_DEFAULT, "LLVMGetVersion"))) {
    unsigned major = 0, minor = 0, patch = 0;
    g(&major, &minor, &patch);
    *what = "LLVM";
    return major;
  }
  return 0;
}

__attribute__((constructor(101))) void refuseOtherReleases() {
  const char *what = "";
  unsigned host = hostMajor(&what);
  if (host == 0 || host == LLVM_VERSION_MAJOR)
    return;
  Dl_info self;
  const char *path = "perfgroup-clang.so";
  if (dladdr(reinterpret_cast<void *>(&refuseOtherReleases), &self) && self.dli_fname)
    path = self.dli_fname;
  fprintf(stderr,
          "error: %s is perfgroup's plugin for clang %d and cannot run in %s %u: use the "
          "perfgroup-clang-%u.so built for clang %u (cmake -DPERFGROUP_LLVM_CONFIG=llvm-config-%u)\n",
          path, LLVM_VERSION_MAJOR, what, host, host, host, host);
  fflush(stderr);
  _exit(1);
}

}  // namespace
