/* SPDX-License-Identifier: MIT */
/*
 * runtime/rec_file.c — the recording's file: its name (PERFGROUP_OUTPUT's %p, %t, a running
 * process's file never overwritten), creating, mapping and linking it into place, closing
 * it, fork (the child records into a file of its own, made at its first record), the
 * environment (PERFGROUP_OUTPUT, _MODE, _BUFFER, _CHUNK, _TOTALS), exec (the file marked
 * closed, reopened if the exec failed) and the public perfgroup_record_open / _close.
 */
#define _GNU_SOURCE
#include "rec_state.h"

/* ---- opening and closing --------------------------------------------------------------- */

static void report(const char *what, const char *path, int err) {
    if (recorder.reported)
        return;
    recorder.reported = 1;
    fprintf(stderr, "perfgroup: %s%s%s: %s; running unrecorded\n", what, path ? " " : "",
            path ? path : "", strerror(err));
}

/* Expand %p and %%; add ".<pid>" when force_pid and no %p. */
static int expand(const char *tmpl, int force_pid, char *out, size_t cap) {
    size_t o = 0;
    int had_p = 0;
    char pid[16];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    for (const char *s = tmpl; *s; s++) {
        const char *piece = NULL;
        char one[2] = { *s, 0 };
        if (s[0] == '%' && s[1] == 'p') {
            piece = pid;
            had_p = 1;
            s++;
        } else if (s[0] == '%' && s[1] == '%') {
            piece = "%";
            s++;
        } else {
            piece = one;
        }
        size_t n = strlen(piece);
        if (o + n >= cap)
            return -ENAMETOOLONG;
        memcpy(out + o, piece, n);
        o += n;
    }
    out[o] = 0;
    if (force_pid && !had_p) {
        if (o + 1 + strlen(pid) >= cap)
            return -ENAMETOOLONG;
        out[o++] = '.';
        strcpy(out + o, pid);
    }
    return 0;
}

/* How long this process has existed, in ns: /proc/self/stat's start time (field 22, clock
 * ticks since boot), which an exec keeps; -1 if unknown. */
static int64_t process_age_ns(void) {
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[1024];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the name in parentheses may hold anything */
    long hz = sysconf(_SC_CLK_TCK);
    if (!p || hz <= 0)
        return -1;
    int field = 2;
    for (p++; *p && field < 22; p++)
        if (*p == ' ' && ++field == 22) {
            char *end;
            unsigned long long start = strtoull(p + 1, &end, 10);
            if (end == p + 1)
                return -1;
            int64_t age = ns_of(CLOCK_BOOTTIME) - (int64_t)(start * (1000000000ull / (unsigned long)hz));
            return age < 0 ? 0 : age;
        }
    return -1;
}

/*
 * A file at path recorded by this process before an exec(): we are its exec()ed image, and
 * record beside it (".exec<N>"). Its pid is ours and it began after this process did — a
 * file of an earlier process that had our pid (pids are reused: 32768 of them by default)
 * began before, and is replaced as any other finished recording is. Both its monotonic and
 * its realtime start are compared (a file of an earlier boot has an unrelated monotonic
 * start), with a second of slack (the start time's clock ticks, the clocks' reads).
 */
static int ours_before_exec(const char *path) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return 0;
    struct pgf_file_header h;
    ssize_t n = pread(fd, &h, 72, 0);
    close(fd);
    if (n != 72 || memcmp(h.magic, PGF_MAGIC, PGF_MAGIC_LEN) != 0 || h.pid != (uint32_t)getpid())
        return 0;
    int64_t age = process_age_ns();
    if (age < 0)
        return 1; /* no /proc: the pid alone */
    const int64_t slack = 1000000000;
    return h.start_monotonic_ns >= ns_of(CLOCK_MONOTONIC) - age - slack &&
           h.start_realtime_ns >= ns_of(CLOCK_REALTIME) - age - slack;
}

