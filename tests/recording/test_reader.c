/* SPDX-License-Identifier: MIT */
/*
 * test_reader.c — pgreader against damaged recordings. A real recording is made with the
 * recorder, then copies of it are damaged one way each; the reader must answer each with
 * its documented message and the byte offset of the damage, never crash, and read a file
 * cut short up to its last whole record (with a warning).
 *
 *   test_reader errors           the table of damages below
 *   test_reader fuzz [N]         N random byte flips / cuts; the reader returns (ASan build)
 *   test_reader pgdump PGDUMP    pgdump: exit 1 and one stderr line naming file and offset
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "perfgroup.h"
#include "perfgroup/crc32c.h"
#include "pgreader.h"
#include "record.h"

static char dir[256], good[300], bad[300];
static uint8_t *img;
static size_t img_len;

static void make_good(void) {
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/pgread.XXXXXX", t && *t ? t : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(good, sizeof good, "%s/good.pgm", dir);
    snprintf(bad, sizeof bad, "%s/bad.pgm", dir);
    /* 8 chunks of 4 KiB: DEFS, 2 threads' data */
    CHECK_EQ(perfgroup_record_open(good, PERFGROUP_RECORD_TRACE, 4096 + 8 * 4096, 4096), 0);
    static const uint32_t gids[] = { 1 };
    perfgroup__rec_group(1, "g", PERFGROUP_KIND_ATTRIBUTE, 1);
    perfgroup__rec_function(1, "f", "f.c", 3, "", gids, 1);
    for (uint32_t th = 0; th < 2; th++) {
        struct perfgroup_rec_thread *w = perfgroup__rec_thread_start(th, th, "t");
        for (uint64_t i = 0; i < 200; i++)
            perfgroup__rec_interval(w, 1, 1, 0, i, 5);
        CHECK_EQ(perfgroup_marker("m", "text"), 0);
        perfgroup__rec_thread_end(w, 9);
    }
    CHECK_EQ(perfgroup_record_close(), 0);
    FILE *f = fopen(good, "rb");
    CHECK(f != NULL);
    fseek(f, 0, SEEK_END);
    img_len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    img = malloc(img_len);
    CHECK(img && fread(img, 1, img_len, f) == img_len);
    fclose(f);
}

static void write_raw(const uint8_t *data, size_t len) {
    /* A new file each time, not the old one truncated: ext4 (auto_da_alloc) writes a file
     * truncated and rewritten out to disk at its close, and the fuzz writes thousands. */
    CHECK(unlink(bad) == 0 || errno == ENOENT);
    FILE *f = fopen(bad, "wb");
    CHECK(f != NULL);
    CHECK_EQ(fwrite(data, 1, len, f), len);
    fclose(f);
}

static uint64_t chunk_off(uint32_t i);

/* A damaged file as a writer would have sealed it: every FULL chunk whose header is sane gets
 * the CRC-32C of what it now holds (format.h, version 2), so the damage reaches the record
 * parser as in a chunk a crash left WRITING or in a version-1 file. */
static void write_bad(const uint8_t *data, size_t len) {
    uint8_t *c = malloc(len ? len : 1);
    CHECK(c != NULL);
    memcpy(c, data, len);
    for (uint32_t i = 0; i < 8 && chunk_off(i) + 4096 <= len; i++) {
        struct pgf_chunk_header h;
        memcpy(&h, c + chunk_off(i), sizeof h);
        if (h.magic == PGF_CHUNK_MAGIC && h.state == PGF_CSTATE_FULL && h.committed <= 4096 - 64) {
            uint32_t crc = pgf_chunk_crc(&h, c + chunk_off(i) + 64);
            memcpy(c + chunk_off(i) + 20, &crc, 4);
        }
    }
    write_raw(c, len);
    free(c);
}

/* Records until the end or an error. */
static long count_records(pgr_reader *r) {
    struct pgr_record rec;
    long n = 0;
    while (pgr_next(r, &rec) > 0)
        n++;
    return n;
}

