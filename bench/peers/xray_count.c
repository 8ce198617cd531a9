/* SPDX-License-Identifier: MIT */
/*
 * bench/peers/xray_count.c — count the function records of an XRay FDR log (compiler-rt 14,
 * file format version 5): the check that FDR recorded every call before its time is used.
 * A 32-byte file header, then records: bit 0 of the first byte set = a 16-byte metadata
 * record, clear = an 8-byte function record whose bits 1-3 are its kind (0 enter, 1 exit,
 * 2 tail exit, 3 enter with arguments). Usage: xray_count FILE; prints "enter=.. exit=.. ..".
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: xray_count FILE\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_size < 32) {
        fprintf(stderr, "xray_count: %s: cannot read an XRay log\n", argv[1]);
        return 1;
    }
    const uint8_t *b = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (b == MAP_FAILED) {
        perror("xray_count: mmap");
        return 1;
    }
    unsigned version = b[0] | b[1] << 8;
    uint64_t fn[8] = {0}, meta[128] = {0};
    size_t p = 32, n = (size_t)st.st_size;
    while (p + 8 <= n) {
        if (b[p] & 1) {
            unsigned kind = (b[p] >> 1) & 0x7f;
            meta[kind]++;
            if (kind == 5 || kind == 8) { /* custom/typed event: a payload follows */
                fprintf(stderr, "xray_count: %s: custom event at byte %zu not supported\n", argv[1], p);
                return 1;
            }
            p += 16;
        } else {
            fn[(b[p] >> 1) & 7]++;
            p += 8;
        }
    }
    if (p != n) {
        fprintf(stderr, "xray_count: %s: %zu trailing bytes at byte %zu\n", argv[1], n - p, p);
        return 1;
    }
    printf("version=%u enter=%llu exit=%llu tail_exit=%llu enter_args=%llu metadata=%llu\n", version,
           (unsigned long long)fn[0], (unsigned long long)fn[1], (unsigned long long)fn[2],
           (unsigned long long)fn[3],
           (unsigned long long)(meta[0] + meta[1] + meta[2] + meta[3] + meta[4] + meta[6] + meta[7] + meta[9]));
    return 0;
}
