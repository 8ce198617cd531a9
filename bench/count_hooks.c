/* SPDX-License-Identifier: MIT */
/*
 * bench/count_hooks.c — how many hooks a run executes: LD_PRELOAD this in front of an
 * instrumented program (perfgroup's hooks and -finstrument-functions' alike; the preload
 * takes their calls before libperfgroup.so or the empty hooks see them), and at exit each
 * process appends "enter <n>" to the file PG_COUNT_OUT names. The counting run is not a
 * timed one (bench/real_projects.py runs it once per build, apart from the timed rounds).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <perfgroup/abi.h>

static uint64_t enters;

#define HOOK __attribute__((visibility("default"), no_instrument_function))

HOOK uint64_t PERFGROUP_HOOK_ENTER(struct perfgroup_site *site)
{
    (void)site;
    __atomic_fetch_add(&enters, 1, __ATOMIC_RELAXED);
    return 0;
}

HOOK void PERFGROUP_HOOK_EXIT(struct perfgroup_site *site, uint64_t token)
{
    (void)site, (void)token;
}

HOOK void PERFGROUP_MODULE_REGISTER(uint32_t abi, struct perfgroup_site *start,
                                    struct perfgroup_site *stop)
{
    (void)abi, (void)start, (void)stop;
}

HOOK void __cyg_profile_func_enter(void *fn, void *site)
{
    (void)fn, (void)site;
    __atomic_fetch_add(&enters, 1, __ATOMIC_RELAXED);
}

HOOK void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)fn, (void)site;
}

__attribute__((destructor, no_instrument_function)) static void count_report(void)
{
    const char *path = getenv("PG_COUNT_OUT");
    if (!path)
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0)
        return;
    char line[64];
    int n = snprintf(line, sizeof line, "enter %llu\n", (unsigned long long)__atomic_load_n(&enters, __ATOMIC_RELAXED));
    if (n > 0 && write(fd, line, (size_t)n) < 0) {
        /* nothing to do: the count is lost, the script reports it missing */
    }
    close(fd);
}
