/* SPDX-License-Identifier: MIT */
/*
 * pgread.c — the converter benchmark's baseline: read every record of a recording with
 * pgreader and do nothing else. perfgroup-convert's time is reported against this.
 *
 *   pgread FILE.pgm      prints the record count
 */
#include <stdio.h>

#include "pgreader.h"

int main(int argc, char **argv)
{
    if (argc != 2)
        return 1;
    pgr_reader *r = pgr_open(argv[1]);
    struct pgr_record rec;
    unsigned long long n = 0;
    while (r && pgr_next(r, &rec) > 0)
        n++;
    int bad = !r || pgr_error(r) != NULL;
    printf("%llu\n", n);
    pgr_close(r);
    return bad;
}