/*
 * The file is built unnamed and appears at its name whole (header, definitions), so no
 * crash at any moment leaves a temporary file: O_TMPFILE in the target's directory, linked
 * into place once written. Where the file system has no O_TMPFILE, a named temporary
 * "<path>.tmp<pid>.XXXXXX" is renamed into place instead, and a later start removes the
 * temporaries of processes that no longer exist (a crash between create and rename).
 * A symlink planted at the path is replaced, never followed (linkat and rename both make
 * a new directory entry).
 */
/* path's directory ("." or "/" when it has none), and its last component in *base. */
static const char *split_dir(const char *path, char buf[PATH_MAX], const char **base) {
    snprintf(buf, PATH_MAX, "%s", path);
    char *slash = strrchr(buf, '/');
    *base = path + (slash ? slash + 1 - buf : 0);
    if (!slash)
        return ".";
    if (slash == buf)
        return "/";
    *slash = 0;
    return buf;
}

static void unlink_stale_tmps(const char *path) {
    char dirbuf[PATH_MAX];
    const char *base, *dname = split_dir(path, dirbuf, &base);
    char prefix[NAME_MAX + 8];
    int plen = snprintf(prefix, sizeof prefix, "%s.tmp", base);
    if (plen <= 0 || (size_t)plen >= sizeof prefix)
        return;
    int dfd = open(dname, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, (size_t)plen) != 0)
            continue;
        char *end;
        long pid = strtol(e->d_name + plen, &end, 10);
        if (pid <= 0 || *end != '.' || strlen(end) != 7)
            continue;
        struct stat st;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH ||
            fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid())
            continue;
        unlinkat(dfd, e->d_name, 0);
    }
    closedir(d);
}

static int create_unnamed(const char *path, char *tmp, size_t tmpcap) {
    char dirbuf[PATH_MAX];
    const char *base, *dname = split_dir(path, dirbuf, &base);
    int fd = open(dname, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
        return -errno;
    unlink_stale_tmps(path);
    if ((size_t)snprintf(tmp, tmpcap, "%s.tmp%d.XXXXXX", path, (int)getpid()) >= tmpcap) {
        tmp[0] = 0;
        return -ENAMETOOLONG;
    }
    fd = mkostemp(tmp, O_CLOEXEC); /* O_EXCL, mode 0600: never through a symlink */
    if (fd < 0) {
        tmp[0] = 0;
        return -errno;
    }
    return fd;
}

/* A recording another live process is writing at path: its header names a pid other than
 * ours, still RECORDING, and that pid exists. A recording whose writer has died (crash,
 * SIGKILL) or closed is not held: a new run replaces it, as before. */
static int held_by_other(const char *path) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return 0;
    struct stat st;
    struct pgf_file_header h;
    int held = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
               pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
               memcmp(h.magic, PGF_MAGIC, PGF_MAGIC_LEN) == 0 &&
               h.state == PGF_STATE_RECORDING && h.pid != 0 && h.pid != (uint32_t)getpid() &&
               h.pid <= INT32_MAX && (kill((pid_t)h.pid, 0) == 0 || errno == EPERM);
    close(fd);
    return held;
}

/* The file into place at path. -EBUSY: a live process records there (held_by_other); what
 * is there otherwise (a file, or a symlink: the link itself goes) is replaced. */
static int link_into_place(int fd, char *tmp, const char *path) {
    if (tmp[0]) {
        if (held_by_other(path))
            return -EBUSY;
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) != 0) {
            if (errno == EEXIST && held_by_other(path))
                return -EBUSY;
            if (errno != EEXIST && errno != EINVAL && errno != ENOSYS)
                return -errno;
            if (rename(tmp, path) != 0) /* no RENAME_NOREPLACE here, or a stale file */
                return -errno;
        }
        tmp[0] = 0;
        return 0;
    }
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    for (int tries = 0; tries < 8; tries++) {
        if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0)
            return 0;
        if (errno == ENOENT && linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH) == 0)
            return 0; /* no /proc: needs CAP_DAC_READ_SEARCH */
        if (errno != EEXIST)
            return -errno;
        if (held_by_other(path))
            return -EBUSY;
        if (unlink(path) != 0 && errno != ENOENT)
            return -errno;
    }
    return -EEXIST;
}

