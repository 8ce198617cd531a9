/* SPDX-License-Identifier: MIT */
/*
 * test_record_proc.c — the recorder across processes and environments (test_record.c runs
 * them by name: fork, exec, vfork, fork_lazy, notmp, symlink, perm, badenv; see there).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "perfgroup.h"
#include "readback.h"
#include "record.h"
#include "clock.h"
#include "rec_test.h"

/* ---- fork ---------------------------------------------------------------------------------- */
int test_fork(void) {
    char tmpl[300], parent[300], child[300];
    path_in(tmpl, sizeof tmpl, "fork.%p.pgm");
    CHECK_EQ(perfgroup_record_open(tmpl, PERFGROUP_RECORD_TRACE, 1 << 20, 4096), 0);
    define_some();
    struct perfgroup_rec_thread *w = perfgroup__rec_thread_start(0, 1, "main");
    write_intervals(w, 0, 1000);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        /* the same writer continues, into the child's own file */
        write_intervals(w, 5000, 300);
        perfgroup__rec_thread_end(w, 2);
        perfgroup_record_close();
        _exit(0);
    }
    write_intervals(w, 1000, 1000);
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    perfgroup__rec_thread_end(w, 3);
    CHECK_EQ(perfgroup_record_close(), 0);

    snprintf(parent, sizeof parent, "%s/fork.%d.pgm", dir, (int)getpid());
    snprintf(child, sizeof child, "%s/fork.%d.pgm", dir, (int)pid);
    struct readback r;
    readback(parent, &r);
    CHECK_EQ(r.error, 0);
    CHECK_EQ(r.hdr.pid, getpid());
    struct rb_thread *t = rb_thread(&r, 0);
    CHECK_EQ(t->intervals, 2000);
    CHECK_EQ(t->first, 0);
    CHECK_EQ(t->last, 1999);
    CHECK_EQ(t->gap, 0);

    readback(child, &r);
    CHECK_EQ(r.error, 0);
    CHECK_EQ(r.hdr.pid, pid);
    CHECK_EQ(r.hdr.ppid, getpid());
    CHECK_EQ(r.hdr.state, PGF_STATE_CLOSED);
    CHECK_EQ(r.process_pid, pid);
    CHECK_EQ(r.kinds[PGF_REC_GROUP], 3);  /* definitions replayed */
    CHECK_EQ(r.kinds[PGF_REC_SITE], 2);
    CHECK_EQ(r.kinds[PGF_REC_THREAD], 1);
    t = rb_thread(&r, 0);
    CHECK_EQ(t->intervals, 300);
    CHECK_EQ(t->first, 5000);
    CHECK_EQ(t->gap, 0);
    CHECK_EQ(t->thread_end, 1);
    return 0;
}

/* ---- exec ---------------------------------------------------------------------------------- */
/* Roles of this binary started with PERFGROUP_OUTPUT in the environment: the runtime's
 * start-up (or the explicit, idempotent perfgroup__rec_init) opens the recording. */
int exec_parent(const char *self) {
    perfgroup__rec_init();
    if (perfgroup__rec_mode != PGF_MODE_TRACE)
        return 10;
    struct perfgroup_rec_thread *w = perfgroup__rec_thread_start(0, 1, "before-exec");
    write_intervals(w, 0, 100);
    /* a failing exec leaves the recording open and usable */
    execl("/nonexistent/perfgroup-test", "x", (char *)NULL);
    write_intervals(w, 100, 100);
    execl(self, self, "exec-child", (char *)NULL);
    return 11;
}

int exec_child(void) {
    perfgroup__rec_init();
    if (perfgroup__rec_mode != PGF_MODE_TRACE)
        return 12;
    struct perfgroup_rec_thread *w = perfgroup__rec_thread_start(0, 1, "after-exec");
    write_intervals(w, 0, 10);
    perfgroup__rec_thread_end(w, 1);
    perfgroup__rec_close();
    return 0;
}

static int run_self(const char *self, const char *role, const char *out, int as_nobody,
                    const char *errfile) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (errfile) {
            int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            dup2(fd, 2);
        }
        if (as_nobody && getuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(5);
        setenv("PERFGROUP_OUTPUT", out, 1);
        setenv("PERFGROUP_MODE", "trace", 0); /* a test may have set its own */
        setenv("PERFGROUP_BUFFER", "256K", 0);
        setenv("PERFGROUP_CHUNK", "4K", 0);
        execl(self, self, role, (char *)NULL);
        _exit(6);
    }
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 0);
    return (int)pid;
}

