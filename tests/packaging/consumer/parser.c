/* SPDX-License-Identifier: MIT */
/* parser.c — put in group "parser" by groups.map. */
int parse(const char *s);

int parse(const char *s)
{
    int n = 0;
    while (*s >= '0' && *s <= '9')
        n = 10 * n + (*s++ - '0');
    return n;
}
