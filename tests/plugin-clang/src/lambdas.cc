// SPDX-License-Identifier: MIT
// lambdas: clang 14 names lambdas in a non-inline function "$_N"; their sites get g++'s
// "{lambda(sig)#N}" names (counted per enclosing function across signatures, as g++ does),
// nested lambdas numbered within their enclosing lambda.
#include <perfgroup.h>
#include <cstdio>

int main()
{
    auto a = [](int v) PERF_GROUP("l") { return v + 1; };
    auto b = [](double v) PERF_GROUP("l") { return v + 1; };
    auto c = [](int v) PERF_GROUP("l") {
        auto d = [](int w) PERF_GROUP("l") { return w; };
        return d(v) + 2;
    };
    int r = a(1);
    double s = b(1.0);
    r += c(1);
    std::printf("%d %g\n", r, s);
    return 0;
}
