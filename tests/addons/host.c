/* SPDX-License-Identifier: MIT */
/*
 * tests/addons/host.c — a plugin host as a plugin system has one: not instrumented itself, it
 * loads add-ons with dlopen, runs each one's entry point (every add-on's is `addon_run`) in a
 * few events, and dlcloses them, round after round (addons_test.py builds the add-ons).
 *
 *   host OUT ROUNDS EVENTS [--bg ADDON] [--shuffle] [--together] ADDON:GROUP:MS...
 *
 * Each add-on sums its bodies' CPU time by the thread's CPU clock (the ground truth, in this
 * binary; not around the call: the hooks' work outside every stopwatch, a new add-on's first
 * call resolving its site, is no group's) in its `addon_cpu_ns`, and their wall time in its
 * `addon_wall_ns`, both read before it is unloaded; OUT gets a line per add-on,
 * "A<TAB>path<TAB>truth_ns<TAB>wall_ns<TAB>calls", one per group,
 * "G<TAB>group<TAB>truth_ns<TAB>snapshot_ns<TAB>calls<TAB>desched" (desched: its bodies that
 * were off the CPU for a while, `addon_desched`; snapshot -1 without the runtime:
 * built without HOST_RUNTIME), and "reused N": loads that got an address an earlier, unloaded
 * add-on had. --bg ADDON: another thread runs that add-on's addon_run(0.5) in events all the
 * while (group "bg"), loaded once. --shuffle: each round loads the add-ons in another order.
 * --together: each round loads them all, runs them, then unloads them all. --warm ADDON: one
 * call of that add-on before anything is timed: a thread's first hook call sets the thread up
 * in the runtime (its entry, its recording writer: a fraction of a millisecond charged to no
 * group, docs/accounting.md), which is no add-on's work.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef HOST_RUNTIME
#include <perfgroup.h>
#endif

typedef void (*run_fn)(double ms);

struct addon {
    const char *path, *group;
    double ms;
    uint64_t truth_ns, wall_ns, calls, desched;
};

/* An add-on's sum of its bodies' time (`addon_cpu_ns`, `addon_wall_ns`); one it lacks: 0. */
static uint64_t body_ns(void *h, const char *name)
{
    const uint64_t *v = dlsym(h, name);
    return v ? *v : 0;
}

static void *load(const char *path, run_fn *run)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "host: dlopen: %s\n", dlerror());
        exit(1);
    }
    *run = (run_fn)(uintptr_t)dlsym(h, "addon_run");
    if (!*run) {
        fprintf(stderr, "host: %s: no addon_run\n", path);
        exit(1);
    }
    return h;
}

static atomic_int bg_stop;
static struct addon bg;

static void *bg_main(void *arg)
{
    (void)arg;
    run_fn run;
    void *h = load(bg.path, &run);
    while (!atomic_load(&bg_stop)) {
        run(bg.ms);
        bg.calls++;
    }
    bg.truth_ns = body_ns(h, "addon_cpu_ns");
    bg.desched = body_ns(h, "addon_desched");
    dlclose(h);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    FILE *out = fopen(argv[1], "w");
    int rounds = atoi(argv[2]), events = atoi(argv[3]), shuffle = 0, together = 0;
    struct addon a[64];
    int n = 0;
    pthread_t bgt;
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "--shuffle")) {
            shuffle = 1;
        } else if (!strcmp(argv[i], "--together")) {
            together = 1;
        } else if (!strcmp(argv[i], "--bg") && i + 1 < argc) {
            bg = (struct addon){argv[++i], "bg", 0.5, 0, 0, 0, 0};
        } else if (!strcmp(argv[i], "--warm") && i + 1 < argc) {
            run_fn run;
            void *h = load(argv[++i], &run);
            run(0.1);
            dlclose(h);
        } else if (n < 64) {
            char *g = strchr(argv[i], ':'), *m = g ? strchr(g + 1, ':') : NULL;
            if (!m)
                return 2;
            *g = *m = '\0';
            a[n++] = (struct addon){argv[i], g + 1, atof(m + 1), 0, 0, 0, 0};
        }
    }
    if (!out)
        return 2;
    if (bg.path)
        pthread_create(&bgt, NULL, bg_main, NULL);
    uintptr_t bases[4096];
    int nbases = 0, reused = 0;
    unsigned seed = 31;
    for (int r = 0; r < rounds; r++) {
        int order[64];
        for (int i = 0; i < n; i++)
            order[i] = i;
        for (int i = n - 1; shuffle && i > 0; i--) {
            int j = (int)(rand_r(&seed) % (unsigned)(i + 1)), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        void *hs[64];
        run_fn runs[64];
        for (int k = 0; k < n; k++) {
            struct addon *x = &a[order[k]];
            hs[k] = load(x->path, &runs[k]);
            Dl_info info;
            if (dladdr((void *)(uintptr_t)runs[k], &info)) {
                uintptr_t b = (uintptr_t)info.dli_fbase;
                for (int i = 0; i < nbases; i++)
                    if (bases[i] == b) {
                        reused++;
                        break;
                    }
                if (nbases < 4096)
                    bases[nbases++] = b;
            }
            for (int j = together ? 0 : k; j <= k && (!together || k == n - 1); j++)
                for (int e = 0; e < events; e++) {
                    struct addon *y = &a[order[j]];
                    runs[j](y->ms); /* one implicit event: the host has no event loop */
                    y->calls++;
                }
            for (int j = together ? 0 : k; j <= k && (!together || k == n - 1); j++) {
                a[order[j]].truth_ns += body_ns(hs[j], "addon_cpu_ns");
                a[order[j]].wall_ns += body_ns(hs[j], "addon_wall_ns");
                a[order[j]].desched += body_ns(hs[j], "addon_desched");
                if (dlclose(hs[j])) {
                    fprintf(stderr, "host: dlclose: %s\n", dlerror());
                    return 1;
                }
            }
        }
    }
    if (bg.path) {
        atomic_store(&bg_stop, 1);
        pthread_join(bgt, NULL);
        a[n++] = bg;
    }
#ifdef HOST_RUNTIME
    struct perfgroup_snapshot *s = perfgroup_snapshot_take();
#endif
    for (int i = 0; i < n; i++)
        fprintf(out, "A\t%s\t%llu\t%llu\t%llu\n", a[i].path, (unsigned long long)a[i].truth_ns,
                (unsigned long long)a[i].wall_ns, (unsigned long long)a[i].calls);
    /* the add-ons of one group (one add-on under two names) are one line */
    for (int i = 0; i < n; i++) {
        uint64_t truth = 0, calls = 0, desched = 0;
        int first = 1;
        for (int j = 0; j < n; j++)
            if (!strcmp(a[j].group, a[i].group)) {
                first &= j >= i;
                truth += a[j].truth_ns;
                calls += a[j].calls;
                desched += a[j].desched;
            }
        if (!first)
            continue;
        long long snap = -1;
#ifdef HOST_RUNTIME
        const struct perfgroup_stats *st = s ? perfgroup_snapshot_find(s, a[i].group) : NULL;
        snap = st ? (long long)st->cpu_ns : 0;
#endif
        fprintf(out, "G\t%s\t%llu\t%lld\t%llu\t%llu\n", a[i].group, (unsigned long long)truth,
                snap, (unsigned long long)calls, (unsigned long long)desched);
    }
    fprintf(out, "reused %d\n", reused);
    fclose(out);
    return 0;
}