static int open_locked(const char *tmpl, unsigned mode, uint64_t buffer, uint32_t chunk,
                       int child, char *path, size_t pathcap) {
    if (mode != PGF_MODE_STATS && mode != PGF_MODE_TRACE)
        return -EINVAL;
    if (chunk < MIN_CHUNK || chunk > MAX_CHUNK || (chunk & (chunk - 1)))
        return -EINVAL;
    if (buffer < PGF_HEADER_SIZE + 2ull * chunk)
        return -EINVAL;
    uint64_t count = (buffer - PGF_HEADER_SIZE) / chunk;
    if (count > (1u << 24))
        count = 1u << 24;
    int rc = expand(tmpl, child, path, pathcap);
    if (rc)
        return rc;
    if (ours_before_exec(path)) {
        size_t n = strlen(path);
        for (int i = 1;; i++) {
            if (i > 99 || n + 12 >= pathcap)
                return -EEXIST;
            snprintf(path + n, pathcap - n, ".exec%d", i);
            if (access(path, F_OK) != 0)
                break;
        }
    }
    char tmp[PATH_MAX] = "";
    int fd = create_unnamed(path, tmp, sizeof tmp);
    if (fd < 0)
        return fd;
    uint32_t ntot = recorder.tot_slots ? recorder.tot_slots : DEFAULT_TOTALS;
    size_t tot_off = PGF_HEADER_SIZE + (size_t)count * chunk;
    size_t size = tot_off + (size_t)ntot * sizeof(struct pgf_totals_slot);
    uint8_t *map = MAP_FAILED;
    uint32_t *tot_free = NULL;
    uint32_t *free_stack = NULL;
    struct heap_ent *heap = NULL;
    struct writer **owner = NULL;
    struct tdef_range *tdr = NULL;
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)size) != 0) {
        rc = -errno;
        goto fail;
    }
    /* the header's blocks now, a chunk's when it is first taken (take_chunk): the file
     * grows as it is written, and a full disk is never a SIGBUS in the host */
    rc = posix_fallocate(fd, 0, PGF_HEADER_SIZE);
    if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL) {
        rc = -rc;
        goto fail;
    }
    map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    /* no readahead on its faults: a fault would read the chunk's neighbourhood into the page
     * cache, and the next read fault there map all of it (fault-around): every thread's
     * first chunk would be resident whole, when it is faulted in as it fills (rec_buffer.c) */
    if (map != MAP_FAILED)
        (void)madvise(map, size, MADV_RANDOM);
    free_stack = malloc(count * sizeof *free_stack);
    heap = malloc(count * sizeof *heap);
    owner = calloc(count, sizeof *owner);
    tdr = calloc(count, sizeof *tdr);
    tot_free = malloc(ntot * sizeof *tot_free);
    if (map == MAP_FAILED || !free_stack || !heap || !owner || !tdr || !tot_free) {
        rc = map == MAP_FAILED ? -errno : -ENOMEM;
        goto fail;
    }
    struct pgf_file_header *h = (struct pgf_file_header *)map;
    memcpy(h->magic, PGF_MAGIC, PGF_MAGIC_LEN);
    h->version = PERFGROUP_FORMAT_VERSION;
    h->header_size = PGF_HEADER_SIZE;
    h->chunk_size = chunk;
    h->chunk_count = (uint32_t)count;
    h->chunks_offset = PGF_HEADER_SIZE;
    h->pid = (uint32_t)getpid();
    h->ppid = (uint32_t)getppid();
    h->clock = perfgroup__clock_kind;
    h->cpu_time = perfgroup__rseq_cs_off >= 0 ? PGF_CPU_TIME_MEASURED : PGF_CPU_TIME_ESTIMATED;
    h->tsc_scope = perfgroup__tsc_scope;
    h->mode = mode;
    h->state = PGF_STATE_RECORDING;
    h->start_realtime_ns = ns_of(CLOCK_REALTIME);
    h->start_monotonic_ns = ns_of(CLOCK_MONOTONIC);
    h->start_tsc = now_tsc();
    h->tsc_hz = estimate_hz();
    h->next_seq = 1;
    snprintf(h->program, sizeof h->program, "%s", program_invocation_short_name);
    h->totals_offset = tot_off;
    h->totals_slot_size = (uint32_t)sizeof(struct pgf_totals_slot);
    h->totals_count = ntot;

    recorder.fd = fd;
    recorder.map = map;
    recorder.map_size = size;
    recorder.hdr = h;
    recorder.chunk_size = chunk;
    recorder.chunk_count = (uint32_t)count;
    recorder.free_stack = free_stack;
    recorder.nfree = (uint32_t)count;
    for (uint32_t i = 0; i < count; i++)
        free_stack[i] = (uint32_t)(count - 1 - i);
    recorder.heap = heap;
    recorder.nheap = 0;
    recorder.want_now = recorder.want_peak = 0; /* the writers ask again as they attach */
    recorder.owner = owner;
    recorder.tdr = tdr;
    recorder.ntdefs = 0;
    tdr = NULL;
    recorder.tot = (struct pgf_totals_slot *)(map + tot_off);
    recorder.tot_count = ntot;
    recorder.tot_used = recorder.tot_nfree = 0;
    recorder.tot_free = tot_free;
    recorder.tot_alloc_end = tot_off;
    if (recorder.ended_row)
        memset(recorder.ended_row, 0, recorder.ended_cap * sizeof *recorder.ended_row);
    __atomic_fetch_add(&recorder.gen, 1, __ATOMIC_RELAXED);
    recorder.defs.is_defs = 1;
    perfgroup__rec_attach(&recorder.defs);
    recorder.tdefs.is_defs = 1;
    perfgroup__rec_attach(&recorder.tdefs);
    perfgroup__rec_process_def();
    perfgroup__rec_replay_log();
    recorder.slots = NULL, recorder.nslots = 0; /* taken at the first slot written */
    for (struct writer *w = recorder.live; w; w = w->next)
        __atomic_store_n(&w->hot.end, NULL, __ATOMIC_RELAXED); /* re-attach on next write */
    rc = link_into_place(fd, tmp, path);
    if (rc == -EBUSY) {
        /* Two processes given one PERFGROUP_OUTPUT without %p (two instances of a program, a
         * wrapper script): the later one records beside the earlier, never over it. */
        char taken[PATH_MAX];
        snprintf(taken, sizeof taken, "%s", path);
        size_t n = strlen(path);
        if ((size_t)snprintf(path + n, pathcap - n, ".%d", (int)getpid()) >= pathcap - n) {
            path[n] = 0;
            rc = -ENAMETOOLONG;
        } else {
            rc = link_into_place(fd, tmp, path);
            if (rc == 0)
                fprintf(stderr, "perfgroup: %s is being recorded by another running process; "
                        "recording this one (pid %d) to %s\n", taken, (int)getpid(), path);
        }
    }
    if (rc) {
        recorder.hdr = NULL;
        recorder.fd = -1;
        recorder.tot = NULL;
        recorder.tot_free = NULL;
        goto fail;
    }
    __atomic_store_n(&perfgroup__rec_mode, (int)mode, __ATOMIC_RELAXED);
    return 0;
