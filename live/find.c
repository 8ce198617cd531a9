/* SPDX-License-Identifier: MIT */
/*
 * find.c — finding the recordings to follow (see live.h): a file named on the command line, a
 * directory's recordings, the one a PID maps (/proc/PID/maps), fork children's files as they
 * appear; each looked at with the owner rules before it is opened, a skip told once.
 */
#define _GNU_SOURCE
#include "live.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- finding recordings ------------------------------------------------------------- */

/* Reads the file header of the open fd if it is a recording: 0 = yes, 1 = not a regular
 * file, 2 = too short for a header, 3 = not a recording (another magic). Closes fd. */
static int header_of(int fd, struct pgf_file_header *h, struct stat *st)
{
    int rc = 0;
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode))
        rc = 1;
    else if ((uint64_t)st->st_size < sizeof(*h) || pread(fd, h, sizeof(*h), 0) != (ssize_t)sizeof(*h))
        rc = 2;
    else if (memcmp(h->magic, PGF_MAGIC, PGF_MAGIC_LEN) != 0)
        rc = 3;
    close(fd);
    return rc;
}

/* Reads the file header of path if it is a recording: 1 = yes, 0 = no (errno: why the open
 * failed, or 0). */
static int read_header(const char *path, struct pgf_file_header *h, struct stat *st)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return 0;
    int rc = header_of(fd, h, st);
    errno = 0;
    return rc == 0;
}

static struct pgl_file *find_file(struct pgl_set *s, dev_t dev, ino_t ino)
{
    for (size_t i = 0; i < s->nfiles; i++)
        if (s->files[i].dev == dev && s->files[i].ino == ino)
            return &s->files[i];
    return NULL;
}

/* The header's program name, as valid UTF-8 (NULL when out of memory). */
static char *program_of(const struct pgf_file_header *h)
{
    char prog[sizeof(h->program) + 1];
    memcpy(prog, h->program, sizeof(h->program));
    prog[sizeof(h->program)] = '\0';
    return pgc_utf8_dup(prog[0] ? prog : "program", 0);
}

static int add_file(struct pgl_set *s, const char *path, const struct pgf_file_header *h,
                    const struct stat *st, int dir, const char *name)
{
    if (find_file(s, st->st_dev, st->st_ino))
        return 0;
    struct pgl_file *nf = realloc(s->files, (s->nfiles + 1) * sizeof(*nf));
    if (!nf)
        return -1;
    s->files = nf;
    struct pgl_file *f = &s->files[s->nfiles];
    memset(f, 0, sizeof(*f));
    f->path = strdup(path);
    f->name = name ? strdup(name) : NULL;
    f->program = program_of(h);
    if (!f->path || !f->program || (name && !f->name)) {
        free(f->path);
        free(f->name);
        free(f->program);
        return -1;
    }
    f->dir = name ? dir : -1;
    f->uid = st->st_uid;
    f->dev = st->st_dev;
    f->ino = st->st_ino;
    f->pid = h->pid;
    f->ppid = h->ppid;
    f->start_monotonic_ns = h->start_monotonic_ns;
    f->state = PGL_LIVE;
    s->nfiles++;
    return 0;
}

/* A recording that is being created ("<name>.tmpXXXXXX", renamed into place when whole). */
static int is_temporary(const char *name)
{
    const char *t = strstr(name, ".tmp");
    return t && strlen(t) == 10;
}

static const struct pgl_file *followed_pid(const struct pgl_set *s, uint32_t pid)
{
    for (size_t i = 0; i < s->nfiles; i++)
        if (s->files[i].pid == pid)
            return &s->files[i];
    return NULL;
}

