// SPDX-License-Identifier: MIT
// clang 14 drops the argument of a plugin attribute's [[ns::name(...)]] spelling before the
// plugin sees it: an error that says what to write instead (the GCC plugin accepts it).
// expect: 5: error: clang 14 drops the argument of '[[perfgroup::group(...)]]' before a plugin sees it; write __attribute__((perf_group("name"))) or [[clang::annotate("perfgroup:name")]] (PERF_GROUP("name") from <perfgroup.h> does)
[[perfgroup::group("net")]] int f() { return 0; }