fail:
    if (map != MAP_FAILED)
        munmap(map, size);
    free(free_stack);
    free(heap);
    free(owner);
    free(tdr);
    free(tot_free);
    close(fd);
    if (tmp[0])
        unlink(tmp);
    return rc;
}

/* Mark the file closed (end_tsc, totals) and detach every writer. recorder.mu held. */
/* The open file's descriptor and bookkeeping let go (not its mapping). recorder.mu held. */
static void forget_file_locked(void) {
    close(recorder.fd);
    recorder.fd = -1;
    recorder.hdr = NULL;
    recorder.slots = NULL;
    recorder.nslots = 0;
    free(recorder.free_stack);
    free(recorder.heap);
    free(recorder.owner);
    free(recorder.tdr);
    free(recorder.tot_free);
    recorder.tot = NULL;
    recorder.tot_free = NULL;
    recorder.tot_count = recorder.tot_used = recorder.tot_nfree = 0;
    recorder.free_stack = NULL;
    recorder.heap = NULL;
    recorder.owner = NULL;
    recorder.tdr = NULL;
}

static void close_locked(void) {
    if (!recorder.hdr && recorder.child_pending) { /* a fork child that never recorded: no file at all */
        recorder.child_pending = 0;
        __atomic_store_n(&perfgroup__rec_mode, 0, __ATOMIC_RELAXED);
        __atomic_fetch_add(&recorder.gen, 1, __ATOMIC_RELAXED);
    }
    if (!recorder.hdr)
        return;
    __atomic_store_n(&perfgroup__rec_mode, 0, __ATOMIC_RELAXED);
    for (struct writer *w = recorder.live; w; w = w->next)
        __atomic_store_n(&w->hot.end, NULL, __ATOMIC_RELAXED);
    perfgroup__rec_finish_chunk(&recorder.defs);
    perfgroup__rec_finish_chunk(&recorder.tdefs);
    uint64_t lost = recorder.threads_undefined + recorder.threads_starved;
    if (lost > recorder.warned_threads) { /* their records are in header.records_dropped */
        /* a buffer that holds the most data chunks the threads asked for at once
         * (want_peak: one for a thread that has not filled its first, two for one that has,
         * or found none, rec_buffer.c want()); every definition (also those that found no
         * room: defs_need); the thread definitions of the most threads at once; and the
         * open events' chunk */
        uint64_t room = recorder.chunk_size - PGF_CHUNK_HEADER_SIZE;
        uint64_t tdefs = (recorder.peak_live * (uint64_t)THREAD_DEF_MAX + room - 1) / room;
        uint64_t need = PGF_HEADER_SIZE + ((uint64_t)recorder.want_peak + recorder.defs_need +
                                           (tdefs ? tdefs : 1) + 1) * recorder.chunk_size;
        fprintf(stderr, "perfgroup: %llu threads found no room in the buffer (%llu for their "
                "definition, %llu for a chunk): their records were dropped (their whole-run "
                "totals are kept); PERFGROUP_BUFFER=%lluK would have held a chunk for each of "
                "the %u threads at once\n", (unsigned long long)lost,
                (unsigned long long)recorder.threads_undefined, (unsigned long long)recorder.threads_starved,
                (unsigned long long)((need + 1023) / 1024), recorder.peak_live);
        recorder.warned_threads = lost;
    }
    uint64_t hz = estimate_hz();
    if (hz)
        __atomic_store_n(&recorder.hdr->tsc_hz, hz, __ATOMIC_RELAXED);
    perfgroup__rec_header_counts(recorder.hdr);
    recorder.hdr->end_tsc = now_tsc();
    __atomic_store_n(&recorder.hdr->state, PGF_STATE_CLOSED, __ATOMIC_RELEASE);
    forget_file_locked(); /* the mapping stays: a thread may be in the middle of a record */
    __atomic_fetch_add(&recorder.gen, 1, __ATOMIC_RELAXED);
}

