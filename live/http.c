/* SPDX-License-Identifier: MIT */
/*
 * http.c — the HTTP server of `perfgroup metrics --listen` (metrics.c): GET and HEAD /metrics.
 *
 * One thread, one poll() loop, every socket non-blocking: a client that is slow, idle or
 * never reads its answer costs a slot and a deadline, never the loop's time. A scrape's
 * only wait is the refresh and render of the requests that completed with or before it:
 * the requests complete in one turn of the loop share one refresh and one page.
 *
 *   connection  state    poll      leaves when
 *   accepted    READING  POLLIN    the request line and headers are in (a blank line):
 *                                  answered at once (SENDING), or the client closes (gone),
 *                                  or REQUEST_MS since accept (408), or 8 KiB without an end (431)
 *   answered    SENDING  POLLOUT   the answer is sent: LINGER; or CONN_MS since accept (closed)
 *   sent        LINGER   POLLIN    the client closes, or LINGER_MS: closed (what it still
 *                                  sends is read and dropped, so a request body unread does
 *                                  not turn the close into a reset that loses the answer)
 *
 * At most PGL_HTTP_MAX_CONNS connections; one more closes the oldest still reading its
 * request (a scraper sends its request as it connects, so that is a slow or idle one), else
 * the oldest. Memory: PGL_HTTP_MAX_CONNS request buffers and the pages being sent (one per
 * refresh, shared by the answers made from it).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http.h"

#define REQ_MAX 8192
#define REQUEST_MS 5000   /* the whole request, from accept: not per byte */
#define CONN_MS 10000     /* the whole exchange, answer included (Prometheus's default timeout) */
#define LINGER_MS 1000

enum conn_state { C_READING, C_SENDING, C_LINGER };

struct page {
    char *buf;
    size_t len;
    unsigned refs;
};

struct conn {
    int fd;
    enum conn_state state;
    int64_t accepted_ms, deadline_ms;
    size_t got;
    char req[REQ_MAX];
    char head[320];         /* status line and headers */
    size_t head_len, sent;  /* sent counts head, then body */
    struct page *body;      /* NULL: no body (HEAD, errors carry theirs in head) */
};

static void page_put(struct page *p)
{
    if (p && --p->refs == 0) {
        free(p->buf);
        free(p);
    }
}

static void conn_close(struct pgl_http *sv, size_t i)
{
    struct conn *c = sv->c[i];
    close(c->fd);
    page_put(c->body);
    free(c);
    sv->c[i] = sv->c[--sv->n];
}