int test_exec(const char *self) {
    char tmpl[300], first[300], second[300];
    path_in(tmpl, sizeof tmpl, "exec.%p.pgm");
    int pid = run_self(self, "exec-parent", tmpl, 0, NULL);
    snprintf(first, sizeof first, "%s/exec.%d.pgm", dir, pid);
    snprintf(second, sizeof second, "%s/exec.%d.pgm.exec1", dir, pid);
    struct readback r;
    readback(first, &r);
    CHECK_EQ(r.error, 0);
    CHECK_EQ(r.hdr.state, PGF_STATE_CLOSED);
    CHECK(r.hdr.end_tsc != 0);
    CHECK_EQ(r.warnings, 0);
    CHECK_EQ(rb_thread(&r, 0)->intervals, 200);
    CHECK_EQ(rb_thread(&r, 0)->gap, 0);
    readback(second, &r);
    CHECK_EQ(r.error, 0);
    CHECK_EQ(r.hdr.state, PGF_STATE_CLOSED);
    CHECK_EQ(r.hdr.pid, pid);
    CHECK_EQ(rb_thread(&r, 0)->intervals, 10);
    CHECK_EQ(rb_thread(&r, 0)->thread_end, 1);

    /* A finished recording of an earlier process that had this pid (pids are reused) is not
     * this process's before an exec: its name is replaced, nothing goes to ".exec1". The
     * exec'd image's file above, given this pid and begun an hour before this process. */
    char stale[300], beside[310];
    path_in(tmpl, sizeof tmpl, "reused.%p.pgm");
    snprintf(stale, sizeof stale, "%s/reused.%d.pgm", dir, (int)getpid());
    snprintf(beside, sizeof beside, "%s.exec1", stale);
    struct pgf_file_header h;
    int fd = open(second, O_RDONLY);
    CHECK(fd >= 0);
    CHECK_EQ(pread(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
    close(fd);
    struct timespec mono, real;
    clock_gettime(CLOCK_MONOTONIC, &mono);
    clock_gettime(CLOCK_REALTIME, &real);
    h.pid = (uint32_t)getpid();
    h.start_monotonic_ns = (int64_t)mono.tv_sec * 1000000000 + mono.tv_nsec - 3600 * 1000000000ll;
    h.start_realtime_ns = (int64_t)real.tv_sec * 1000000000 + real.tv_nsec - 3600 * 1000000000ll;
    fd = open(stale, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, &h, sizeof h), (ssize_t)sizeof h);
    close(fd);
    CHECK_EQ(perfgroup_record_open(tmpl, PERFGROUP_RECORD_STATS, 1 << 20, 4096), 0);
    CHECK_EQ(perfgroup_record_close(), 0);
    CHECK(access(beside, F_OK) != 0);
    readback(stale, &r);
    CHECK_EQ(r.error, 0);
    CHECK_EQ(r.hdr.pid, (uint32_t)getpid());
    CHECK(r.hdr.start_realtime_ns > h.start_realtime_ns + 3000 * 1000000000ll);
    return 0;
}

/* ---- vfork, posix_spawn -------------------------------------------------------------------- */
/* A vfork child's exec (through the wrappers) and a posix_spawn leave the parent's file
 * RECORDING; the parent's own close marks it CLOSED. */
static unsigned file_state(const char *path) {
    struct pgf_file_header h;
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    CHECK_EQ(pread(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
    close(fd);
    return h.state;
}

int test_vfork(void) {
    char path[300];
    path_in(path, sizeof path, "vfork.pgm");
    CHECK_EQ(perfgroup_record_open(path, PERFGROUP_RECORD_STATS, 1 << 20, 4096), 0);
    CHECK_EQ(file_state(path), PGF_STATE_RECORDING);
    for (int i = 0; i < 2; i++) { /* an exec that works, and one that fails */
        const char *prog = i == 0 ? "/bin/true" : "/nonexistent/perfgroup-test";
        pid_t pid = vfork();
        if (pid == 0) {
            execl(prog, "true", (char *)NULL);
            _exit(127);
        }
        CHECK(pid > 0);
        int st;
        CHECK_EQ(waitpid(pid, &st, 0), pid);
        CHECK(WIFEXITED(st));
        CHECK_EQ(WEXITSTATUS(st), i == 0 ? 0 : 127);
        CHECK_EQ(file_state(path), PGF_STATE_RECORDING);
    }
    char *argv[] = {"true", NULL};
    pid_t pid;
    CHECK_EQ(posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ), 0);
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK_EQ(file_state(path), PGF_STATE_RECORDING);
    CHECK_EQ(perfgroup_record_close(), 0);
    CHECK_EQ(file_state(path), PGF_STATE_CLOSED);
    return 0;
}

/* ---- fork children make files only when they record; files grow as written --------------- */
static int count_files(const char *prefix, char *one, size_t cap) {
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            n++;
            snprintf(one, cap, "%s/%s", dir, e->d_name);
        }
    closedir(d);
    return n;
}

int test_fork_lazy(void) {
    char tmpl[300], one[600];
    path_in(tmpl, sizeof tmpl, "lazy.%p.pgm");
    CHECK_EQ(perfgroup_record_open(tmpl, PERFGROUP_RECORD_STATS, 64u << 20, 65536), 0);
    CHECK_EQ(perfgroup_marker("parent", NULL), 0);
    for (int i = 0; i < 200; i++) { /* children that exec or leave: no file, no blocks */
        pid_t pid = fork();
        if (pid == 0) {
            if (i & 1)
                execl("/bin/true", "true", (char *)NULL);
            _exit(0);
        }
        CHECK(pid > 0);
        int st;
        CHECK_EQ(waitpid(pid, &st, 0), pid);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    CHECK_EQ(count_files("lazy.", one, sizeof one), 1);
    pid_t pid = fork(); /* a child that records: its file appears at its first record */
    if (pid == 0)
        _exit(perfgroup_marker("child", NULL) == 0 ? 0 : 1);
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_EQ(count_files("lazy.", one, sizeof one), 2);
    char child[300];
    snprintf(child, sizeof child, "%s/lazy.%d.pgm", dir, (int)pid);
    struct readback r;
    readback(child, &r);
    CHECK_EQ(r.error, 0);
    CHECK_EQ(r.hdr.pid, (uint32_t)pid);
    CHECK_EQ(r.kinds[PGF_REC_MARKER], 1);
    /* 64 MiB of buffer, a few chunks written: the file's blocks are those chunks' */
    struct stat sb;
    CHECK_EQ(stat(child, &sb), 0);
    CHECK(sb.st_size > (off_t)(63u << 20)); /* the header and 1023 chunks */
    CHECK((uint64_t)sb.st_blocks * 512 <= (1u << 20));
    CHECK_EQ(perfgroup_record_close(), 0);
    return 0;
}


/* ---- no temporary file after a crash at any moment --------------------------------------- */
int notmp_child(void) {
    perfgroup__rec_init();
    for (int i = 0; i < 1000; i++) /* killed long before */
        pause();
    return 0;
}

static int count_tmps(char *one, size_t cap) {
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strstr(e->d_name, ".tmp")) {
            n++;
            snprintf(one, cap, "%s", e->d_name);
        }
    closedir(d);
    return n;
}

int test_notmp(const char *self) {
    char tmpl[300], one[600] = "";
    path_in(tmpl, sizeof tmpl, "notmp.%p.pgm");
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    for (int i = 0; i < 100; i++) {
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            setenv("PERFGROUP_OUTPUT", tmpl, 1);
            setenv("PERFGROUP_MODE", "trace", 1);
            setenv("PERFGROUP_BUFFER", "64M", 1);
            execl(self, self, "notmp-child", (char *)NULL);
            _exit(6);
        }
        seed = seed * 1103515245u + 12345u;
        struct timespec ts = { 0, (long)((seed >> 8) % 5000) * 1000 }; /* 0-5 ms */
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int st;
        CHECK_EQ(waitpid(pid, &st, 0), pid);
        int tmps = count_tmps(one, sizeof one);
        if (tmps)
            fprintf(stderr, "notmp: kill %d left %s\n", i, one);
        CHECK_EQ(tmps, 0);
    }
    fprintf(stderr, "notmp: 100 kills, %d recordings reached their name\n",
            count_files("notmp.", one, sizeof one));
    return 0;
}



