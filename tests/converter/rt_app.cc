// SPDX-License-Identifier: MIT
// rt_app.cc — a small real program for the converter's end-to-end test: built with a real
// perfgroup plugin, run with PERFGROUP_OUTPUT set, its recordings (parent and forked child)
// are converted and checked. Groups "parser" and "render" (attribute), C++ member functions
// (mangled names to demangle), an event loop, markers, a named worker thread, and with
// argument "fork" a forked child recording its own file.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perfgroup.h"

static volatile unsigned long sink;

static void spin_us(long us)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        for (int i = 0; i < 200; i++)
            sink += (unsigned long)i;
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

namespace app {
struct Parser {
    PERF_GROUP("parser") void parse(const char *text, unsigned n);
};
struct Renderer {
    PERF_GROUP("render") void frame(int i);
};

void Parser::parse(const char *text, unsigned n)
{
    sink += strlen(text) + n;
    spin_us(1500);
}

void Renderer::frame(int i)
{
    sink += (unsigned long)i;
    spin_us(800);
}
} // namespace app

PERF_GROUP("render") static void blocked_paint(void)
{
    usleep(2000); // wall time without CPU: "blocked"
}

static void *worker(void *arg)
{
    (void)arg;
    perfgroup_thread_name("rt-worker");
    app::Parser p;
    for (int i = 0; i < 20; i++) {
        perfgroup_event_begin("job");
        p.parse("worker", (unsigned)i);
        perfgroup_event_end();
    }
    return NULL;
}

static void loop(int n)
{
    app::Parser p;
    app::Renderer r;
    for (int i = 0; i < n; i++) {
        perfgroup_event_begin("tick");
        p.parse("hello", (unsigned)i);
        r.frame(i);
        if (i % 5 == 0)
            blocked_paint();
        perfgroup_event_end();
    }
}

int main(int argc, char **argv)
{
    pthread_t t;
    int with_fork = argc > 1 && strcmp(argv[1], "fork") == 0;
    perfgroup_marker("start", "main loop begins");
    pthread_create(&t, NULL, worker, NULL);
    loop(30);
    pthread_join(t, NULL);
    pid_t child = with_fork ? fork() : -1;
    if (child == 0) {
        loop(10);
        perfgroup_marker("child", "child done");
        return 0;
    }
    int st = 0;
    if (child > 0)
        waitpid(child, &st, 0);
    uint64_t b = perfgroup_marker_begin();
    loop(5);
    perfgroup_marker_end("tail", "last iterations", b);
    if (child > 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
        fprintf(stderr, "rt_app: child status 0x%x%s\n", st,
                WIFSIGNALED(st) ? " (killed by a signal)" : "");
        return 1;
    }
    return 0;
}
