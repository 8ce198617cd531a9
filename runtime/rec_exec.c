/* SPDX-License-Identifier: MIT */
/*
 * runtime/rec_exec.c — close the recording cleanly across exec().
 *
 * The exec family is wrapped (these definitions preempt libc's for the program and every
 * library loaded after the runtime): before the real call the recording is marked CLOSED
 * with its end_tsc; if the call fails it is marked RECORDING again and the program goes on
 * recording into the same file. The exec'd image, if it records too, finds a file of its
 * own pid at the name and writes "<name>.exec<N>" (format.h, "File names").
 * glibc's own exec functions call its internal execve, so every entry point is wrapped.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <unistd.h>

#include "record.h"

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);

#define MAX_LIST_ARGS 4096 /* execl* argument lists (beyond: E2BIG) */

#define WRAP(call)                                       \
    do {                                                 \
        perfgroup__rec_exec_begin();                     \
        int rc_ = (call);                                \
        int e_ = errno;                                  \
        perfgroup__rec_exec_failed();                    \
        errno = e_;                                      \
        return rc_;                                      \
    } while (0)

__attribute__((visibility("default"))) int execve(const char *path, char *const argv[],
                                                  char *const envp[]) {
    execve_fn real = (execve_fn)dlsym(RTLD_NEXT, "execve");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    WRAP(real(path, argv, envp));
}

__attribute__((visibility("default"))) int execvpe(const char *file, char *const argv[],
                                                   char *const envp[]) {
    execvpe_fn real = (execvpe_fn)dlsym(RTLD_NEXT, "execvpe");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    WRAP(real(file, argv, envp));
}

__attribute__((visibility("default"))) int execv(const char *path, char *const argv[]) {
    return execve(path, argv, environ);
}

__attribute__((visibility("default"))) int execvp(const char *file, char *const argv[]) {
    return execvpe(file, argv, environ);
}

/* Collect a NULL-terminated variadic list after arg0; envp too for execle. */
#define COLLECT(argv, arg0, ap, envp_out)                      \
    do {                                                       \
        argv[0] = (char *)arg0;                                \
        size_t n_ = 1;                                         \
        while ((argv[n_] = va_arg(ap, char *)) != NULL) {      \
            if (++n_ == MAX_LIST_ARGS) {                       \
                va_end(ap);                                    \
                errno = E2BIG;                                 \
                return -1;                                     \
            }                                                  \
        }                                                      \
        envp_out;                                              \
        va_end(ap);                                            \
    } while (0)

__attribute__((visibility("default"))) int execl(const char *path, const char *arg0, ...) {
    char *argv[MAX_LIST_ARGS];
    va_list ap;
    va_start(ap, arg0);
    COLLECT(argv, arg0, ap, (void)0);
    return execve(path, argv, environ);
}

__attribute__((visibility("default"))) int execlp(const char *file, const char *arg0, ...) {
    char *argv[MAX_LIST_ARGS];
    va_list ap;
    va_start(ap, arg0);
    COLLECT(argv, arg0, ap, (void)0);
    return execvpe(file, argv, environ);
}

__attribute__((visibility("default"))) int execle(const char *path, const char *arg0, ...) {
    char *argv[MAX_LIST_ARGS];
    char *const *envp;
    va_list ap;
    va_start(ap, arg0);
    COLLECT(argv, arg0, ap, envp = va_arg(ap, char *const *));
    return execve(path, argv, envp);
}