/* fork(): the parent keeps its file; the child records into its own. Called by the host's
 * fork handlers (lifecycle.c), which take the registry lock first: the one lock order, the
 * order of site resolution (registry, then recorder). */
void perfgroup__rec_atfork_prepare(void) { pthread_mutex_lock(&recorder.mu); }
void perfgroup__rec_atfork_parent(void) { pthread_mutex_unlock(&recorder.mu); }
void perfgroup__rec_atfork_child(void) {
    if (recorder.hdr || recorder.child_pending) {
        /* the other threads do not exist here: forget their writers (unlinked, so that a
         * thread_end for one of them, e.recorder. this thread's other writer, touches nothing) */
        struct writer *me = perfgroup__rec_tls_writer;
        for (struct writer *w = recorder.live, *nx; w; w = nx) {
            nx = w->next;
            w->prev = w->next = NULL;
            /* every chunk is in the parent's mapping, unmapped below: slow path first */
            __atomic_store_n(&w->hot.end, NULL, __ATOMIC_RELAXED);
            w->hot.chunk = NULL;
            w->hot.pos = w->hot.data = NULL;
        }
        recorder.live = NULL;
        if (me) {
            me->prev = me->next = NULL;
            me->tid = (uint32_t)syscall(SYS_gettid); /* the child's thread, not the parent's */
            recorder.live = me;
        }
        if (recorder.hdr) {
            forget_file_locked();
            munmap(recorder.map, recorder.map_size); /* the parent's: no thread of the child writes there */
            recorder.map = NULL;
        }
        /* The child's own file is made at its first record (child_open_locked): a child
         * that only execs or exits makes none, and a fork costs no file. */
        recorder.child_pending = 1;
        __atomic_fetch_add(&recorder.gen, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&recorder.mu);
}

/* A fork child's first record: its file, under the name expanded with its pid. recorder.mu held. */
PG_HIDDEN void perfgroup__rec_child_open_locked(void) {
    recorder.child_pending = 0;
    char path[PATH_MAX];
    int rc = open_locked(recorder.tmpl, recorder.mode, recorder.buffer, recorder.chunk, 1, path, sizeof path);
    if (rc) {
        __atomic_store_n(&perfgroup__rec_mode, 0, __ATOMIC_RELAXED);
        recorder.reported = 0;
        report("cannot record the forked child to", path, -rc);
        __atomic_fetch_add(&recorder.gen, 1, __ATOMIC_RELAXED);
    }
}

static void rec_fini(void) __attribute__((destructor));
static void rec_fini(void) {
    if (!recorder.host) /* with a host: its destructor closes, after the exiting thread's event
                * reached the file */
        perfgroup__rec_close();
}

static int open_recording(const char *tmpl, unsigned mode, uint64_t buffer, uint32_t chunk,
                          char *path, size_t pathcap) {
    if (perfgroup__rec_lock())
        return -EDEADLK;
    int rc;
    snprintf(path, pathcap, "%s", tmpl);
    if (recorder.hdr || recorder.child_pending) {
        rc = -EALREADY;
    } else if (strlen(tmpl) >= sizeof recorder.tmpl) {
        rc = -ENAMETOOLONG;
    } else {
        rc = open_locked(tmpl, mode, buffer, chunk, 0, path, pathcap);
        if (rc == 0) {
            snprintf(recorder.tmpl, sizeof recorder.tmpl, "%s", tmpl);
            recorder.mode = mode;
            recorder.buffer = buffer;
            recorder.chunk = chunk;
            /* With a host (always, but in the recorder's own unit tests), the host's fork
             * handlers call ours, after taking the registry lock. */
            if (!recorder.host && !recorder.atfork_done &&
                pthread_atfork(perfgroup__rec_atfork_prepare, perfgroup__rec_atfork_parent,
                               perfgroup__rec_atfork_child) == 0)
                recorder.atfork_done = 1;
        }
    }
    perfgroup__rec_unlock();
    return rc;
}

/* "256M", "64K", "4096", "1G" (binary multiples, optional B). 0 = bad. */
static uint64_t parse_size(const char *s) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || v == 0)
        return 0;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || v > (UINT64_MAX >> shift))
        return 0;
    return (uint64_t)v << shift;
}