/* Read the whole file; returns the number of records, fills err/warnings. */
static long read_all(const char *path, char *msg, size_t msgcap, uint64_t *off, size_t *warns) {
    pgr_reader *r = pgr_open(path);
    CHECK(r != NULL);
    struct pgr_record rec;
    long n = 0;
    int rc;
    while ((rc = pgr_next(r, &rec)) > 0)
        n++;
    msg[0] = 0;
    *off = 0;
    if (pgr_error(r)) {
        CHECK_EQ(rc, -1);
        CHECK_EQ(pgr_next(r, &rec), -1); /* sticky */
        snprintf(msg, msgcap, "%s", pgr_error(r)->message);
        *off = pgr_error(r)->offset;
    }
    *warns = pgr_warning_count(r);
    pgr_close(r);
    return n;
}

static uint64_t chunk_off(uint32_t i) { return PGF_HEADER_SIZE + (uint64_t)i * 4096; }

/* Index of the first chunk of a kind. */
static uint32_t find_chunk(uint16_t kind) {
    for (uint32_t i = 0; i < 8; i++) {
        struct pgf_chunk_header h;
        memcpy(&h, img + chunk_off(i), sizeof h);
        if (h.magic == PGF_CHUNK_MAGIC && h.kind == kind)
            return i;
    }
    CHECK(0);
    return 0;
}

static void expect(const char *what, const uint8_t *data, size_t len, const char *msg_part,
                   uint64_t offset) {
    char msg[256];
    uint64_t off;
    size_t warns;
    write_bad(data, len);
    read_all(bad, msg, sizeof msg, &off, &warns);
    printf("%-28s -> byte %llu: %s\n", what, (unsigned long long)off, msg);
    if (!strstr(msg, msg_part)) {
        fprintf(stderr, "%s: expected \"%s\" in \"%s\"\n", what, msg_part, msg);
        exit(1);
    }
    CHECK_EQ(off, offset);
}