static void conn_accept(struct pgl_http *sv)
{
    for (int k = 0; k < PGL_HTTP_MAX_CONNS; k++) { /* what is pending now, in one turn */
        int fd = accept4(sv->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return; /* EAGAIN, or a connection reset in the backlog: the next turn */
        if (sv->n == PGL_HTTP_MAX_CONNS) { /* the oldest still reading its request, else the oldest */
            size_t old = 0;
            for (size_t i = 1; i < sv->n; i++) {
                const struct conn *a = sv->c[i], *b = sv->c[old];
                int ar = a->state == C_READING, br = b->state == C_READING;
                if (ar != br ? ar : a->accepted_ms < b->accepted_ms)
                    old = i;
            }
            conn_close(sv, old);
        }
        struct conn *c = malloc(sizeof(*c));
        if (!c) {
            close(fd);
            return;
        }
        c->fd = fd;
        c->state = C_READING;
        c->accepted_ms = pgl_now_ms();
        c->deadline_ms = c->accepted_ms + REQUEST_MS;
        c->got = c->head_len = c->sent = 0;
        c->body = NULL;
        sv->c[sv->n++] = c;
    }
}

/* An answer without a page: status, then a one-line plain text body. */
static void answer_text(struct conn *c, const char *status, const char *extra, const char *text)
{
    int n = snprintf(c->head, sizeof(c->head), "HTTP/1.0 %s\r\nContent-Type: text/plain; "
                     "charset=utf-8\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n%s",
                     status, strlen(text), extra, text);
    c->head_len = n < (int)sizeof(c->head) ? (size_t)n : sizeof(c->head) - 1;
    c->state = C_SENDING;
    c->deadline_ms = c->accepted_ms + CONN_MS;
}

/* The request's end (a blank line) is in: 1 = GET or HEAD of /metrics (answered from the
 * page), 0 = answered already (an error). */
static int parse_request(struct conn *c, int *head)
{
    c->req[c->got] = '\0';
    size_t m = strcspn(c->req, " \r\n");
    const char *target = c->req + m + 1;
    size_t t = c->req[m] == ' ' ? strcspn(target, " \r\n") : 0;
    if (!m || !t || target[t] != ' ' || strncmp(target + t + 1, "HTTP/1.", 7)) {
        answer_text(c, "400 Bad Request", "", "perfgroup metrics: GET /metrics\n");
        return 0;
    }
    *head = m == 4 && !strncmp(c->req, "HEAD", 4);
    if (!*head && !(m == 3 && !strncmp(c->req, "GET", 3))) {
        answer_text(c, "405 Method Not Allowed", "Allow: GET, HEAD\r\n",
                    "perfgroup metrics: GET /metrics (or HEAD)\n");
        return 0;
    }
    if (!((t == 8 || (t > 8 && target[8] == '?')) && !strncmp(target, "/metrics", 8))) {
        answer_text(c, "404 Not Found", "", "perfgroup metrics: GET /metrics\n");
        return 0;
    }
    return 1;
}

static void conn_read(struct conn *c, int *ready)
{
    for (;;) {
        if (c->got == REQ_MAX - 1) {
            answer_text(c, "431 Request Header Fields Too Large", "",
                        "perfgroup metrics: a request of at most 8 KiB\n");
            return;
        }
        ssize_t n = recv(c->fd, c->req + c->got, REQ_MAX - 1 - c->got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            c->deadline_ms = 0; /* gone before its request was whole: closed */
            return;
        }
        size_t from = c->got > 3 ? c->got - 3 : 0;
        c->got += (size_t)n;
        c->req[c->got] = '\0';
        /* memmem: a request may hold NUL bytes (a TLS hello): 400, not a wait for 408 */
        if (memmem(c->req + from, c->got - from, "\r\n\r\n", 4) ||
            memmem(c->req + from, c->got - from, "\n\n", 2)) {
            *ready = 1;
            return;
        }
    }
}

/* 1 = done with it (sent, or the client is gone) */
static int conn_send(struct conn *c)
{
    size_t body = c->body ? c->body->len : 0;
    while (c->sent < c->head_len + body) {
        const char *p = c->sent < c->head_len ? c->head + c->sent
                                              : c->body->buf + (c->sent - c->head_len);
        size_t n = c->sent < c->head_len ? c->head_len - c->sent : c->head_len + body - c->sent;
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (w <= 0)
            return 1;
        c->sent += (size_t)w;
    }
    return 1;
}

/* Answers every connection whose request is whole: the GETs and HEADs from one refresh and
 * one page. */
static void answer_ready(struct pgl_http *sv, const unsigned char *ready)
{
    struct page *pg = NULL;
    int rendered = 0;
    for (size_t i = 0; i < sv->n; i++) {
        struct conn *c = sv->c[i];
        int head;
        if (!ready[i] || c->state != C_READING || !parse_request(c, &head))
            continue;
        if (!rendered) {
            rendered = 1;
            pg = calloc(1, sizeof(*pg));
            if (pg && !(pg->buf = sv->render(sv->arg, &pg->len))) {
                free(pg);
                pg = NULL;
            }
        }
        if (!pg) {
            answer_text(c, "500 Internal Server Error", "", "perfgroup metrics: out of memory\n");
            continue;
        }
        int n = snprintf(c->head, sizeof(c->head), "HTTP/1.0 200 OK\r\nContent-Type: text/plain; "
                         "version=0.0.4; charset=utf-8\r\nContent-Length: %zu\r\n"
                         "Connection: close\r\n\r\n", pg->len);
        c->head_len = (size_t)n;
        c->state = C_SENDING;
        c->deadline_ms = c->accepted_ms + CONN_MS;
        if (!head) {
            c->body = pg;
            pg->refs++;
        }
    }
    if (pg && !pg->refs) {
        free(pg->buf);
        free(pg);
    }
}

/* One turn of the loop: wait for the sockets (at most until the nearest deadline or
 * `until_ms`), then accept, read, answer, send, and close what is done or late. */
void pgl_http_turn(struct pgl_http *sv, int64_t until_ms)
{
    struct pollfd p[PGL_HTTP_MAX_CONNS + 1];
    int64_t now = pgl_now_ms(), wake = until_ms;
    p[0] = (struct pollfd){sv->lfd, POLLIN, 0};
    for (size_t i = 0; i < sv->n; i++) {
        struct conn *c = sv->c[i];
        p[i + 1] = (struct pollfd){c->fd, c->state == C_SENDING ? POLLOUT : POLLIN, 0};
        if (wake < 0 || c->deadline_ms < wake)
            wake = c->deadline_ms;
    }
    int timeout = wake < 0 ? -1 : wake <= now ? 0 : wake - now > 60000 ? 60000 : (int)(wake - now);
    size_t n = sv->n;
    if (poll(p, n + 1, timeout) < 0)
        return; /* EINTR: a signal; the caller looks at it */
    unsigned char ready[PGL_HTTP_MAX_CONNS] = {0};
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        struct conn *c = sv->c[i];
        if (!p[i + 1].revents)
            continue;
        if (c->state == C_READING) {
            int whole = 0;
            conn_read(c, &whole);
            ready[i] = whole && c->state == C_READING && c->deadline_ms;
            any |= ready[i];
        } else if (c->state == C_LINGER) {
            char drop[4096];
            ssize_t r;
            while ((r = recv(c->fd, drop, sizeof(drop), 0)) > 0)
                ;
            if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
                c->deadline_ms = 0;
        }
    }
    if (any)
        answer_ready(sv, ready);
    now = pgl_now_ms();
    for (size_t i = sv->n; i-- > 0;) {
        struct conn *c = sv->c[i];
        if (c->state == C_SENDING && conn_send(c)) {
            shutdown(c->fd, SHUT_WR);
            c->state = C_LINGER;
            c->deadline_ms = now + LINGER_MS;
            page_put(c->body);
            c->body = NULL;
        }
        if (c->deadline_ms <= now) {
            if (c->state == C_READING && c->deadline_ms) { /* late: say so, if it listens */
                answer_text(c, "408 Request Timeout", "",
                            "perfgroup metrics: the whole request within 5 s\n");
                conn_send(c);
            }
            conn_close(sv, i);
        }
    }
    if (p[0].revents & POLLIN)
        conn_accept(sv);
}

