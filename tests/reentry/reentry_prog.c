/* SPDX-License-Identifier: MIT */
/*
 * tests/reentry/reentry_prog.c — the inline re-entry check (include/perfgroup/abi.h,
 * "Re-entry without a call"), built with a plugin at -O0 and -O2: what it skips, and that
 * it never skips a call that must reach the runtime.
 *
 * The program counts the hook calls itself: it defines __perfgroup_enter and __perfgroup_exit
 * (an executable's definitions come before libperfgroup.so's) as two-instruction shims that
 * count and jump to the runtime's (dlsym RTLD_NEXT): a jump keeps the stack pointer and the
 * return address the runtime reads. Every case checks the group totals against the thread's
 * CPU clock read around the call (the truth); every one of them fails if a call is skipped
 * that should not be (the group would be charged nothing for it):
 *
 *   skip       1000 calls of an extern function of group "lib" from a frame of "lib": no hook
 *              call at all (the same calls from outside any group: 1000 pairs); and from a
 *              frame of group "core" inside one of "lib" (both run: none either)
 *   longjmp    a frame of "lib" left by longjmp, then the same function called again from
 *              the frame that called it first: it must reach the hook (the runtime drops the
 *              dead frame there) and be charged its own CPU, ungrouped work in between not
 *   nested     perfgroup_nested_loop_begin inside a frame of "lib", then a call of "lib": a new
 *              iteration, an entry again, charged
 *   event      perfgroup_event_begin inside a frame of "lib", then a call of "lib": charged
 *   activate   the function group "lib_burn()" activated inside a frame of "lib": its calls
 *              start its stopwatch (the keys change with the active groups)
 *   sibling    setjmp in a function not instrumented, a call of group "sib" that longjmps back
 *              to it, then another call of "sib" from the same depth (10 hot events): every
 *              such call counted (the plugins' landing hook after setjmp drops the dead frame)
 *
 * Exit 0 = pass; a line per failure.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <perfgroup.h>
#include <perfgroup/abi.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../bounds/bounds.h"

/* ---- counting shims ------------------------------------------------------------------- */

void *pg_real_enter, *pg_real_exit;
unsigned long pg_enters, pg_exits;

/* not instrumented: the plugins never instrument __perfgroup functions */
__asm__(".text\n"
        ".globl __perfgroup_enter\n.type __perfgroup_enter,@function\n"
        "__perfgroup_enter:\n"
        "  lock incq pg_enters(%rip)\n"
        "  movq pg_real_enter(%rip), %rax\n"
        "  testq %rax, %rax\n"
        "  jz 1f\n"
        "  jmp *%rax\n"
        "1: xorl %eax, %eax\n"
        "  ret\n"
        ".size __perfgroup_enter, .-__perfgroup_enter\n"
        ".globl __perfgroup_exit\n.type __perfgroup_exit,@function\n"
        "__perfgroup_exit:\n"
        "  lock incq pg_exits(%rip)\n"
        "  movq pg_real_exit(%rip), %rax\n"
        "  testq %rax, %rax\n"
        "  jz 1f\n"
        "  jmp *%rax\n"
        "1: ret\n"
        ".size __perfgroup_exit, .-__perfgroup_exit\n");

__attribute__((constructor, no_instrument_function)) static void find_hooks(void)
{
    pg_real_enter = dlsym(RTLD_NEXT, "__perfgroup_enter");
    pg_real_exit = dlsym(RTLD_NEXT, "__perfgroup_exit");
}

/* ---- the program ------------------------------------------------------------------------ */

__attribute__((no_instrument_function)) static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static volatile unsigned sink;

__attribute__((no_instrument_function)) static void spin_ms(double ms)
{
    double end = cpu_ms() + ms;
    unsigned s = sink;
    while (cpu_ms() < end)
        for (int i = 0; i < 1000; i++)
            s = s * 1664525u + 1013904223u;
    sink = s;
}

static int failures;
#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            printf("FAIL: " __VA_ARGS__);                                                     \
            printf("\n");                                                                     \
            failures++;                                                                       \
        }                                                                                     \
    } while (0)

PERF_GROUP("lib") __attribute__((noinline)) void lib_leaf(void) { sink++; }

PERF_GROUP("lib") __attribute__((noinline)) void lib_burn(double ms) { spin_ms(ms); }

PERF_GROUP("lib") __attribute__((noinline)) void lib_calls_leaf(int n)
{
    for (int i = 0; i < n; i++)
        lib_leaf();
}

/* Called through an ungrouped function with a large frame: the runtime tells a dead frame
 * from a live caller by the stack pointers at the two enter hooks (hooks.c, frame_dead), so
 * lib_burn, called by main after the longjmp, must be entered above lib_jump's frame. (Called
 * from main directly, lib_jump would be at lib_burn's depth, and with a smaller frame than
 * lib_burn's the runtime takes lib_burn for its callee: a limit, docs/accounting.md.) */
