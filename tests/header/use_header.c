/* SPDX-License-Identifier: MIT */
/* tests/header/use_header.c — every public declaration of perfgroup.h used once; compiled as
 * C and C++ by gcc and clang, with and without the plugins, under -Wall -Wextra -Werror
 * (tests/header/CMakeLists.txt). */
#include <perfgroup.h>

PERF_GROUP("addon") static int in_group(int x) { return x + 1; }
PERF_GROUP_NONE static int excluded(int x) { return x - 1; }

static void on_alert(const struct perfgroup_alert_info *info, void *arg)
{
    (void)info;
    (void)arg;
}

int main(void)
{
    int id = perfgroup_alert_add(1000000, on_alert, 0);
    perfgroup_event_begin("ev");
    int r = in_group(1) + excluded(1);
    perfgroup_nested_loop_begin();
    perfgroup_nested_loop_end();
    perfgroup_event_end();
    struct perfgroup_snapshot *s = perfgroup_snapshot_take();
    const struct perfgroup_stats *st = perfgroup_snapshot_find(s, "addon");
    r += st ? (int)st->events : 0;
    r += (int)perfgroup_snapshot_count(s) > 0 && perfgroup_snapshot_at(s, 0) != 0;
    perfgroup_snapshot_free(s);
    perfgroup_alert_remove(id);
    perfgroup_thread_name("t");
    perfgroup_task k = perfgroup_task_capture();
    perfgroup_task_begin(k, "job");
    perfgroup_task_end();
    r += st ? (int)(st->task_cpu_ns + st->tasks) : 0;
    r += perfgroup_is_active();
    return r == 99 ? 1 : 0;
}