static int test_errors(void) {
    char msg[256];
    uint64_t off;
    size_t warns;
    long all = read_all(good, msg, sizeof msg, &off, &warns);
    CHECK_EQ(msg[0], 0);
    CHECK_EQ(warns, 0);
    CHECK(all > 400);

    uint8_t *c = malloc(img_len);
    CHECK(c != NULL);
#define FRESH() memcpy(c, img, img_len)
    FRESH(); c[0] = 'X';
    expect("bad magic", c, img_len, "bad magic", 0);
    FRESH(); c[8] = 99;
    expect("version", c, img_len, "unsupported format version 99", 8);
    FRESH(); memcpy(c + 16, &(uint32_t){ 3000 }, 4);
    expect("chunk_size", c, img_len, "bad chunk_size 3000", 16);
    FRESH(); memcpy(c + 20, &(uint32_t){ 0 }, 4);
    expect("chunk_count", c, img_len, "bad chunk_count 0", 20);
    expect("short header", img, 100, "file too short for a header", 0);
    /* a huge chunk_count on a small file: no huge allocation, the chunks present are read */
    {
        FRESH();
        memcpy(c + 20, &(uint32_t){ 1u << 24 }, 4);
        write_bad(c, img_len);
        long n = read_all(bad, msg, sizeof msg, &off, &warns);
        printf("%-28s -> %ld records, %zu warnings\n", "chunk_count 2^24", n, warns);
        CHECK_EQ(msg[0], 0);
        CHECK_EQ(n, all);
        CHECK(warns >= 1); /* file cut short */
    }

    uint32_t d = find_chunk(PGF_CHUNK_DATA), defs = find_chunk(PGF_CHUNK_DEFS);
    uint64_t co = chunk_off(d);
    FRESH(); memcpy(c + co + 24, &(uint32_t){ 5000 }, 4);
    expect("committed too large", c, img_len, "committed 5000 exceeds chunk", co + 24);
    FRESH(); memcpy(c + co, &(uint32_t){ 0x12345678 }, 4);
    expect("chunk magic", c, img_len, "bad chunk magic", co);
    FRESH(); c[co + 4] = 9;
    expect("chunk kind", c, img_len, "bad chunk kind 9", co + 4);
    /* version 2: a flipped bit in a sealed chunk fails its CRC-32C: the chunk is skipped
     * (its records not believed), counted and warned about with its offset */
    for (uint32_t bit = 0; bit < 8 * 4096; bit += 4093) {
        struct pgf_chunk_header h;
        memcpy(&h, img + co, sizeof h);
        CHECK_EQ(h.state, PGF_CSTATE_FULL);
        if (bit / 8 >= 64 + h.committed || (bit / 8 >= 4 && bit / 8 < 8))
            continue; /* past the records; magic/kind/state are checked on their own */
        FRESH();
        c[co + bit / 8] ^= (uint8_t)(1u << (bit % 8));
        write_raw(c, img_len);
        pgr_reader *r = pgr_open(bad);
        long n = count_records(r);
        printf("%-28s -> byte %llu bit %u: %ld of %ld records, %s\n", "flip in a sealed chunk",
               (unsigned long long)(co + bit / 8), bit % 8, n, all,
               pgr_error(r) ? pgr_error(r)->message : pgr_warning_count(r) ? pgr_warning(r, 0)->message : "");
        if (!pgr_error(r)) {
            CHECK_EQ(pgr_chunks_corrupt(r), 1);
            CHECK(n < all);
            CHECK(strstr(pgr_warning(r, 0)->message, "CRC-32C mismatch") != NULL);
            CHECK_EQ(pgr_warning(r, 0)->offset, co);
        }
        pgr_close(r);
    }
    FRESH(); memcpy(c + co + 8, c + chunk_off(defs) + 8, 8);
    expect("duplicate seq", c, img_len, "duplicate chunk seq", co + 8);
    FRESH(); c[co + 64] = 0xc1;
    expect("record not an array", c, img_len, "record is not a msgpack array", co + 64);
    FRESH(); c[co + 64] = 0x90;
    expect("empty record", c, img_len, "empty record", co + 64);
    /* the CLOCK record: [16, tsc ...]: make its kind a DEFS kind */
    FRESH(); c[co + 65] = PGF_REC_GROUP;
    expect("kind in wrong chunk", c, img_len, "not allowed in a DATA chunk", co + 64);
    /* shrink committed by one byte: the last record now runs past it */
    {
        FRESH();
        uint32_t cm;
        memcpy(&cm, c + co + 24, 4);
        cm -= 1;
        memcpy(c + co + 24, &cm, 4);
        char m[256];
        uint64_t o;
        size_t w;
        write_bad(c, img_len);
        read_all(bad, m, sizeof m, &o, &w);
        printf("%-28s -> byte %llu: %s\n", "committed cuts a record", (unsigned long long)o, m);
        CHECK(strstr(m, "truncated record") != NULL);
        CHECK(o > co + 64 && o < co + 64 + cm);
    }
    /* record_count of a FULL chunk: the records still parse, so a warning, not an error */
    {
        FRESH();
        c[co + 28] ^= 0x40;
        write_bad(c, img_len);
        pgr_reader *r = pgr_open(bad);
        long n = count_records(r);
        CHECK(pgr_error(r) == NULL);
        CHECK_EQ(n, all);
        CHECK_EQ(pgr_warning_count(r), 1);
        printf("%-28s -> warning at byte %llu: %s\n", "record_count",
               (unsigned long long)pgr_warning(r, 0)->offset, pgr_warning(r, 0)->message);
        CHECK(strstr(pgr_warning(r, 0)->message, "but") != NULL);
        CHECK_EQ(pgr_warning(r, 0)->offset, co + 28);
        pgr_close(r);
    }
    /* the PROCESS record's pid field (a fixint or u32) replaced by a string header */
    {
        uint64_t dc = chunk_off(defs);
        FRESH(); c[dc + 64 + 2] = 0xa1;
        char m[256];
        uint64_t o;
        size_t w;
        write_bad(c, img_len);
        read_all(bad, m, sizeof m, &o, &w);
        printf("%-28s -> byte %llu: %s\n", "field type", (unsigned long long)o, m);
        CHECK(strstr(m, "process: expected integer for pid") != NULL);
        CHECK_EQ(o, dc + 64 + 2);
    }

    /* cut short in the middle of the last used chunk: whole records read, a warning */
    {
        uint32_t last = 0;
        for (uint32_t i = 0; i < 8; i++) {
            struct pgf_chunk_header h;
            memcpy(&h, img + chunk_off(i), sizeof h);
            if (h.magic == PGF_CHUNK_MAGIC)
                last = i;
        }
        struct pgf_chunk_header h;
        memcpy(&h, img + chunk_off(last), sizeof h);
        size_t cut = (size_t)chunk_off(last) + 64 + h.committed / 2;
        write_bad(img, cut);
        long n = read_all(bad, msg, sizeof msg, &off, &warns);
        printf("%-28s -> %ld of %ld records, %zu warnings\n", "cut in a chunk", n, all, warns);
        CHECK_EQ(msg[0], 0);
        CHECK(warns >= 2); /* file cut short; chunk cut */
        CHECK(n < all && n > 0);
        /* an intact file read the same way gives every record: n is whole records only */
    }
    free(c);
    return 0;
}

