/* SPDX-License-Identifier: MIT */
/*
 * map.c — `perfgroup map MAPFILE compile_commands.json`: the grouping a map file gives a
 * build, before building it. Each source file of the compilation database with its file group
 * (and the map line that gave it), then the globs that matched no file, so a map is fixed
 * without a rebuild. Matching is common/pathmap.h, the plugins' own rule: a file is its
 * absolute real path (the entry's "directory" + "file"), relative globs are the map's
 * directory's. CMake (CMAKE_EXPORT_COMPILE_COMMANDS), meson and bear write the database.
 *
 * Bad input (an unreadable file, JSON that is not an array of objects with "directory" and
 * "file" strings, a malformed map line) is one stderr line naming the file and the byte offset
 * or line, and exit status 2; nothing is printed to stdout then.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/pathmap.h"
#include "pgshared.h"
#include "tool.h"

static const char usage[] =
    "usage: perfgroup map [--default GROUP] MAPFILE compile_commands.json\n"
    "  Prints each source file of the compilation database with the file group MAPFILE gives\n"
    "  it (as -fplugin-arg-perfgroup-map=MAPFILE would, with either plugin), then the globs\n"
    "  that matched no file. --default GROUP: the group of files no glob matches\n"
    "  (-fplugin-arg-perfgroup-default=GROUP).\n";

/* A database bigger than this is refused (Chromium's is about 200 MB). */
#define MAX_DB_BYTES (1u << 30)
#define MAX_DEPTH 64

struct entry {
    char *glob, *pattern, *group;
    int kind;
    unsigned line;
    unsigned long matched; /* source files it gave a group */
};

struct source {
    char *abs;  /* pgmap_file_path */
    int entry;  /* -1: no glob */
};

struct json {
    const char *s;
    size_t n, i;
    const char *err; /* first error (sticky) and where */
    size_t at;
};

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "perfgroup map: out of memory\n");
        exit(PGC_EXIT_OUTPUT);
    }
    return q;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xrealloc(NULL, n), s, n);
}

/* ---- The map -------------------------------------------------------------------------- */

/* Reads MAP as the plugins do (same line rule, same errors). Returns the entry count, or -1
 * after printing the error. */
static long read_map(const char *map, const char *dir, struct entry **out)
{
    FILE *f = fopen(map, "r");
    if (!f) {
        fprintf(stderr, "perfgroup map: cannot open '%s': %s\n", map, strerror(errno));
        return -1;
    }
    struct entry *e = NULL;
    long n = 0;
    unsigned line = 0;
    char buf[4096];
    while (fgets(buf, sizeof buf, f)) {
        line++;
        size_t len = strlen(buf);
        if (len == sizeof buf - 1 && buf[len - 1] != '\n') {
            fprintf(stderr, "perfgroup map: %s:%u: line too long\n", map, line);
            goto bad;
        }
        char *glob, *group;
        int fields = pgmap_split_line(buf, &glob, &group);
        if (fields == 0)
            continue;
        char pattern[PGMAP_PATH_MAX];
        int kind = fields < 0 ? -1 : pgmap_anchor(dir, glob, pattern);
        if (fields < 0 || kind < 0) {
            fprintf(stderr, "perfgroup map: %s:%u: %s\n", map, line,
                    fields < 0 ? "expected 'GLOB GROUP'" : "the glob is longer than a path can be");
            goto bad;
        }
        e = xrealloc(e, (size_t)(n + 1) * sizeof *e);
        e[n++] = (struct entry){xstrdup(glob), xstrdup(pattern), xstrdup(group), kind, line, 0};
    }
    if (ferror(f)) {
        fprintf(stderr, "perfgroup map: cannot read '%s': %s\n", map, strerror(errno));
        goto bad;
    }
    fclose(f);
    *out = e;
    return n;
bad:
    fclose(f);
    for (long i = 0; i < n; i++) {
        free(e[i].glob);
        free(e[i].pattern);
        free(e[i].group);
    }
    free(e);
    return -1;
}

/* ---- A compilation database: a JSON array of objects ---------------------------------- */

static int fail(struct json *j, const char *what)
{
    if (!j->err) {
        j->err = what;
        j->at = j->i;
    }
    return -1;
}

static void ws(struct json *j)
{
    while (j->i < j->n && strchr(" \t\r\n", j->s[j->i]) && j->s[j->i])
        j->i++;
}

static int hex4(struct json *j, unsigned *v)
{
    *v = 0;
    for (int k = 0; k < 4; k++, j->i++) {
        char c = j->i < j->n ? j->s[j->i] : 0;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return fail(j, "bad \\u escape");
        *v = *v * 16 + (unsigned)d;
    }
    return 0;
}

