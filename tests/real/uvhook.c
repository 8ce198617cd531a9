/* SPDX-License-Identifier: MIT */
/*
 * tests/real/uvhook.c — each libuv loop iteration becomes a perfgroup event, without patching
 * libuv: the test runner is linked with -Wl,--wrap=uv_run -Wl,--wrap=uv__io_poll (uvhook.cmake),
 * so the calls uv_run() makes to uv__io_poll() (src/unix/core.c -> epoll.c, another object of
 * libuv.a) and every call to uv_run() come here first.
 *
 *   uv_run:       event begins ............................................ event ends
 *   iteration:    timers, pending, idle, prepare | poll (waiting: no event) | check, closing
 *                 <-------- event ------------->                          <-- next event ...
 *
 * A uv_run() inside a callback of another uv_run() on the same thread is a nested loop: the
 * outer iteration is split around it (perfgroup_nested_loop_begin/end). Works only with the
 * static libuv (uv_run_tests_a): inside libuv.so the call to uv__io_poll is bound at its own
 * link. Never instrumented itself (PERF_GROUP_NONE).
 */
#include <perfgroup.h>
#include <uv.h>

int __real_uv_run(uv_loop_t *loop, uv_run_mode mode);
void __real_uv__io_poll(uv_loop_t *loop, int timeout);
int __wrap_uv_run(uv_loop_t *loop, uv_run_mode mode);
void __wrap_uv__io_poll(uv_loop_t *loop, int timeout);

static __thread int depth;

PERF_GROUP_NONE int __wrap_uv_run(uv_loop_t *loop, uv_run_mode mode)
{
    if (depth++ > 0)
        perfgroup_nested_loop_begin();
    perfgroup_event_begin("uv loop iteration");
    int r = __real_uv_run(loop, mode);
    perfgroup_event_end();
    if (--depth > 0)
        perfgroup_nested_loop_end();
    return r;
}

PERF_GROUP_NONE void __wrap_uv__io_poll(uv_loop_t *loop, int timeout)
{
    perfgroup_event_end();
    __real_uv__io_poll(loop, timeout);
    perfgroup_event_begin("uv loop iteration");
}
