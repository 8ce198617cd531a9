/* SPDX-License-Identifier: MIT */
/* threads: three threads run instrumented code concurrently; each names itself, and the
 * trace, grouped by thread, shows each thread's own properly nested sequence. step() is static
 * and called only from job() in its own group: a re-entry, elided (no hooks, not in the trace). */
#include <perfgroup.h>
#include <pthread.h>
#include <stdio.h>

PERF_GROUP("work") static int step(int x) { return x * 2 + 1; }
PERF_GROUP("work") static int job(int n)
{
    int r = 0;
    for (int i = 0; i < n; i++)
        r += step(i);
    return r;
}

static void *worker(void *arg)
{
    static const char *names[] = { "worker1", "worker2" };
    int id = (int)(long)arg;
    perfgroup_thread_name(names[id]);
    return (void *)(long)job(id + 2);
}

int main(void)
{
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    int r = job(1);
    for (int i = 0; i < 2; i++) {
        void *v;
        pthread_join(t[i], &v);
        r += (int)(long)v;
    }
    printf("%d\n", r);
    return 0;
}