/* ---- symlink ------------------------------------------------------------------------------- */
int test_symlink(void) {
    char victim[300], path[300];
    path_in(victim, sizeof victim, "victim");
    path_in(path, sizeof path, "out.pgm");
    FILE *f = fopen(victim, "w");
    CHECK(f != NULL);
    fputs("precious\n", f);
    fclose(f);
    CHECK_EQ(symlink(victim, path), 0);
    CHECK_EQ(perfgroup_record_open(path, PERFGROUP_RECORD_STATS, 1 << 20, 4096), 0);
    CHECK_EQ(perfgroup_record_close(), 0);
    struct stat st;
    CHECK_EQ(lstat(path, &st), 0);
    CHECK(S_ISREG(st.st_mode));               /* the link was replaced by the recording */
    CHECK_EQ(st.st_mode & 0777, 0600);
    CHECK_EQ(stat(victim, &st), 0);
    CHECK_EQ(st.st_size, 9);                  /* and its target untouched */
    struct readback r;
    readback(path, &r);
    CHECK_EQ(r.error, 0);
    /* a symlink in place of the directory's temporary name cannot be used either: the
     * temporary file is made with O_EXCL by mkostemp */
    return 0;
}

/* ---- perm ---------------------------------------------------------------------------------- */
int perm_child(void) {
    perfgroup__rec_init();
    perfgroup__rec_init(); /* idempotent: no second message */
    if (perfgroup__rec_mode != 0)
        return 20;
    /* the program runs on: recording calls are harmless */
    struct perfgroup_rec_thread *w = perfgroup__rec_thread_start(0, 1, "main");
    write_intervals(w, 0, 1000);
    perfgroup__rec_thread_end(w, 1);
    if (perfgroup_marker("m", "t") != -ENOENT)
        return 21;
    perfgroup__rec_close();
    return 0;
}

