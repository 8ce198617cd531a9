/* SPDX-License-Identifier: MIT */
/*
 * common/pathmap.h — what a glob of a map file (-fplugin-arg-perfgroup-map=FILE) or a path
 * glob of exclude= means: one definition for the GCC plugin, the Clang plugin and
 * `perfgroup map`, so a map groups a file the same way whichever of them reads it and
 * whichever way the build system spelled the file.
 *
 * A file is matched by its absolute, normalised path: realpath(3) of the path the compiler saw
 * (relative paths taken from the compile's working directory), so `net/sock.c` compiled from
 * the project root, `sock.c` from net/ (recursive make), `../proj/net/sock.c` from a build
 * directory (meson) and `/home/u/proj/net/sock.c` (CMake) are one path, and symlinks are
 * resolved (getcwd() already gives the physical directory). A glob is one of four kinds:
 *
 *   glob                kind       matched (fnmatch, no flags: '*' also matches '/') against
 *   ------------------  ---------  -------------------------------------------------------------
 *   lua.c, l*lib.c      BASENAME   the file's basename as the compiler spelled it (no '/')
 *   *deps/lua/l*.c      ANYWHERE   the absolute path: a leading '*' already stands for any
 *                                  leading directories, so the glob is not anchored
 *   /opt/x/src/l*.c     ABSOLUTE   the absolute path
 *   net/s*.c, ../l*.c   RELATIVE   the absolute path, the glob anchored at a directory: a map's
 *                                  own directory (map=), the working directory (exclude=)
 *
 * An ABSOLUTE or RELATIVE glob's leading components without a wildcard ('*', '?', '[', '\')
 * are resolved like the file's path: realpath(3) of the longest of them that exists, `.` and
 * `..` of the rest removed by hand; a trailing '/' gets a '*' appended (`net/`: everything
 * under net). So a glob naming a symlinked directory matches the files it holds.
 *
 * Header-only, C11 and C++17, static functions, no allocation (the GCC plugin includes it after
 * GCC's system.h, which poisons malloc): every result goes into a caller's buffer of
 * PGMAP_PATH_MAX bytes; a path or glob that does not fit is refused (-1). realpath(3) needs
 * _DEFAULT_SOURCE (or _GNU_SOURCE) in strict C.
 */
#ifndef PERFGROUP_PATHMAP_H
#define PERFGROUP_PATHMAP_H

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PGMAP_PATH_MAX 4096

enum pgmap_kind { PGMAP_BASENAME, PGMAP_ANYWHERE, PGMAP_ABSOLUTE, PGMAP_RELATIVE };

/* The words the plugins' option help and file headers use for the rule above. */
#define PGMAP_RULE_TEXT                                                                        \
    "a glob with '/' matches the defining file's absolute path (symlinks resolved; before "     \
    "issue 29: the path as spelled), relative to the map file's directory unless it starts "   \
    "with '/' or '*'; one without '/' matches the basename (docs/plugins.md, Map files)"

/* One line of a map file, split in place: returns 0 for a blank or comment-only line, 1 with
 * *glob and *group set, -1 for anything but exactly two fields. '#' starts a comment; spaces,
 * tabs, CR and LF separate. */
static inline int pgmap_split_line(char *line, char **glob, char **group)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    char *field[3] = {NULL, NULL, NULL};
    int n = 0;
    for (char *p = line; *p;) {
        while (*p && strchr(" \t\r\n", *p))
            *p++ = '\0';
        if (!*p)
            break;
        if (n == 3)
            return -1;
        field[n++] = p;
        while (*p && !strchr(" \t\r\n", *p))
            p++;
    }
    if (n == 0)
        return 0;
    if (n != 2)
        return -1;
    *glob = field[0];
    *group = field[1];
    return 1;
}

/* Appends component C (length N) to the absolute path OUT (length *LEN), `.` dropped and `..`
 * removing the last component (never above '/'). Returns -1 if it does not fit. */
static inline int pgmap__push(char *out, size_t *len, const char *c, size_t n)
{
    if (n == 0 || (n == 1 && c[0] == '.'))
        return 0;
    if (n == 2 && c[0] == '.' && c[1] == '.') {
        while (*len > 1 && out[*len - 1] != '/')
            (*len)--;
        if (*len > 1)
            (*len)--; /* the '/' before it, unless it is the root */
        out[*len] = '\0';
        return 0;
    }
    if (*len + (*len > 1) + n + 1 > PGMAP_PATH_MAX)
        return -1;
    if (*len > 1)
        out[(*len)++] = '/';
    memcpy(out + *len, c, n);
    *len += n;
    out[*len] = '\0';
    return 0;
}

/* Appends the components of PATH to OUT lexically; -1 if too long. */
static inline int pgmap__push_all(char *out, size_t *len, const char *path)
{
    while (*path) {
        while (*path == '/')
            path++;
        size_t n = strcspn(path, "/");
        if (n && pgmap__push(out, len, path, n) < 0)
            return -1;
        path += n;
    }
    return 0;
}

/* DIR + "/" + PATH (PATH as is if absolute) into OUT, unnormalised; -1 if too long. */
static inline int pgmap__join(const char *dir, const char *path, char *out)
{
    int n = path[0] == '/' ? snprintf(out, PGMAP_PATH_MAX, "%s", path)
                           : snprintf(out, PGMAP_PATH_MAX, "%s/%s", dir, path);
    return n < 0 || n >= PGMAP_PATH_MAX ? -1 : 0;
}