static int test_fuzz(int n) {
    uint8_t *c = malloc(img_len);
    CHECK(c != NULL);
    unsigned seed = (unsigned)getpid();
    long errors = 0;
    for (int i = 0; i < n; i++) {
        memcpy(c, img, img_len);
        int flips = 1 + (int)(rand_r(&seed) % 8);
        for (int j = 0; j < flips; j++) {
            /* mostly in headers and the first bytes of chunks, where lengths live */
            size_t at = (rand_r(&seed) & 1) ? (size_t)(rand_r(&seed) % 200)
                                            : (size_t)(rand_r(&seed) % img_len);
            if (rand_r(&seed) & 1)
                at = (size_t)chunk_off((uint32_t)(rand_r(&seed) % 8)) + (size_t)(rand_r(&seed) % 160);
            c[at % img_len] = (uint8_t)rand_r(&seed);
        }
        size_t len = (rand_r(&seed) % 4) ? img_len : (size_t)(rand_r(&seed) % img_len);
        write_bad(c, len);
        char msg[256];
        uint64_t off;
        size_t warns;
        read_all(bad, msg, sizeof msg, &off, &warns);
        if (msg[0]) {
            errors++;
            CHECK(off <= img_len);
        }
    }
    printf("fuzz: %d damaged files, %ld rejected with an error, none crashed\n", n, errors);
    free(c);
    return 0;
}

static int test_pgdump(const char *pgdump) {
    char cmd[1024], out[300];
    snprintf(out, sizeof out, "%s/stderr.txt", dir);
    snprintf(cmd, sizeof cmd, "'%s' '%s' > /dev/null", pgdump, good);
    CHECK_EQ(system(cmd), 0);
    uint8_t *c = malloc(img_len);
    memcpy(c, img, img_len);
    c[9] = 1; /* version + 256 */
    write_bad(c, img_len);
    free(c);
    snprintf(cmd, sizeof cmd, "'%s' '%s' > /dev/null 2> '%s'", pgdump, bad, out);
    int st = system(cmd);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 1);
    FILE *f = fopen(out, "r");
    CHECK(f != NULL);
    char line[512];
    int lines = 0;
    while (fgets(line, sizeof line, f)) {
        lines++;
        fputs(line, stdout);
        CHECK(strstr(line, bad) == line);
        char want[64];
        snprintf(want, sizeof want, ": byte 8: unsupported format version %u",
                 PERFGROUP_FORMAT_VERSION + 256);
        CHECK(strstr(line, want) != NULL);
    }
    fclose(f);
    CHECK_EQ(lines, 1);
    return 0;
}

