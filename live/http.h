/* SPDX-License-Identifier: MIT */
/*
 * http.h — the HTTP server of `perfgroup metrics --listen` (http.c) as metrics.c drives it.
 */
#ifndef PGL_HTTP_H
#define PGL_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "live.h"

#define PGL_HTTP_MAX_CONNS 64

struct conn;
struct pgl_http {
    int lfd;                               /* the listening socket, -1: none */
    struct conn *c[PGL_HTTP_MAX_CONNS];    /* connections, oldest first */
    size_t n;
    /* a scrape's page: refreshed and rendered by the caller (metrics.c), in a malloc'd
     * buffer of *len bytes, NULL when out of memory */
    char *(*render)(void *arg, size_t *len);
    void *arg;
};

/* HOST:PORT, [V6HOST]:PORT or PORT (HOST 127.0.0.1): numeric addresses only. Returns the
 * listening socket, -1 for a bad spec, -2 when it cannot listen (said on stderr). */
int pgl_http_listen(const char *spec);
/* One turn of the loop: wait for the sockets (at most until the nearest deadline or
 * `until_ms`, -1: none), then accept, read, answer, send, and close what is done or late. */
void pgl_http_turn(struct pgl_http *sv, int64_t until_ms);
/* Closes every connection and the listening socket. */
void pgl_http_close(struct pgl_http *sv);
/* CLOCK_MONOTONIC in ms. */
int64_t pgl_now_ms(void);

#endif /* PGL_HTTP_H */
