/* SPDX-License-Identifier: MIT */
/*
 * tests/runtime/test_dlchurn.c — two add-ons with one function name, file and line (dl_addon.c
 * built as groups "a" and "b") loaded, run and unloaded again and again in a random order, so
 * that one is often loaded where the other was, while a second thread runs events of its own
 * and a third re-keys every site (a group activated and deactivated) all the while: each
 * group's CPU time within 5 % of the thread CPU clock around its calls, nothing charged to
 * the wrong add-on, no crash (run under ASan and TSan too, label runtime).
 * Usage: test_dlchurn A.so B.so
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>

#include "task.h"
#include "../bounds/bounds.h"

SITE(bg_site, "bg", "bg_work");
static atomic_int stop;

static void *bg_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        perfgroup_event_begin("bg");
        uint64_t tok = __perfgroup_enter(&bg_site);
        burn(200000);
        if (tok)
            __perfgroup_exit(&bg_site, tok);
        perfgroup_event_end();
    }
    return NULL;
}

static void *rekey_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) { /* every registered module's sites rewritten, each time */
        perfgroup_group_activate("addon_run");
        perfgroup_group_deactivate("addon_run");
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    const char *path[2] = {argv[1], argv[2]};
    const char *group[2] = {"a", "b"};
    int64_t truth[2] = {0, 0};
    pthread_t bg, rk;
    pthread_create(&bg, NULL, bg_main, NULL);
    pthread_create(&rk, NULL, rekey_main, NULL);
    unsigned seed = 31;
    int64_t steal0 = pg_steal_ns();
    for (int round = 0; round < 40; round++) {
        int i = (int)(rand_r(&seed) % 2);
        void *h = dlopen(path[i], RTLD_NOW | RTLD_LOCAL);
        ASSERT(h != NULL);
        void (*run)(int64_t) = (void (*)(int64_t))(uintptr_t)dlsym(h, "addon_run");
        ASSERT(run != NULL);
        for (int e = 0; e < 3; e++) {
            int64_t t0 = thread_cpu_ns();
            run(1000000); /* an implicit event: the outermost group entry */
            truth[i] += thread_cpu_ns() - t0;
        }
        ASSERT(dlclose(h) == 0);
    }
    /* time stolen from the vCPUs meanwhile (docs/accounting.md, stolen σ: a stopwatch
     * counts it, the thread CPU clock does not), + 1 tick of /proc/stat */
    int64_t stolen = pg_steal_ns() - steal0;
    stolen = stolen > 0 ? stolen + 10 * PG_BOUND_MS : 0;
    atomic_store(&stop, 1);
    pthread_join(bg, NULL);
    pthread_join(rk, NULL);
    struct perfgroup_snapshot *s = perfgroup_snapshot_take();
    ASSERT(s != NULL);
    for (int i = 0; i < 2; i++) {
        const struct perfgroup_stats *st = perfgroup_snapshot_find(s, group[i]);
        int64_t got = st ? (int64_t)st->cpu_ns : 0;
        printf("group %s: %.3f ms, thread CPU clock %.3f ms\n", group[i], got / 1e6,
               truth[i] / 1e6);
        ASSERT(truth[i] > 0);
        ASSERT_NEAR(got, truth[i], 0.05 * (double)truth[i] + (double)stolen);
    }
    perfgroup_snapshot_free(s);
    printf("ok dlchurn\n");
    return 0;
}