/* A copy of this (static) program where nobody can run it: the build tree may lie under a
 * directory only its owner may enter (a clone in /root, mode 0700). */
static void copy_exe(const char *from, const char *to) {
    int in = open(from, O_RDONLY), o = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    CHECK(in >= 0 && o >= 0);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        CHECK_EQ(write(o, buf, (size_t)n), n);
    CHECK_EQ(n, 0);
    close(in);
    CHECK_EQ(close(o), 0);
    CHECK_EQ(chmod(to, 0755), 0);
}

int test_perm(const char *self) {
    char sub[300], out[320], errf[320], exe[320];
    path_in(sub, sizeof sub, "ro");
    CHECK_EQ(mkdir(sub, 0755), 0);
    if (getuid() != 0)
        CHECK_EQ(chmod(sub, 0555), 0);
    CHECK_EQ(chmod(dir, 0755), 0); /* nobody may look inside, not write */
    snprintf(out, sizeof out, "%s/x.%%p.pgm", sub);
    path_in(errf, sizeof errf, "stderr.txt");
    path_in(exe, sizeof exe, "self");
    copy_exe(self, exe);
    int pid = run_self(exe, "perm-child", out, 1, errf);
    chmod(sub, 0755);
    FILE *f = fopen(errf, "r");
    CHECK(f != NULL);
    char line[512], want[400];
    snprintf(want, sizeof want, "perfgroup: cannot record to %s/x.%d.pgm: Permission denied", sub,
             pid);
    int lines = 0;
    while (fgets(line, sizeof line, f)) {
        lines++;
        fputs(line, stdout);
        CHECK(strstr(line, want) == line);
    }
    fclose(f);
    CHECK_EQ(lines, 1);
    return 0;
}

/* ---- badenv -------------------------------------------------------------------------------- */
int test_badenv(const char *self) {
    static const char *cases[][4] = {
        /* variable, value, expected message */
        { "PERFGROUP_MODE", "bogus",
          "perfgroup: PERFGROUP_MODE=bogus: expected stats or trace; running unrecorded" },
        { "PERFGROUP_BUFFER", "12Q",
          "perfgroup: PERFGROUP_BUFFER=12Q: expected a size like 256M; running unrecorded" },
        { "PERFGROUP_CHUNK", "3000",
          "perfgroup: PERFGROUP_CHUNK=3000, PERFGROUP_BUFFER=256K: the chunk must be a power "
          "of 2 from 4K to 16M and the buffer hold 4K + 2 chunks; running unrecorded" },
        { "PERFGROUP_BUFFER", "8K",
          "perfgroup: PERFGROUP_CHUNK=4K, PERFGROUP_BUFFER=8K: the chunk must be a power of 2 "
          "from 4K to 16M and the buffer hold 4K + 2 chunks; running unrecorded" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[300], errf[300], line[512];
        snprintf(out, sizeof out, "%s/bad%zu.pgm", dir, i);
        path_in(errf, sizeof errf, "stderr.txt");
        setenv(cases[i][0], cases[i][1], 1);
        run_self(self, "perm-child", out, 0, errf); /* perm-child: expects no recording */
        unsetenv(cases[i][0]);
        FILE *f = fopen(errf, "r");
        CHECK(f != NULL);
        int lines = 0;
        while (fgets(line, sizeof line, f)) {
            lines++;
            fputs(line, stdout);
            CHECK(strstr(line, cases[i][2]) == line);
        }
        fclose(f);
        CHECK_EQ(lines, 1);
        CHECK(access(out, F_OK) != 0);
    }
    return 0;
}

