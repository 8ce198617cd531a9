/* SPDX-License-Identifier: MIT */
/*
 * bench/count_hooks.c — how many hooks a run executes: LD_PRELOAD this in front of an
 * instrumented program (perfgroup's hooks and -finstrument-functions' alike; the preload
 * takes their calls before libperfgroup.so or the empty hooks see them), and at exit each
 * process appends "enter <n>" to the file PG_COUNT_OUT names. The counting run is not a
 * timed one (bench/real_projects.py runs it once per build, apart from the timed rounds).
 *
 * perfgroup's hooks are passed on to the runtime (libperfgroup.so, found with RTLD_NEXT) by a
 * jump, which keeps the stack pointer and return address it reads: the runtime keeps the
 * threads' re-entry state, so what is counted is the enter hook calls that the plugins'
 * inline re-entry check lets through (include/perfgroup/abi.h), as in a real run. Without
 * the runtime (the -finstrument-functions build) they return 0.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <perfgroup/abi.h>

static uint64_t enters;

#define HOOK __attribute__((visibility("default"), no_instrument_function))

/* the runtime's, or NULL; read by the jumps below */
__attribute__((visibility("hidden"))) void *pg_count_real_enter, *pg_count_real_exit;
__attribute__((visibility("hidden"))) uint64_t *pg_count_enters = &enters;

__asm__(".text\n"
        ".globl " PERFGROUP_HOOK_ENTER_NAME "\n.type " PERFGROUP_HOOK_ENTER_NAME ",@function\n"
        PERFGROUP_HOOK_ENTER_NAME ":\n"
        "  movq pg_count_enters(%rip), %rax\n"
        "  lock incq (%rax)\n"
        "  movq pg_count_real_enter(%rip), %rax\n"
        "  testq %rax, %rax\n"
        "  jz 1f\n"
        "  jmp *%rax\n"
        "1: xorl %eax, %eax\n"
        "  ret\n"
        ".size " PERFGROUP_HOOK_ENTER_NAME ", .-" PERFGROUP_HOOK_ENTER_NAME "\n"
        ".globl " PERFGROUP_HOOK_EXIT_NAME "\n.type " PERFGROUP_HOOK_EXIT_NAME ",@function\n"
        PERFGROUP_HOOK_EXIT_NAME ":\n"
        "  movq pg_count_real_exit(%rip), %rax\n"
        "  testq %rax, %rax\n"
        "  jz 1f\n"
        "  jmp *%rax\n"
        "1: ret\n"
        ".size " PERFGROUP_HOOK_EXIT_NAME ", .-" PERFGROUP_HOOK_EXIT_NAME "\n");

typedef void register_fn(uint32_t, struct perfgroup_site *, struct perfgroup_site *);

HOOK void PERFGROUP_MODULE_REGISTER(uint32_t abi, struct perfgroup_site *start,
                                    struct perfgroup_site *stop)
{
    register_fn *real = (register_fn *)dlsym(RTLD_NEXT, PERFGROUP_MODULE_REGISTER_NAME);
    if (real)
        real(abi, start, stop);
}

__attribute__((constructor, no_instrument_function)) static void count_find(void)
{
    pg_count_real_enter = dlsym(RTLD_NEXT, PERFGROUP_HOOK_ENTER_NAME);
    pg_count_real_exit = dlsym(RTLD_NEXT, PERFGROUP_HOOK_EXIT_NAME);
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
