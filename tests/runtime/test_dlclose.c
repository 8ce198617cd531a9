/* SPDX-License-Identifier: MIT */
/*
 * tests/runtime/test_dlclose.c — libperfgroup.so loaded only by a dlopen'ed module, used,
 * and dlclosed: the runtime must stay mapped (it is linked -z nodelete), because its
 * perfgroup-cpu sampler thread goes on running its code and the thread's TLS destructor is
 * its code too. Without that, the sampler's next wakeup or this thread's exit crashes.
 * Usage: test_dlclose MODULE.so
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static void *worker(void *arg)
{
    int (*work)(void) = (int (*)(void))arg;
    return (void *)(long)work(); /* a second thread: its TLS destructor runs at its exit */
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    int (*work)(void) = (int (*)(void))(void (*)(void))dlsym(h, "mod_work");
    if (!work || work() != 0)
        return 1;
    pthread_t th;
    pthread_create(&th, NULL, worker, (void *)work);
    void *rv;
    pthread_join(th, &rv);
    if (dlclose(h) != 0)
        return 1;
    /* the sampler wakes every 10 ms: let it run several times, busy and idle */
    struct timespec ts = {0, 60 * 1000000L};
    nanosleep(&ts, NULL);
    printf("ok dlclose\n");
    return 0;
}