/* A JSON string at j->i (its '"'), decoded into a new string (*out) when OUT is not NULL. */
static int string(struct json *j, char **out)
{
    if (j->i >= j->n || j->s[j->i] != '"')
        return fail(j, "expected a string");
    j->i++;
    size_t cap = 16, len = 0;
    char *s = out ? xrealloc(NULL, cap) : NULL;
    for (;;) {
        if (j->i >= j->n) {
            free(s);
            return fail(j, "unterminated string");
        }
        unsigned char c = (unsigned char)j->s[j->i];
        unsigned cp = c;
        char enc[4];
        size_t k = 1;
        if (c == '"') {
            j->i++;
            break;
        }
        if (c < 0x20) {
            free(s);
            return fail(j, "control character in a string");
        }
        if (c == '\\') {
            j->i++;
            char e = j->i < j->n ? j->s[j->i] : 0;
            const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
            const char *p = e ? strchr(from, e) : NULL;
            if (p) {
                cp = (unsigned char)to[p - from];
                j->i++;
            } else if (e == 'u') {
                j->i++;
                if (hex4(j, &cp) < 0) {
                    free(s);
                    return -1;
                }
                if (cp >= 0xd800 && cp < 0xdc00) { /* a surrogate pair */
                    unsigned lo;
                    if (j->i + 1 >= j->n || j->s[j->i] != '\\' || j->s[j->i + 1] != 'u') {
                        free(s);
                        return fail(j, "lone surrogate in \\u escape");
                    }
                    j->i += 2;
                    if (hex4(j, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff) {
                        free(s);
                        return fail(j, "lone surrogate in \\u escape");
                    }
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                } else if (cp >= 0xdc00 && cp < 0xe000) {
                    free(s);
                    return fail(j, "lone surrogate in \\u escape");
                }
                if (cp == 0) {
                    free(s);
                    return fail(j, "NUL character in a string");
                }
            } else {
                free(s);
                return fail(j, "bad escape");
            }
            if (cp < 0x80)
                enc[0] = (char)cp;
            else if (cp < 0x800) {
                enc[0] = (char)(0xc0 | cp >> 6), enc[1] = (char)(0x80 | (cp & 63)), k = 2;
            } else if (cp < 0x10000) {
                enc[0] = (char)(0xe0 | cp >> 12), enc[1] = (char)(0x80 | (cp >> 6 & 63));
                enc[2] = (char)(0x80 | (cp & 63)), k = 3;
            } else {
                enc[0] = (char)(0xf0 | cp >> 18), enc[1] = (char)(0x80 | (cp >> 12 & 63));
                enc[2] = (char)(0x80 | (cp >> 6 & 63)), enc[3] = (char)(0x80 | (cp & 63)), k = 4;
            }
        } else {
            enc[0] = (char)c;
            j->i++;
        }
        if (s) {
            if (len + k + 1 > cap)
                s = xrealloc(s, cap = 2 * cap + k);
            memcpy(s + len, enc, k);
            len += k;
        }
    }
    if (s) {
        s[len] = '\0';
        *out = s;
    }
    return 0;
}

/* Skips any JSON value at j->i (nested no deeper than MAX_DEPTH). */
static int skip_value(struct json *j, int depth)
{
    ws(j);
    if (j->i >= j->n)
        return fail(j, "unexpected end of file");
    char c = j->s[j->i];
    if (c == '"')
        return string(j, NULL);
    if (c == '[' || c == '{') {
        if (depth >= MAX_DEPTH)
            return fail(j, "nested too deeply");
        char close = c == '[' ? ']' : '}';
        j->i++;
        ws(j);
        if (j->i < j->n && j->s[j->i] == close) {
            j->i++;
            return 0;
        }
        for (;;) {
            if (c == '{') {
                ws(j);
                if (string(j, NULL) < 0)
                    return -1;
                ws(j);
                if (j->i >= j->n || j->s[j->i] != ':')
                    return fail(j, "expected ':'");
                j->i++;
            }
            if (skip_value(j, depth + 1) < 0)
                return -1;
            ws(j);
            if (j->i < j->n && j->s[j->i] == ',') {
                j->i++;
                continue;
            }
            if (j->i < j->n && j->s[j->i] == close) {
                j->i++;
                return 0;
            }
            return fail(j, c == '[' ? "expected ',' or ']'" : "expected ',' or '}'");
        }
    }
    /* true, false, null or a number (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?) */
    static const char *const words[] = {"true", "false", "null"};
    for (int k = 0; k < 3; k++) {
        size_t len = strlen(words[k]);
        if (j->n - j->i >= len && !memcmp(j->s + j->i, words[k], len)) {
            j->i += len;
            return 0;
        }
    }
    size_t from = j->i;
#define DIGITS(min)                                                                            \
    do {                                                                                       \
        size_t d0 = j->i;                                                                      \
        while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9')                          \
            j->i++;                                                                            \
        if (j->i - d0 < (min))                                                                 \
            goto bad_number;                                                                   \
    } while (0)
    if (j->i < j->n && j->s[j->i] == '-')
        j->i++;
    if (j->i < j->n && j->s[j->i] == '0')
        j->i++;
    else
        DIGITS(1);
    if (j->i < j->n && j->s[j->i] == '.') {
        j->i++;
        DIGITS(1);
    }
    if (j->i < j->n && (j->s[j->i] == 'e' || j->s[j->i] == 'E')) {
        j->i++;
        if (j->i < j->n && (j->s[j->i] == '+' || j->s[j->i] == '-'))
            j->i++;
        DIGITS(1);
    }
#undef DIGITS
    return 0;
bad_number:
    j->i = from;
    return fail(j, "expected a JSON value");
}

/* One object of the database: its "directory" and "file". */
static int command(struct json *j, char **dir, char **file)
{
    size_t start = j->i;
    *dir = *file = NULL;
    if (j->i >= j->n || j->s[j->i] != '{')
        return fail(j, "expected an object (a compile command)");
    j->i++;
    ws(j);
    if (j->i < j->n && j->s[j->i] == '}')
        j->i++;
    else
        for (;;) {
            char *key;
            ws(j);
            if (string(j, &key) < 0)
                return -1;
            ws(j);
            if (j->i >= j->n || j->s[j->i] != ':') {
                free(key);
                return fail(j, "expected ':'");
            }
            j->i++;
            ws(j);
            char **slot = !strcmp(key, "directory") ? dir : !strcmp(key, "file") ? file : NULL;
            free(key);
            if (slot) {
                free(*slot);
                *slot = NULL;
                if (string(j, slot) < 0)
                    return -1;
            } else if (skip_value(j, 2) < 0)
                return -1;
            ws(j);
            if (j->i < j->n && j->s[j->i] == ',') {
                j->i++;
                continue;
            }
            if (j->i < j->n && j->s[j->i] == '}') {
                j->i++;
                break;
            }
            return fail(j, "expected ',' or '}'");
        }
    if (!*dir || !*file) {
        j->i = start;
        return fail(j, !*dir ? "compile command without a \"directory\" string"
                             : "compile command without a \"file\" string");
    }
    return 0;
}

/* Reads the whole file PATH (at most MAX_DB_BYTES) into *BUF. */
static int slurp(const char *path, char **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "perfgroup map: cannot open '%s': %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    char *b = xrealloc(NULL, cap);
    for (;;) {
        if (n == cap) {
            if (cap >= MAX_DB_BYTES) {
                fprintf(stderr, "perfgroup map: %s: byte %zu: larger than %u bytes\n", path, n,
                        MAX_DB_BYTES);
                fclose(f);
                free(b);
                return -1;
            }
            b = xrealloc(b, cap *= 2);
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        fprintf(stderr, "perfgroup map: cannot read '%s': %s\n", path, strerror(errno));
        fclose(f);
        free(b);
        return -1;
    }
    fclose(f);
    *buf = b;
    *len = n;
    return 0;
}

/* ---- The command ---------------------------------------------------------------------- */

/* PATH shown relative to DIR when it lies below it. */
static const char *shown(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (!strcmp(dir, "/"))
        return path + 1;
    return !strncmp(path, dir, n) && path[n] == '/' ? path + n + 1 : path;
}

int pgl_map_main(int argc, char **argv)
{
    const char *deflt = NULL;
    int a = 1;
    for (; a < argc && argv[a][0] == '-' && argv[a][1]; a++) {
        if (!strcmp(argv[a], "-h") || !strcmp(argv[a], "--help")) {
            fputs(usage, stdout);
            return 0;
        }
        if (!strcmp(argv[a], "--default") && a + 1 < argc && argv[a + 1][0])
            deflt = argv[++a];
        else if (!strncmp(argv[a], "--default=", 10) && argv[a][10])
            deflt = argv[a] + 10;
        else if (!strcmp(argv[a], "--"))
            break;
        else
            return pgl_usage(usage, "unknown option %s", argv[a]);
    }
    if (a < argc && !strcmp(argv[a], "--"))
        a++;
    if (argc - a != 2)
        return pgl_usage(usage, "needs MAPFILE and compile_commands.json");
    const char *map = argv[a], *db = argv[a + 1];

    char cwd[PGMAP_PATH_MAX], dir[PGMAP_PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        strcpy(cwd, ".");
    if (pgmap_map_dir(cwd, map, dir) < 0) {
        fprintf(stderr, "perfgroup map: %s: the path is longer than a path can be\n", map);
        return PGC_EXIT_BADINPUT;
    }
    struct entry *e = NULL;
    long ne = read_map(map, dir, &e);
    if (ne < 0)
        return PGC_EXIT_BADINPUT;

    char *text;
    size_t len;
    if (slurp(db, &text, &len) < 0)
        return PGC_EXIT_BADINPUT;
    struct json j = {text, len, 0, NULL, 0};
    struct source *src = NULL;
    size_t ns = 0;
    struct pgc_hash seen = {0}; /* hash of a source's path -> its index in src */
    int rc = 0;
    ws(&j);
    if (j.i >= j.n || j.s[j.i] != '[')
        fail(&j, "expected '[' (a compilation database is an array of compile commands)");
    else {
        j.i++;
        ws(&j);
        if (j.i < j.n && j.s[j.i] == ']')
            j.i++;
        else
            for (;;) {
                ws(&j);
                char *cdir, *file;
                if (command(&j, &cdir, &file) < 0) {
                    free(cdir);
                    free(file);
                    break;
                }
                char base[PGMAP_PATH_MAX], abs[PGMAP_PATH_MAX];
                if (pgmap_file_path(cwd, cdir, base) < 0 || pgmap_file_path(base, file, abs) < 0)
                    snprintf(abs, sizeof abs, "%s", file); /* too long to resolve: as written */
                uint64_t h = pgc_hash_bytes(abs, strlen(abs));
                uint32_t k;
                if (!pgc_hash_get(&seen, h, &k) || strcmp(src[k].abs, abs)) {
                    /* one line per file, however many commands compile it */
                    if (pgc_hash_put(&seen, h, (uint32_t)ns) < 0) {
                        fprintf(stderr, "perfgroup map: out of memory\n");
                        exit(PGC_EXIT_OUTPUT);
                    }
                    src = xrealloc(src, (ns + 1) * sizeof *src);
                    src[ns] = (struct source){xstrdup(abs), -1};
                    for (long i = 0; i < ne; i++)
                        if (pgmap_match(e[i].pattern, e[i].kind, abs, file)) {
                            src[ns].entry = (int)i;
                            e[i].matched++;
                            break;
                        }
                    ns++;
                }
                free(cdir);
                free(file);
                ws(&j);
                if (j.i < j.n && j.s[j.i] == ',') {
                    j.i++;
                    continue;
                }
                if (j.i < j.n && j.s[j.i] == ']') {
                    j.i++;
                    break;
                }
                fail(&j, "expected ',' or ']'");
                break;
            }
        ws(&j);
        if (!j.err && j.i < j.n)
            fail(&j, "data after the array");
    }
    if (j.err) {
        fprintf(stderr, "perfgroup map: %s: byte %zu: %s\n", db, j.at, j.err);
        rc = PGC_EXIT_BADINPUT;
    } else {
        int w = 1, wp = 1; /* the group and path columns, capped */
        for (size_t k = 0; k < ns; k++) {
            const char *g = src[k].entry >= 0 ? e[src[k].entry].group : deflt ? deflt : "-";
            int lg = (int)strlen(g), lp = (int)strlen(shown(src[k].abs, dir));
            w = lg > w ? (lg > 32 ? 32 : lg) : w;
            wp = lp > wp ? (lp > 60 ? 60 : lp) : wp;
        }
        printf("# %s: relative globs from %s; %zu source files in %s\n", map, dir, ns, db);
        for (size_t k = 0; k < ns; k++) {
            const struct entry *m = src[k].entry >= 0 ? &e[src[k].entry] : NULL;
            const char *g = m ? m->group : deflt ? deflt : "-";
            if (m)
                printf("%-*s  %-*s  (%s:%u %s)\n", w, g, wp, shown(src[k].abs, dir), map,
                       m->line, m->glob);
            else
                printf("%-*s  %-*s  (%s)\n", w, g, wp, shown(src[k].abs, dir),
                       deflt ? "no glob: --default" : "no glob: no file group");
        }
        unsigned long unused = 0;
        for (long i = 0; i < ne; i++)
            unused += !e[i].matched;
        if (unused) {
            printf("# globs that matched nothing (%lu of %ld):\n", unused, ne);
            for (long i = 0; i < ne; i++)
                if (!e[i].matched)
                    printf("%s:%u: %s %s\n", map, e[i].line, e[i].glob, e[i].group);
        } else
            printf("# every glob matched a file\n");
        if (fflush(stdout) || ferror(stdout)) {
            fprintf(stderr, "perfgroup map: cannot write the output: %s\n", strerror(errno));
            rc = PGC_EXIT_OUTPUT;
        }
    }
    for (size_t k = 0; k < ns; k++)
        free(src[k].abs);
    free(src);
    pgc_hash_free(&seen);
    for (long i = 0; i < ne; i++) {
        free(e[i].glob);
        free(e[i].pattern);
        free(e[i].group);
    }
    free(e);
    free(text);
    return rc;
}