static const char *base_name(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

/* name is "<a followed file of this pid>.execN": the file of its exec()ed image. */
static int followed_exec(const struct pgl_set *s, const char *name, uint32_t pid)
{
    for (size_t i = 0; i < s->nfiles; i++) {
        const char *b = base_name(s->files[i].path);
        size_t n = strlen(b);
        if (s->files[i].pid == pid && !strncmp(name, b, n) && !strncmp(name + n, ".exec", 5))
            return 1;
    }
    return 0;
}

/* Process pid still runs and is the one that started a recording at start_ns
 * (CLOCK_MONOTONIC): it is not a later process that got the pid again (it started before
 * the recording did: /proc/PID/stat's start time, in CLOCK_BOOTTIME ticks, against the
 * file's start moved to BOOTTIME by today's offset; a suspend since can only make a reused
 * pid look older, never a live process look newer). 1 = yes, 0 = no, -1 = cannot tell (no
 * /proc, or no start time in the file): kill() says it exists. */
int pgl_writer_runs(uint32_t pid, int64_t start_ns)
{
    if (!pid || (kill((pid_t)pid, 0) != 0 && errno != EPERM))
        return 0;
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%" PRIu32 "/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0 || start_ns <= 0)
        return -1;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    unsigned long long ticks = 0;
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
                     "%*d %*d %*d %*d %llu", &ticks) != 1)
        return -1;
    long hz = sysconf(_SC_CLK_TCK);
    struct timespec mono, boot;
    if (hz <= 0 || clock_gettime(CLOCK_MONOTONIC, &mono) || clock_gettime(CLOCK_BOOTTIME, &boot))
        return -1;
    double offset = (double)(boot.tv_sec - mono.tv_sec) + (boot.tv_nsec - mono.tv_nsec) / 1e9;
    double started = (double)ticks / (double)hz;
    double recording = (double)start_ns / 1e9 + offset;
    return started <= recording + 1.0; /* ticks are coarse (1/CLK_TCK s) */
}

/* Why a file found in a directory is not followed (told once per file and reason). The
 * first ones are for good: the inode is never looked at again. */
enum skip {
    SKIP_NONE,
    SKIP_SYMLINK, SKIP_FIFO, SKIP_DEVICE, SKIP_SOCKET, SKIP_NOT_RECORDING,
    SKIP_RETRY, /* the ones below: looked at again when the file changes */
    SKIP_PERMISSION, SKIP_OTHER_USER, SKIP_WRITER_USER, SKIP_WRITER_GONE, SKIP_SHORT, SKIP_OPEN,
};

static const char *const skip_why[] = {
    [SKIP_SYMLINK] = "a symbolic link: not followed",
    [SKIP_FIFO] = "a FIFO: not opened",
    [SKIP_DEVICE] = "a device node: not opened",
    [SKIP_SOCKET] = "a socket: not opened",
    [SKIP_NOT_RECORDING] = "not a perfgroup recording",
    [SKIP_PERMISSION] = "permission denied (looked at again when it changes)",
    [SKIP_OTHER_USER] = "owned by another user (uid %u): this sidecar reads only its own "
                        "user's files (uid %u)",
    [SKIP_WRITER_USER] = "owned by uid %u, but the process it names as its writer (pid %u) "
                         "runs as another user",
    [SKIP_WRITER_GONE] = "owned by uid %u, and the process it names as its writer (pid %u) "
                         "is not running: its writer cannot be checked (as root, only files "
                         "root owns or whose writer runs as their owner are read)",
    [SKIP_SHORT] = "shorter than a recording's header (looked at again when it changes)",
    [SKIP_OPEN] = "cannot open: %s",
};

static uint64_t inode_key(size_t dir, ino_t ino)
{
    uint64_t k = (uint64_t)ino ^ ((uint64_t)dir << 56);
    return k == UINT64_MAX ? k - 1 : k;
}

static void tell_skip(struct pgl_set *s, size_t di, const char *name, uint64_t key,
                      enum skip why, unsigned a, unsigned b, const char *err)
{
    if (why > SKIP_RETRY) {
        uint32_t told;
        if (pgc_hash_get(&s->told, key, &told) && told == (uint32_t)why)
            return;
        pgc_hash_put(&s->told, key, (uint32_t)why);
    }
    char dir[512], file[768], msg[1600], reason[400];
    if (why == SKIP_OPEN)
        snprintf(reason, sizeof(reason), skip_why[why], err);
    else if (why == SKIP_OTHER_USER || why == SKIP_WRITER_USER || why == SKIP_WRITER_GONE)
        snprintf(reason, sizeof(reason), skip_why[why], a, b);
    else
        snprintf(reason, sizeof(reason), "%s", skip_why[why]);
    snprintf(msg, sizeof(msg), "%s/%s: %s", pgc_text_safe(dir, sizeof(dir), s->dirs[di].path),
             pgc_text_safe(file, sizeof(file), name), reason);
    s->skipped++;
    if (s->on_skip)
        s->on_skip(s->skip_ctx, msg);
    else
        fprintf(stderr, "perfgroup: skipped %s\n", msg);
}

