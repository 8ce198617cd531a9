/* SPDX-License-Identifier: MIT */
/* util.c — the consumer's static library: one function, in group "util" (GROUP util). */
int util_twice(int x);

int util_twice(int x)
{
    return 2 * x;
}