PERF_GROUP("core") __attribute__((noinline)) void core_calls_leaf(int n)
{
    for (int i = 0; i < n; i++)
        lib_leaf();
}

PERF_GROUP("lib") __attribute__((noinline)) void lib_calls_core(int n) { core_calls_leaf(n); }

static jmp_buf jb;
PERF_GROUP("lib") __attribute__((noinline)) void lib_jump(void)
{
    lib_burn(5);
    longjmp(jb, 1);
}

__attribute__((noinline, no_instrument_function)) static void via_big_frame(void)
{
    char big[4096];
    __asm__ volatile("" : : "r"(big) : "memory"); /* the whole array, in every compiler */
    lib_jump();
}

PERF_GROUP("lib") __attribute__((noinline)) void lib_nested(double ms)
{
    perfgroup_nested_loop_begin();
    lib_burn(ms);
    perfgroup_nested_loop_end();
}

PERF_GROUP("lib") __attribute__((noinline)) void lib_event(double ms)
{
    perfgroup_event_begin("inner");
    lib_burn(ms);
    perfgroup_event_end();
}

PERF_GROUP("lib") __attribute__((noinline)) void lib_activate(double ms)
{
    perfgroup_group_activate("lib_burn");
    lib_burn(ms);
    perfgroup_group_deactivate("lib_burn");
}

/* sibling: a function not instrumented setjmps and calls sib_jump (group "sib"), which calls
 * lib_leaf and longjmps back; then it calls sib_count (group "sib") from the same depth. The
 * plugins call the runtime's landing hook after every setjmp (abi.h, PERFGROUP_HOOK_LANDED):
 * the dead frame (or lite frame) of sib_jump is dropped there. Without it, it passed for
 * sib_count's live caller (a frame at the same stack position, taken for an ancestor) and
 * every later call of "sib" in the event was a re-entry: 60 of 106,260 counted. In a loop
 * inside a frame of "core" (the event goes hot: lite frames where the plugin makes them). */
static jmp_buf jb_sib;
static unsigned long sib_counts, sib_jumps;
PERF_GROUP("sib") __attribute__((noinline)) void sib_jump(void)
{
    sib_jumps++;
    lib_leaf();
    longjmp(jb_sib, 1);
}
PERF_GROUP("sib") __attribute__((noinline)) void sib_count(void)
{
    sib_counts++;
    lib_leaf();
}
__attribute__((noinline, no_instrument_function)) static void sib_step(int i)
{
    if ((i & 15) == 3) {
        if (setjmp(jb_sib) == 0)
            sib_jump();
    }
    sib_count();
}
PERF_GROUP("core") __attribute__((noinline)) void sib_loop(int n)
{
    for (int i = 0; i < n; i++)
        sib_step(i);
}

__attribute__((no_instrument_function)) static double group_ms(struct perfgroup_snapshot *before,
                                                               const char *name)
{
    struct perfgroup_snapshot *now = perfgroup_snapshot_take();
    struct perfgroup_snapshot *d = perfgroup_snapshot_diff(now, before);
    const struct perfgroup_stats *s = perfgroup_snapshot_find(d, name);
    double ms = s ? s->cpu_ns / 1e6 : 0;
    perfgroup_snapshot_free(d);
    perfgroup_snapshot_free(now);
    return ms;
}