/* The owner rule (live.h): 0 = the file may be read, else why not. */
static enum skip owner_rule(const struct pgl_set *s, const struct stat *st,
                            const struct pgf_file_header *h)
{
    uid_t me = geteuid();
    if (me != 0)
        return st->st_uid == me ? SKIP_NONE : SKIP_OTHER_USER;
    if (st->st_uid == 0)
        return SKIP_NONE;
    const struct pgl_file *parent = followed_pid(s, h->ppid);
    if (parent && parent->uid == st->st_uid)
        return SKIP_NONE; /* a fork child of a followed process, as its parent's user */
    if (pgl_writer_runs(h->pid, h->start_monotonic_ns) != 1)
        return SKIP_WRITER_GONE;
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%" PRIu32 "/status", h->pid);
    FILE *f = fopen(path, "re");
    unsigned ruid, euid, suid, fsuid;
    int n = 0;
    while (f && fgets(line, sizeof(line), f))
        if ((n = sscanf(line, "Uid: %u %u %u %u", &ruid, &euid, &suid, &fsuid)) == 4)
            break;
    if (f)
        fclose(f);
    if (n != 4)
        return SKIP_WRITER_GONE;
    /* the file is created with the writer's file-system uid (its effective one) */
    return st->st_uid == euid || st->st_uid == fsuid ? SKIP_NONE : SKIP_WRITER_USER;
}

static uint32_t change_stamp(const struct stat *st)
{
    uint64_t v = (uint64_t)st->st_ctim.tv_sec * 1000000007u ^ (uint64_t)st->st_ctim.tv_nsec ^
                 (uint64_t)st->st_size << 20 ^ (uint64_t)st->st_mode << 7 ^ st->st_uid;
    return (uint32_t)(v ^ v >> 32);
}

/* New recordings in directory di: all of them (a followed directory), or those whose parent
 * is a followed process (a fork child's file, whatever its name) or whose process is (the
 * file its exec()ed image writes). Skips are told in a followed directory, and for a
 * child's file; other files in a followed file's directory are not this sidecar's business. */
