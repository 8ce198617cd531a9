/* SPDX-License-Identifier: MIT */
/* struct_return: functions returning small (registers) and large (memory, sret) structs. */
#include <perfgroup.h>
#include <stdio.h>

struct small { int a, b; };
struct big { long v[8]; };

PERF_GROUP("sr") struct small make_small(int x)
{
    struct small s = { x, x + 1 };
    return s;
}

PERF_GROUP("sr") struct big make_big(int x)
{
    struct big b;
    for (int i = 0; i < 8; i++)
        b.v[i] = x + i;
    if (x < 0)
        return b;          /* an early return of a big struct too */
    b.v[0] = 0;
    return b;
}

int main(void)
{
    volatile int x = 5;
    struct small s = make_small(x);
    struct big b = make_big(x);
    printf("%d %d %ld %ld\n", s.a, s.b, b.v[0], b.v[7]);
    return 0;
}