__attribute__((no_instrument_function)) int main(void)
{
    CHECK(pg_real_enter && pg_real_exit, "the runtime's hooks not found");

    /* skip: from outside any group every call is an entry, inside "lib" none is */
    unsigned long e0 = pg_enters, x0 = pg_exits;
    for (int i = 0; i < 1000; i++)
        lib_leaf();
    unsigned long outside = pg_enters - e0, outside_x = pg_exits - x0;
    CHECK(outside == 1000 && outside_x == 1000, "1000 calls from outside a group made %lu enter "
          "and %lu exit hook calls, expected 1000 each", outside, outside_x);
    e0 = pg_enters, x0 = pg_exits;
    lib_calls_leaf(1000);
    unsigned long inside = pg_enters - e0, inside_x = pg_exits - x0;
    CHECK(inside == 1 && inside_x == 1, "1000 calls inside a frame of their group made %lu enter "
          "and %lu exit hook calls, expected 1 each (the frame's own)", inside, inside_x);
    CHECK(__perfgroup_cur.sp == 0, "no frame: the thread's re-entry state is still on");
    printf("skip: outside %lu/%lu, inside %lu/%lu hook calls\n", outside, outside_x, inside,
           inside_x);
    e0 = pg_enters, x0 = pg_exits;
    lib_calls_core(1000);
    unsigned long cross = pg_enters - e0, cross_x = pg_exits - x0;
    CHECK(cross == 2 && cross_x == 2, "1000 calls of \"lib\" inside a frame of \"core\" inside "
          "one of \"lib\" made %lu enter and %lu exit hook calls, expected 2 each (the two "
          "frames')", cross, cross_x);
    printf("skip across groups: %lu/%lu hook calls\n", cross, cross_x);

    /* longjmp: the dead frame is noticed at the next call of its group */
    struct perfgroup_snapshot *b = perfgroup_snapshot_take();
    if (setjmp(jb) == 0)
        via_big_frame();
    spin_ms(30); /* ungrouped: nobody's */
    struct pg_obs o0 = pg_obs_now();
    e0 = pg_enters;
    lib_burn(20);
    struct pg_obs o1 = pg_obs_now();
    double truth = (o1.cpu - o0.cpu) / 1e6;
    double got = group_ms(b, "lib");
    /* measured (rseq), else the share of the implicit event's CPU the sampler estimated
     * (docs/accounting.md "Error bounds") */
    struct pg_cfg cfg = pg_cfg_now();
    double bound = (cfg.measured ? pg_bound_measured(o1.cpu - o0.cpu, &o0, &o1)
                                 : pg_bound_sampled(&cfg, &o0, &o1)) / 1e6;
    CHECK(pg_enters - e0 == 1, "the call after a longjmp out of its group made %lu enter hook "
          "calls, expected 1", pg_enters - e0);
    /* the dead frame's stopwatch is cancelled (when the longjmp happened is unknown) */
    CHECK(got >= truth - bound && got <= truth + bound, "longjmp: lib charged %.2f ms, its call "
          "after the longjmp used %.2f ms +- %.2f (%s; the 30 ms between are nobody's)", got, truth,
          bound, pg_bound_why);
    printf("longjmp: lib %.2f ms, truth %.2f ms\n", got, truth);
    perfgroup_snapshot_free(b);

    /* nested loop, explicit event, activation: each inside a frame of "lib" */
    static const char *const names[] = {"nested", "event", "activate"};
    for (int k = 0; k < 3; k++) {
        b = perfgroup_snapshot_take();
        o0 = pg_obs_now();
        if (k == 0)
            lib_nested(20);
        else if (k == 1)
            lib_event(20);
        else
            lib_activate(20);
        o1 = pg_obs_now();
        truth = (o1.cpu - o0.cpu) / 1e6;
        got = group_ms(b, k == 2 ? "lib_burn()" : "lib");
        /* at least the 20 ms burn (by the CPU clock, inside the group), at most the call's
         * CPU: within the explicit event's bound (measured, else shared out) */
        bound = pg_bound_explicit(&cfg, o1.cpu - o0.cpu, &o0, &o1) / 1e6;
        CHECK(got >= 20 - bound && got <= truth + bound, "%s: %s charged %.2f ms of [20, %.2f] ms "
              "+- %.2f (%s)", names[k], k == 2 ? "lib_burn()" : "lib", got, truth, bound, pg_bound_why);
        printf("%s: %.2f ms, truth %.2f ms\n", names[k], got, truth);
        perfgroup_snapshot_free(b);
    }
    /* sibling: "sib" counted as called — a frame a longjmp skipped counts at most (exact mode
     * drops it uncounted, a lite frame counted it at its entry) */
    b = perfgroup_snapshot_take();
    for (int e = 0; e < 10; e++) {
        perfgroup_event_begin("sibling");
        sib_loop(10000);
        perfgroup_event_end();
    }
    struct perfgroup_snapshot *a = perfgroup_snapshot_take(), *d = perfgroup_snapshot_diff(a, b);
    const struct perfgroup_stats *sib = perfgroup_snapshot_find(d, "sib");
    unsigned long long acts = sib ? (unsigned long long)sib->activations : 0;
    CHECK(acts >= sib_counts && acts <= sib_counts + sib_jumps, "sibling: \"sib\" counted %llu "
          "activations of %lu calls after a longjmp's landing and %lu that longjmped (want at least "
          "the former, at most both)", acts, sib_counts, sib_jumps);
    printf("sibling: sib %llu activations, %lu calls + %lu that longjmped\n", acts, sib_counts,
           sib_jumps);
    perfgroup_snapshot_free(d);
    perfgroup_snapshot_free(a);
    perfgroup_snapshot_free(b);
    CHECK(__perfgroup_cur.sp == 0, "after the cases: the thread's re-entry state is still on");
    printf(failures ? "FAILED\n" : "ok\n");
    return failures != 0;
}
