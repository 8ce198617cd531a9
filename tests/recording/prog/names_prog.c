/* SPDX-License-Identifier: MIT */
/*
 * names_prog.c — threads named every way a program names them (issue 19), each working in
 * a group through the hooks as an instrumented function would:
 *   an unnamed thread                      -> "thread <tid>" in the file
 *   pthread_setname_np before its first hook -> that name
 *   prctl(PR_SET_NAME) after it has recorded -> the new name (a later PGF_REC_THREAD)
 * It prints each worker's tid and expected name, one per line, for names_test.py.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "../../runtime/task.h"

SITE(site_work, "app", "work");

static void work(int n) {
    for (int i = 0; i < n; i++) {
        uint64_t tok = __perfgroup_enter(&site_work);
        volatile uint64_t sink = 0; /* per thread (task.h's burn shares one: a TSan race) */
        for (int k = 0; k < 5000; k++)
            sink += (uint64_t)k;
        __perfgroup_exit(&site_work, tok);
    }
}

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static void say(const char *name) {
    pthread_mutex_lock(&out_mu);
    printf("%d %s\n", (int)gettid(), name);
    fflush(stdout);
    pthread_mutex_unlock(&out_mu);
}

static void *unnamed(void *arg) {
    (void)arg;
    work(200);
    say("");
    return NULL;
}

static void *named_early(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "named-early");
    work(200);
    say("named-early");
    return NULL;
}

static void *named_late(void *arg) {
    (void)arg;
    work(200);
    prctl(PR_SET_NAME, "named-late", 0, 0, 0);
    sleep_ms(3); /* names are looked at most once a millisecond of the thread */
    work(400);
    say("named-late");
    return NULL;
}

int main(void)
{
    void *(*fns[])(void *) = { unnamed, named_early, named_late };
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, fns[i], NULL);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    work(10);
    return 0;
}