void pgl_scan_dir(struct pgl_set *s, size_t di)
{
    int dfd = dup(s->dirs[di].fd);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return;
    }
    rewinddir(d); /* the dup shares the offset of the scan before */
    int all = s->dirs[di].all;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *name = e->d_name;
        if (name[0] == '.' || is_temporary(name))
            continue;
        uint64_t key = inode_key(di, e->d_ino);
        uint32_t v;
        if (pgc_hash_get(&s->not_ours, key, &v))
            continue;
        struct stat st;
        if (fstatat(s->dirs[di].fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue; /* gone since readdir */
        if (find_file(s, st.st_dev, st.st_ino) || S_ISDIR(st.st_mode))
            continue;
        enum skip why = S_ISLNK(st.st_mode) ? SKIP_SYMLINK : S_ISFIFO(st.st_mode) ? SKIP_FIFO
                      : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? SKIP_DEVICE
                      : S_ISSOCK(st.st_mode) ? SKIP_SOCKET : SKIP_NONE;
        if (why == SKIP_NONE && !S_ISREG(st.st_mode))
            why = SKIP_DEVICE;
        if (why != SKIP_NONE) {
            pgc_hash_put(&s->not_ours, key, 1);
            if (all)
                tell_skip(s, di, name, key, why, 0, 0, NULL);
            continue;
        }
        uint32_t stamp = change_stamp(&st);
        if (pgc_hash_get(&s->retry, key, &v) && v == stamp)
            continue; /* skipped before, and not changed since */
        uid_t me = geteuid();
        if (me != 0 && st.st_uid != me) { /* not even opened */
            pgc_hash_put(&s->retry, key, stamp);
            if (all)
                tell_skip(s, di, name, key, SKIP_OTHER_USER, (unsigned)st.st_uid, (unsigned)me,
                          NULL);
            continue;
        }
        int fd = openat(s->dirs[di].fd, name,
                        O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
        if (fd < 0) {
            int err = errno;
            if (err == ELOOP) { /* a symlink now: put there since the fstatat */
                pgc_hash_put(&s->not_ours, key, 1);
                why = SKIP_SYMLINK;
            } else {
                pgc_hash_put(&s->retry, key, stamp);
                why = err == EACCES || err == EPERM ? SKIP_PERMISSION : SKIP_OPEN;
            }
            if (all)
                tell_skip(s, di, name, key, why, 0, 0, strerror(err));
            continue;
        }
        struct pgf_file_header h;
        struct stat fst;
        int rc = header_of(fd, &h, &fst);
        if (rc == 0 && (fst.st_dev != st.st_dev || fst.st_ino != st.st_ino))
            rc = 1; /* another file since the fstatat: looked at again next time */
        if (rc == 3) {
            pgc_hash_put(&s->not_ours, key, 1);
            if (all)
                tell_skip(s, di, name, key, SKIP_NOT_RECORDING, 0, 0, NULL);
            continue;
        }
        if (rc) {
            if (rc == 2) {
                pgc_hash_put(&s->retry, key, stamp);
                if (all)
                    tell_skip(s, di, name, key, SKIP_SHORT, 0, 0, NULL);
            }
            continue;
        }
        /* a child's file, or the file of a followed process's exec()ed image (.execN); a
         * recording of another process may become a child's later: not cached */
        if (!all && !followed_pid(s, h.ppid) && !followed_exec(s, name, h.pid))
            continue;
        if ((why = owner_rule(s, &fst, &h)) != SKIP_NONE) {
            pgc_hash_put(&s->retry, key, stamp);
            tell_skip(s, di, name, key, why, (unsigned)fst.st_uid,
                      why == SKIP_OTHER_USER ? (unsigned)geteuid() : h.pid, NULL);
            continue;
        }
        const char *dp = s->dirs[di].path;
        size_t n = strlen(dp) + strlen(name) + 2;
        char *path = malloc(n);
        if (path) {
            snprintf(path, n, "%s%s%s", dp, dp[strlen(dp) - 1] == '/' ? "" : "/", name);
            add_file(s, path, &h, &fst, (int)di, name);
            free(path);
        }
    }
    closedir(d);
}

/* The directory dir, followed whole (all) or for the children of the files in it. Returns
 * its index, or -1 with errno. */
static int add_dir(struct pgl_set *s, const char *dir, int all)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return -1;
    }
    for (size_t i = 0; i < s->ndirs; i++)
        if (s->dirs[i].dev == st.st_dev && s->dirs[i].ino == st.st_ino) {
            close(fd);
            s->dirs[i].all |= all;
            return (int)i;
        }
    struct pgl_dir *nd = realloc(s->dirs, (s->ndirs + 1) * sizeof(*nd));
    char *path = strdup(dir);
    if (!nd || !path) {
        if (nd)
            s->dirs = nd;
        free(path);
        close(fd);
        errno = ENOMEM;
        return -1;
    }
    s->dirs = nd;
    s->dirs[s->ndirs] = (struct pgl_dir){path, fd, st.st_dev, st.st_ino, all};
    return (int)s->ndirs++;
}

/* The directory of a followed file: its fork children's files appear there. */
static void add_dir_of(struct pgl_set *s, const char *path)
{
    if (!strncmp(path, "/proc/", 6))
        return; /* /proc/PID/map_files: no children there */
    char *dir = strdup(path);
    if (!dir)
        return;
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    add_dir(s, slash ? dir : ".", 0);
    free(dir);
}

/* A mapping's path as /proc/PID/maps shows it, turned into a name that opens the file.
 * The runtime creates its file with O_TMPFILE and links it into place once written, so the
 * kernel names the mapping after the unnamed inode, "<dir>/#<ino> (deleted)", for the life of
 * the process: the file is found again by its inode number in that directory (dev too). A
 * file really deleted is still readable through /proc/PID/map_files/<range>, the last resort.
 * Returns 0 with out filled, -1 if neither names the mapped inode. */