/* crc: the checksum against its definition — the check value, the SSE4.2 path (three
 * streams in blocks of 3 x 4096 bytes, combined) against the byte-wise table on random data
 * of every length around the block sizes, at every alignment, chained in parts. */
static int test_crc(void) {
    CHECK_EQ(pgf_crc32c(0, "123456789", 9), 0xe3069283u);
    CHECK_EQ(pgf_crc32c_table_update(0, "123456789", 9), 0xe3069283u);
    size_t max = 5 * 3 * PGF_CRC32C_BLK + 100;
    uint8_t *buf = malloc(max + 8);
    CHECK(buf != NULL);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < max + 8; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (uint8_t)x;
    }
    static const size_t lens[] = {0, 1, 7, 8, 9, 4095, 4096, 12287, 12288, 12289, 12295,
                                  24576, 24577, 65536 - 64, 65536, 5 * 3 * 4096 + 99};
    for (size_t a = 0; a < 8; a++)
        for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
            size_t n = lens[k] <= max ? lens[k] : max;
            uint32_t want = pgf_crc32c_table_update(0x1234u, buf + a, n);
            CHECK_EQ(pgf_crc32c(0x1234u, buf + a, n), want);
            size_t half = n / 3; /* in two parts: the chain */
            CHECK_EQ(pgf_crc32c(pgf_crc32c(0x1234u, buf + a, half), buf + a + half, n - half), want);
        }
    for (int r = 0; r < 2000; r++) { /* random lengths */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t n = (size_t)(x % max), a = (size_t)(x >> 40) % 8;
        CHECK_EQ(pgf_crc32c(0, buf + a, n), pgf_crc32c_table_update(0, buf + a, n));
    }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    const char *how = pgf_crc32c_have_sse42() ? "used" : "not available (table only)";
#else
    const char *how = "not on this architecture (table only)";
#endif
    printf("crc: SSE4.2 %s; check value, %d lengths x 8 alignments, 2000 random lengths\n",
           how, (int)(sizeof lens / sizeof lens[0]));
    free(buf);
    return 0;
}

/* good OUT: the good recording as the writer left it (format version 2, sealed chunks): the
 * seed tests/converter/fuzz/seeds/v2-sealed.seed was made with it. */
static int test_good(const char *out) {
    FILE *f = fopen(out, "wb");
    CHECK(f != NULL);
    CHECK_EQ(fwrite(img, 1, img_len, f), img_len);
    CHECK_EQ(fclose(f), 0);
    return 0;
}

/* corrupt OUT: the good recording with one bit flipped in the records of its first sealed
 * data chunk, written to OUT (for the converter's tests: the chunk must be skipped, counted
 * and reported in every output). */
static int test_corrupt(const char *out) {
    uint64_t co = chunk_off(find_chunk(PGF_CHUNK_DATA));
    struct pgf_chunk_header h;
    memcpy(&h, img + co, sizeof h);
    CHECK_EQ(h.state, PGF_CSTATE_FULL);
    img[co + 64 + h.committed / 2] ^= 0x10;
    FILE *f = fopen(out, "wb");
    CHECK(f != NULL);
    CHECK_EQ(fwrite(img, 1, img_len, f), img_len);
    CHECK_EQ(fclose(f), 0);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    make_good();
    int rc = 2;
    if (!strcmp(argv[1], "errors"))
        rc = test_errors();
    else if (!strcmp(argv[1], "fuzz"))
        rc = test_fuzz(argc > 2 ? atoi(argv[2]) : 2000);
    else if (!strcmp(argv[1], "crc"))
        rc = test_crc();
    else if (!strcmp(argv[1], "good") && argc > 2)
        rc = test_good(argv[2]);
    else if (!strcmp(argv[1], "corrupt") && argc > 2)
        rc = test_corrupt(argv[2]);
    else if (!strcmp(argv[1], "pgdump") && argc > 2)
        rc = test_pgdump(argv[2]);
    if (rc == 0) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK_EQ(system(cmd), 0);
    }
    free(img);
    return rc;
}