void perfgroup__rec_init(void) {
    if (perfgroup__rec_lock())
        return;
    int first = !recorder.env_read;
    recorder.env_read = 1;
    perfgroup__rec_unlock();
    const char *out = perfgroup__getenv("PERFGROUP_OUTPUT");
    if (!first || !out || !*out)
        return;
    const char *m = perfgroup__getenv("PERFGROUP_MODE");
    const char *b = perfgroup__getenv("PERFGROUP_BUFFER");
    const char *c = perfgroup__getenv("PERFGROUP_CHUNK");
    const char *tn = perfgroup__getenv("PERFGROUP_TOTALS");
    unsigned mode = PGF_MODE_STATS;
    uint64_t buffer = DEFAULT_BUFFER, chunk = DEFAULT_CHUNK;
    char bad[256] = "";
    if (m && *m) {
        if (strcmp(m, "trace") == 0)
            mode = PGF_MODE_TRACE;
        else if (strcmp(m, "stats") != 0)
            snprintf(bad, sizeof bad, "PERFGROUP_MODE=%.40s: expected stats or trace", m);
    }
    if (b && *b && !(buffer = parse_size(b)))
        snprintf(bad, sizeof bad, "PERFGROUP_BUFFER=%.40s: expected a size like 256M", b);
    if (c && *c && !(chunk = parse_size(c)))
        snprintf(bad, sizeof bad, "PERFGROUP_CHUNK=%.40s: expected a size like 64K", c);
    if (tn && *tn) {
        uint64_t n = parse_size(tn);
        if (n < 16 || n > MAX_TOTALS)
            snprintf(bad, sizeof bad, "PERFGROUP_TOTALS=%.40s: expected a number of totals "
                     "slots from 16 to 4M", tn);
        else
            recorder.tot_slots = (uint32_t)n;
    }
    char path[PATH_MAX];
    int rc = -EINVAL;
    if (!bad[0] && chunk <= MAX_CHUNK)
        rc = open_recording(out, mode, buffer, (uint32_t)chunk, path, sizeof path);
    if (rc == -EINVAL && !bad[0])
        snprintf(bad, sizeof bad,
                 "PERFGROUP_CHUNK=%.40s, PERFGROUP_BUFFER=%.40s: the chunk must be a power of 2 "
                 "from 4K to 16M and the buffer hold 4K + 2 chunks",
                 c && *c ? c : "64K", b && *b ? b : "256M");
    if (rc) {
        if (perfgroup__rec_lock())
            return;
        if (bad[0]) {
            if (!recorder.reported)
                fprintf(stderr, "perfgroup: %s; running unrecorded\n", bad);
            recorder.reported = 1;
        } else {
            report("cannot record to", path, -rc);
        }
        perfgroup__rec_unlock();
    }
}