/* Resolves the first LITERAL bytes of the absolute path IN (a prefix ending before a '/' or at
 * the end) the way realpath(3) does, as far as they exist, and appends the rest lexically.
 * OUT gets an absolute path without `.`, `..`, '//' or a trailing '/'. Returns 0, or -1 if the
 * result does not fit. */
static inline int pgmap__resolve(const char *in, size_t literal, char *out)
{
    char prefix[PGMAP_PATH_MAX], real[PGMAP_PATH_MAX];
    size_t cut = literal;
    for (;;) {
        /* the longest existing prefix that ends at a component boundary */
        memcpy(prefix, in, cut);
        prefix[cut] = '\0';
        if (cut > 0 && realpath(prefix, real)) {
            size_t len = strlen(real);
            if (len >= PGMAP_PATH_MAX)
                return -1;
            memcpy(out, real, len + 1);
            return pgmap__push_all(out, &len, in + cut);
        }
        while (cut > 0 && in[cut - 1] != '/')
            cut--;
        if (cut == 0)
            break;
        cut--; /* before that '/' */
    }
    size_t len = 1;
    out[0] = '/';
    out[1] = '\0';
    return pgmap__push_all(out, &len, in);
}

/* The absolute path a file is matched by: SPELLED as the compiler saw it, relative to CWD
 * (the compile's working directory) unless absolute, resolved as above (the whole path: a
 * file that does not exist, e.g. a #line name, keeps what is left). 0, or -1 if too long. */
static inline int pgmap_file_path(const char *cwd, const char *spelled, char *out)
{
    char joined[PGMAP_PATH_MAX];
    if (pgmap__join(cwd, spelled, joined) < 0)
        return -1;
    return pgmap__resolve(joined, strlen(joined), out);
}

/* The directory a map file's relative globs are anchored at: the directory of realpath(MAP)
 * (a symlinked map file is anchored where the file it links to lives), MAP taken relative to
 * CWD. 0, or -1 (too long). */
static inline int pgmap_map_dir(const char *cwd, const char *map, char *out)
{
    if (pgmap_file_path(cwd, map, out) < 0)
        return -1;
    char *slash = strrchr(out, '/');
    if (slash == out)
        slash[1] = '\0'; /* a map in / */
    else if (slash)
        *slash = '\0';
    return 0;
}

/* Classifies GLOB and writes into OUT the pattern fnmatch() compares (see the table at the
 * top); relative globs are anchored at ANCHOR (an absolute directory). Returns the kind, or
 * -1 if the anchored glob does not fit. */
static inline int pgmap_anchor(const char *anchor, const char *glob, char *out)
{
    if (!strchr(glob, '/') || glob[0] == '*') {
        if (strlen(glob) >= PGMAP_PATH_MAX)
            return -1;
        strcpy(out, glob);
        return strchr(glob, '/') ? PGMAP_ANYWHERE : PGMAP_BASENAME;
    }
    char joined[PGMAP_PATH_MAX];
    if (pgmap__join(anchor, glob, joined) < 0)
        return -1;
    size_t n = strlen(joined);
    int dir_only = joined[n - 1] == '/';
    while (n > 1 && joined[n - 1] == '/')
        joined[--n] = '\0';
    /* the literal head: up to the '/' before the first component with a wildcard; only it is
     * resolved, the rest is compared as written */
    size_t literal = strcspn(joined, "*?[\\");
    if (joined[literal])
        while (literal > 0 && joined[literal] != '/')
            literal--;
    char head[PGMAP_PATH_MAX], resolved[PGMAP_PATH_MAX];
    memcpy(head, joined, literal);
    head[literal] = '\0';
    if (pgmap__resolve(head, literal, resolved) < 0)
        return -1;
    const char *rest = joined + literal;
    while (*rest == '/')
        rest++;
    int root = !strcmp(resolved, "/");
    int w = snprintf(out, PGMAP_PATH_MAX, "%s%s%s%s", resolved, *rest && !root ? "/" : "", rest,
                     dir_only ? (root && !*rest ? "*" : "/*") : "");
    if (w < 0 || w >= PGMAP_PATH_MAX)
        return -1;
    return glob[0] == '/' ? PGMAP_ABSOLUTE : PGMAP_RELATIVE;
}

/* Whether the anchored glob PATTERN of kind KIND matches the file whose spelling is SPELLED
 * and whose path (pgmap_file_path) is ABS. */
static inline int pgmap_match(const char *pattern, int kind, const char *abs, const char *spelled)
{
    if (kind == PGMAP_BASENAME) {
        const char *slash = strrchr(spelled, '/');
        return fnmatch(pattern, slash ? slash + 1 : spelled, 0) == 0;
    }
    return fnmatch(pattern, abs, 0) == 0;
}

/* The verbose note for a file's group, the same text from both plugins:
 *   '<abs>' matches '<glob>' (<map>:<line>): file group '<group>'
 *   '<abs>' matches no glob of '<map>': file group '<default>' (default=)
 *   '<abs>' matches no glob of '<map>': no file group
 * MAP and LINE name the matching entry's map (or, with no match, the last map= given). */
static inline void pgmap_note(char *out, size_t cap, const char *abs, const char *glob,
                              const char *map, unsigned line, const char *group,
                              const char *default_group)
{
    if (glob)
        snprintf(out, cap, "perfgroup: '%s' matches '%s' (%s:%u): file group '%s'", abs, glob,
                 map, line, group);
    else if (default_group && *default_group)
        snprintf(out, cap, "perfgroup: '%s' matches no glob of '%s': file group '%s' (default=)",
                 abs, map, default_group);
    else
        snprintf(out, cap, "perfgroup: '%s' matches no glob of '%s': no file group", abs, map);
}

#endif /* PERFGROUP_PATHMAP_H */
