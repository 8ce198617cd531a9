/* SPDX-License-Identifier: MIT */
/*
 * tests/runtime/test_seam.c — measures the runtime must discard: a stopwatch that ends on
 * another CPU, and a counter that goes backwards (TSC reset). Injected through the clock
 * layer's test seam (runtime built with PERFGROUP_TESTING), everything else real.
 */
#include "task.h"

extern int64_t perfgroup__test_clock_offset;
extern int64_t perfgroup__test_cpu_override;

SITE(site_a, "A", "fa");
SITE(site_b, "B", "fb");

unsigned perfgroup__jank_mask(uint64_t cpu_ns);

/* Jank buckets: an event "exceeds 2^i ms" strictly: 0.99, 1.0 and 1.01 times each edge. */
static void jank_edges(void)
{
    for (unsigned i = 0; i < PERFGROUP_JANK_BUCKETS; i++) {
        uint64_t edge = 1000000ull << i;
        unsigned below = (1u << i) - 1; /* buckets < i */
        ASSERT_U64(perfgroup__jank_mask(edge * 99 / 100), ==, below);
        ASSERT_U64(perfgroup__jank_mask(edge), ==, below);
        ASSERT_U64(perfgroup__jank_mask(edge * 101 / 100), ==, below | (1u << i));
    }
    ASSERT_U64(perfgroup__jank_mask(0), ==, 0);
    ASSERT_U64(perfgroup__jank_mask(UINT64_MAX), ==, (1u << PERFGROUP_JANK_BUCKETS) - 1);
}

int main(void)
{
    jank_edges();

    /* 1. CPU change between enter and exit: A's measure is dropped, B's (same CPU) kept */
    perfgroup__test_cpu_override = 0;
    perfgroup_event_begin("ev");
    uint64_t ta = __perfgroup_enter(&site_a);
    perfgroup__test_cpu_override = 1;
    uint64_t tb = __perfgroup_enter(&site_b);
    burn(1000000);
    __perfgroup_exit(&site_b, tb);
    __perfgroup_exit(&site_a, ta);
    perfgroup_event_end();
    struct perfgroup_snapshot *s = perfgroup_snapshot_take();
    ASSERT_U64(stats(s, "A")->discarded, ==, 1);
    ASSERT_U64(stats(s, "A")->cpu_ns, ==, 0);
    ASSERT_U64(stats(s, "A")->activations, ==, 0);
    ASSERT_U64(stats(s, "B")->discarded, ==, 0);
    ASSERT_U64(stats(s, "B")->activations, ==, 1);
    ASSERT_U64(stats(s, "B")->wall_ns, >, 900000); /* its stopwatch: >= its 1 ms burn */
    ASSERT_U64(stats(s, "B")->cpu_ns, >, 0);
    perfgroup_snapshot_free(s);

    /* 2. The counter goes backwards inside a stopwatch (TSC reset): dropped */
    perfgroup_event_begin("ev");
    ta = __perfgroup_enter(&site_a);
    perfgroup__test_clock_offset = -((int64_t)1 << 40);
    __perfgroup_exit(&site_a, ta);
    perfgroup__test_clock_offset = 0; /* and forward again before the event ends */
    perfgroup_event_end();
    s = perfgroup_snapshot_take();
    ASSERT_U64(stats(s, "A")->discarded, ==, 2);
    ASSERT_U64(stats(s, "A")->cpu_ns, ==, 0);
    perfgroup_snapshot_free(s);

    /* 3. A group's cycles larger than its event's (n > 1): discarded at commit */
    perfgroup_event_begin("ev");
    ta = __perfgroup_enter(&site_a);
    perfgroup__test_clock_offset = (int64_t)1 << 40;  /* jumps forward during A only */
    __perfgroup_exit(&site_a, ta);
    perfgroup__test_clock_offset = 0;
    perfgroup_event_end();
    s = perfgroup_snapshot_take();
    ASSERT_U64(stats(s, "A")->discarded, ==, 3);
    ASSERT_U64(stats(s, "A")->cpu_ns, ==, 0);
    /* and a sane event after all that is counted normally */
    perfgroup_snapshot_free(s);
    perfgroup_event_begin("ev");
    ta = __perfgroup_enter(&site_a);
    burn(1000000);
    __perfgroup_exit(&site_a, ta);
    perfgroup_event_end();
    s = perfgroup_snapshot_take();
    ASSERT_U64(stats(s, "A")->activations, ==, 1);
    ASSERT_NEAR(stats(s, "A")->cpu_ns, 1000000, 400000);
    perfgroup_snapshot_free(s);
    printf("ok seam\n");
    return 0;
}
