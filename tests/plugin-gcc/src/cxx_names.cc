// SPDX-License-Identifier: MIT
// cxx_names: exclude= matches C++ functions by qualified name (ns::*), and by mangled name.
#include <perfgroup.h>
#include <cstdio>

namespace net {
int parse(int x) { return x + 1; }
int send(int x) { return x * 2; }
}
int helper(int x) { return x - 1; }

int main()
{
    volatile int x = 3;
    std::printf("%d\n", net::parse(x) + net::send(x) + helper(x));
    return 0;
}