/* HOST:PORT, [V6HOST]:PORT or PORT (HOST 127.0.0.1): numeric addresses only. Returns the
 * listening socket, -1 for a bad spec, -2 when it cannot listen (said on stderr). */
int pgl_http_listen(const char *spec)
{
    char host[64] = "127.0.0.1";
    const char *port_s = spec;
    if (spec[0] == '[') {
        const char *close_b = strchr(spec, ']');
        size_t hl = close_b ? (size_t)(close_b - spec - 1) : 0;
        if (!hl || hl >= sizeof(host) || close_b[1] != ':')
            return -1;
        memcpy(host, spec + 1, hl);
        host[hl] = '\0';
        port_s = close_b + 2;
    } else if (strchr(spec, ':')) {
        const char *colon = strrchr(spec, ':');
        size_t hl = (size_t)(colon - spec);
        if (hl == 0 || hl >= sizeof(host) || memchr(spec, ':', hl))
            return -1; /* an IPv6 address needs its brackets: [::1]:9477 */
        memcpy(host, spec, hl);
        host[hl] = '\0';
        port_s = colon + 1;
    }
    char *end;
    long port = strtol(port_s, &end, 10);
    if (!*port_s || *end || port < 0 || port > 65535)
        return -1;
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port_s, &hints, &ai) || !ai)
        return -1;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 128)) {
        fprintf(stderr, "perfgroup metrics: cannot listen on %s: %s\n", spec, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -2;
    }
    int v6 = ai->ai_family == AF_INET6;
    freeaddrinfo(ai);
    struct sockaddr_storage a;
    socklen_t al = sizeof(a);
    unsigned bound = 0;
    if (getsockname(fd, (struct sockaddr *)&a, &al) == 0)
        bound = ntohs(v6 ? ((struct sockaddr_in6 *)&a)->sin6_port
                         : ((struct sockaddr_in *)&a)->sin_port);
    fprintf(stderr, "perfgroup metrics: serving http://%s%s%s:%u/metrics\n", v6 ? "[" : "", host,
            v6 ? "]" : "", bound);
    return fd;
}

void pgl_http_close(struct pgl_http *sv)
{
    while (sv->n)
        conn_close(sv, sv->n - 1);
    int lfd = sv->lfd;
    if (lfd >= 0)
        close(lfd);
}

int64_t pgl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
