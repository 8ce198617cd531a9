// SPDX-License-Identifier: MIT
// The C++ scoped spelling names itself in its diagnostics.
// expect: 4: error: 'perfgroup::group' attribute: the group name must not be empty
[[perfgroup::group("")]] int f() { return 0; }