void perfgroup__rec_close(void) {
    if (perfgroup__rec_lock())
        return;
    close_locked();
    perfgroup__rec_unlock();
}

/* Only the process that owns the file marks it: a vfork() child (posix_spawn's too, when
 * it goes through these wrappers) shares the parent's memory and mapping until its exec,
 * and the parent goes on recording into the file after it. */
static int owner_locked(void) {
    return recorder.hdr && recorder.hdr->pid == (uint32_t)syscall(SYS_getpid);
}

/* Called around exec (rec_exec.c): a successful exec closes the file cleanly; a failed one
 * reopens it (same generation, same chunks). */

void perfgroup__rec_exec_begin(void) {
    if (perfgroup__rec_lock())
        return;
    if (owner_locked()) {
        perfgroup__rec_header_counts(recorder.hdr);
        recorder.hdr->end_tsc = now_tsc();
        __atomic_store_n(&recorder.hdr->state, PGF_STATE_CLOSED, __ATOMIC_RELEASE);
    }
    perfgroup__rec_unlock();
}

void perfgroup__rec_exec_failed(void) {
    if (perfgroup__rec_lock())
        return;
    if (owner_locked()) {
        recorder.hdr->end_tsc = 0;
        __atomic_store_n(&recorder.hdr->state, PGF_STATE_RECORDING, __ATOMIC_RELEASE);
    }
    perfgroup__rec_unlock();
}

/* ---- public API --------------------------------------------------------------------------- */

int perfgroup_record_open(const char *path, int mode, uint64_t buffer_bytes,
                          uint32_t chunk_bytes) {
    if (!path || !*path)
        return -EINVAL;
    if (mode != PERFGROUP_RECORD_STATS && mode != PERFGROUP_RECORD_TRACE)
        return -EINVAL;
    char out[PATH_MAX];
    int rc = open_recording(path, (unsigned)mode, buffer_bytes ? buffer_bytes : DEFAULT_BUFFER,
                            chunk_bytes ? chunk_bytes : DEFAULT_CHUNK, out, sizeof out);
    if (rc == 0 && recorder.host) /* trace mode: every call reaches the hooks (reentry.c); the
                          * sampler keeps the open events' slots (progress.c) */
        recorder.host->recording_changed(1);
    return rc;
}

int perfgroup_record_close(void) {
    if (perfgroup__rec_lock())
        return -EDEADLK;
    int rc = recorder.hdr || recorder.child_pending ? 0 : -ENOENT;
    close_locked();
    perfgroup__rec_unlock();
    if (rc == 0 && recorder.host)
        recorder.host->recording_changed(0); /* out of trace mode: keys again */
    return rc;
}