static int resolve_mapped(long pid, const char *range, const char *path, unsigned long long ino,
                          char *out, size_t outlen)
{
    struct stat st;
    if (stat(path, &st) == 0 && (unsigned long long)st.st_ino == ino) {
        snprintf(out, outlen, "%s", path);
        return 0;
    }
    static const char deleted[] = " (deleted)";
    size_t n = strlen(path), dn = sizeof(deleted) - 1;
    if (n > dn && !strcmp(path + n - dn, deleted)) {
        char dir[4096];
        const char *slash = strrchr(path, '/');
        size_t len = slash ? (size_t)(slash - path) : 0;
        if (len == 0)
            len = 1; /* "/" */
        if (len < sizeof(dir)) {
            memcpy(dir, path, len);
            dir[len] = '\0';
            DIR *d = opendir(dir);
            struct dirent *e;
            int found = 0;
            while (d && !found && (e = readdir(d))) {
                if ((unsigned long long)e->d_ino != ino || e->d_name[0] == '.')
                    continue;
                if (snprintf(out, outlen, "%s/%s", len == 1 && dir[0] == '/' ? "" : dir,
                             e->d_name) < (int)outlen &&
                    stat(out, &st) == 0 && (unsigned long long)st.st_ino == ino)
                    found = 1;
            }
            if (d)
                closedir(d);
            if (found)
                return 0;
        }
    }
    if (snprintf(out, outlen, "/proc/%ld/map_files/%s", pid, range) < (int)outlen &&
        stat(out, &st) == 0 && (unsigned long long)st.st_ino == ino)
        return 0;
    return -1;
}

/* The recording a running process maps (MAP_SHARED, read-write), from /proc/PID/maps. */
static int add_pid(struct pgl_set *s, long pid, char *msg, size_t msglen)
{
    char maps[64];
    snprintf(maps, sizeof(maps), "/proc/%ld/maps", pid);
    FILE *m = fopen(maps, "re");
    if (!m) {
        snprintf(msg, msglen, "pid %ld: cannot read %s: %s", pid, maps, strerror(errno));
        return -1;
    }
    char line[4608];
    int found = 0;
    while (fgets(line, sizeof(line), m)) {
        /* address perms offset dev inode path */
        char perms[8], range[64];
        unsigned long long ino;
        int at = 0;
        if (sscanf(line, "%63s %7s %*s %*s %llu %n", range, perms, &ino, &at) < 3 || !at ||
            !ino)
            continue;
        if (perms[3] != 's' || perms[1] != 'w')
            continue;
        char *mapped = line + at;
        mapped[strcspn(mapped, "\n")] = '\0';
        if (mapped[0] != '/')
            continue;
        char path[4096];
        struct stat st;
        struct pgf_file_header h;
        if (resolve_mapped(pid, range, mapped, ino, path, sizeof(path)) == 0 &&
            read_header(path, &h, &st) && h.pid == (uint32_t)pid) {
            if (add_file(s, path, &h, &st, -1, NULL) == 0) {
                found = 1;
                add_dir_of(s, path);
            }
        }
    }
    fclose(m);
    if (!found) {
        snprintf(msg, msglen, "pid %ld: no perfgroup recording mapped (is it recording? "
                 "PERFGROUP_OUTPUT)", pid);
        return -1;
    }
    return 0;
}

int pgl_set_add(struct pgl_set *s, const char *arg, char *msg, size_t msglen)
{
    struct stat st;
    if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
        int di = add_dir(s, arg, 1);
        if (di < 0) {
            snprintf(msg, msglen, "%s: cannot open the directory: %s", arg, strerror(errno));
            return -1;
        }
        pgl_scan_dir(s, (size_t)di);
        return 0;
    }
    struct pgf_file_header h;
    if (read_header(arg, &h, &st)) {
        if (add_file(s, arg, &h, &st, -1, NULL)) {
            snprintf(msg, msglen, "out of memory");
            return -1;
        }
        add_dir_of(s, arg);
        return 0;
    }
    int open_err = errno;
    char *end;
    errno = 0;
    long pid = strtol(arg, &end, 10);
    if (*arg && !*end && !errno && pid > 0 && pid <= 0x7fffffff)
        return add_pid(s, pid, msg, msglen);
    if (open_err)
        snprintf(msg, msglen, "%s: cannot open: %s", arg, strerror(open_err));
    else
        snprintf(msg, msglen, "%s: not a perfgroup recording", arg);
    return -1;
}
