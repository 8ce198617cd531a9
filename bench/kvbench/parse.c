/* SPDX-License-Identifier: MIT */
/*
 * bench/kvbench/parse.c — tokenizer and parser of the command language (group parse):
 *
 *   SET <key> { <field>: <int|"string">, ... }     APPEND <key> <field> "string"
 *   GET <key>        DEL <key>                     INCR <key> <field> <int>
 *   SCAN <lo> <hi> LIMIT <n>                       TOP <n> BY <field>        COUNT
 *
 * Strings are kept as slices of the line (escapes are left in and counted as text).
 */
#include <string.h>

#include "kv.h"

struct lexer {
    const char *p, *end;
};

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_word_char(char c)
{
    return is_alpha(c) || is_digit(c) || c == '_' || c == ':' || c == '-' || c == '.';
}

static void skip_space(struct lexer *lx)
{
    while (lx->p < lx->end && is_space(*lx->p))
        lx->p++;
}

static int at_end(const struct lexer *lx)
{
    return lx->p >= lx->end;
}

static char peek(const struct lexer *lx)
{
    return at_end(lx) ? '\0' : *lx->p;
}

static struct tok make_tok(enum tok_kind k, const char *s, size_t n)
{
    struct tok t;
    t.kind = k;
    t.s = s;
    t.n = n;
    t.i = 0;
    return t;
}

static int64_t digits_value(const char *s, size_t n, int *overflow)
{
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        int d = s[i] - '0';
        if (v > (INT64_MAX - d) / 10) {
            *overflow = 1;
            return 0;
        }
        v = v * 10 + d;
    }
    return v;
}

static struct tok lex_number(struct lexer *lx)
{
    const char *s = lx->p;
    int neg = 0;
    if (peek(lx) == '-') {
        neg = 1;
        lx->p++;
    }
    const char *d = lx->p;
    while (!at_end(lx) && is_digit(*lx->p))
        lx->p++;
    if (lx->p == d || (!at_end(lx) && is_word_char(*lx->p) && !is_digit(*lx->p))) {
        while (!at_end(lx) && is_word_char(*lx->p))
            lx->p++;
        return make_tok(T_WORD, s, (size_t)(lx->p - s));
    }
    int overflow = 0;
    struct tok t = make_tok(T_INT, s, (size_t)(lx->p - s));
    t.i = digits_value(d, (size_t)(lx->p - d), &overflow);
    if (overflow)
        t.kind = T_BAD;
    if (neg)
        t.i = -t.i;
    return t;
}

static struct tok lex_word(struct lexer *lx)
{
    const char *s = lx->p;
    while (!at_end(lx) && is_word_char(*lx->p))
        lx->p++;
    return make_tok(T_WORD, s, (size_t)(lx->p - s));
}

static struct tok lex_string(struct lexer *lx)
{
    const char *s = ++lx->p;
    while (!at_end(lx) && *lx->p != '"') {
        if (*lx->p == '\\' && lx->p + 1 < lx->end)
            lx->p++;
        lx->p++;
    }
    if (at_end(lx))
        return make_tok(T_BAD, s, 0);
    struct tok t = make_tok(T_STR, s, (size_t)(lx->p - s));
    lx->p++;
    return t;
}

static struct tok lex_punct(struct lexer *lx)
{
    char c = *lx->p++;
    switch (c) {
    case '{': return make_tok(T_LBRACE, lx->p - 1, 1);
    case '}': return make_tok(T_RBRACE, lx->p - 1, 1);
    case ':': return make_tok(T_COLON, lx->p - 1, 1);
    case ',': return make_tok(T_COMMA, lx->p - 1, 1);
    case '=': return make_tok(T_EQ, lx->p - 1, 1);
    default: return make_tok(T_BAD, lx->p - 1, 1);
    }
}

static struct tok next_tok(struct lexer *lx)
{
    skip_space(lx);
    if (at_end(lx))
        return make_tok(T_END, lx->p, 0);
    char c = *lx->p;
    if (is_digit(c) || (c == '-' && lx->p + 1 < lx->end && is_digit(lx->p[1])))
        return lex_number(lx);
    if (is_alpha(c) || c == '_')
        return lex_word(lx);
    if (c == '"')
        return lex_string(lx);
    return lex_punct(lx);
}

/* ---- the parser ---- */

struct parser {
    struct lexer lx;
    struct tok cur;
    int err;
};

static void advance(struct parser *ps)
{
    ps->cur = next_tok(&ps->lx);
}

static int accept(struct parser *ps, enum tok_kind k)
{
    if (ps->cur.kind != k)
        return 0;
    advance(ps);
    return 1;
}

static int expect(struct parser *ps, enum tok_kind k, struct tok *out)
{
    if (ps->cur.kind != k) {
        ps->err = 1;
        return 0;
    }
    if (out)
        *out = ps->cur;
    advance(ps);
    return 1;
}

static int word_is(const struct tok *t, const char *w)
{
    size_t n = strlen(w);
    if (t->kind != T_WORD || t->n != n)
        return 0;
    char low[16];
    if (n >= sizeof low)
        return 0;
    text_lower(low, t->s, n);
    return memcmp(low, w, n) == 0;
}

static enum cmd_kind command_kind(const struct tok *t)
{
    static const struct { const char *w; enum cmd_kind k; } table[] = {
        {"set", C_SET}, {"get", C_GET}, {"del", C_DEL}, {"incr", C_INCR},
        {"scan", C_SCAN}, {"top", C_TOP}, {"count", C_COUNT}, {"append", C_APPEND},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (word_is(t, table[i].w))
            return table[i].k;
    return C_BAD;
}

static int parse_key(struct parser *ps, const char **key, size_t *n)
{
    struct tok t;
    if (!expect(ps, T_WORD, &t))
        return 0;
    *key = t.s;
    *n = t.n;
    return 1;
}

static int parse_value(struct parser *ps, struct field *f)
{
    if (ps->cur.kind == T_INT) {
        f->is_int = 1;
        f->ival = ps->cur.i;
        f->sval = NULL;
        f->slen = 0;
        advance(ps);
        return 1;
    }
    struct tok t;
    if (!expect(ps, T_STR, &t))
        return 0;
    f->is_int = 0;
    f->ival = 0;
    f->sval = t.s;
    f->slen = t.n;
    return 1;
}

static int parse_field(struct parser *ps, struct field *f)
{
    struct tok name;
    if (!expect(ps, T_WORD, &name))
        return 0;
    f->name = name.s;
    f->nlen = name.n;
    if (name.n > 1 && name.s[name.n - 1] == ':') { /* "name:" lexes as one word */
        f->nlen--;
        return parse_value(ps, f);
    }
    if (!accept(ps, T_COLON) && !accept(ps, T_EQ)) {
        ps->err = 1;
        return 0;
    }
    return parse_value(ps, f);
}

static int parse_object(struct parser *ps, struct cmd *c)
{
    if (!expect(ps, T_LBRACE, NULL))
        return 0;
    c->nf = 0;
    if (accept(ps, T_RBRACE))
        return 1;
    do {
        if (c->nf >= MAX_FIELDS) {
            ps->err = 1;
            return 0;
        }
        if (!parse_field(ps, &c->f[c->nf]))
            return 0;
        c->nf++;
    } while (accept(ps, T_COMMA));
    return expect(ps, T_RBRACE, NULL);
}

static int parse_int(struct parser *ps, int64_t *v)
{
    struct tok t;
    if (!expect(ps, T_INT, &t))
        return 0;
    *v = t.i;
    return 1;
}

static int parse_keyword(struct parser *ps, const char *w)
{
    if (!word_is(&ps->cur, w)) {
        ps->err = 1;
        return 0;
    }
    advance(ps);
    return 1;
}

static int parse_set(struct parser *ps, struct cmd *c)
{
    return parse_key(ps, &c->key, &c->klen) && parse_object(ps, c);
}

static int parse_incr(struct parser *ps, struct cmd *c)
{
    return parse_key(ps, &c->key, &c->klen) && parse_key(ps, &c->by, &c->bylen) &&
           parse_int(ps, &c->n);
}

static int parse_append(struct parser *ps, struct cmd *c)
{
    if (!parse_key(ps, &c->key, &c->klen) || !parse_key(ps, &c->by, &c->bylen))
        return 0;
    struct tok t;
    if (!expect(ps, T_STR, &t))
        return 0;
    c->f[0].name = c->by;
    c->f[0].nlen = c->bylen;
    c->f[0].sval = t.s;
    c->f[0].slen = t.n;
    c->f[0].is_int = 0;
    c->f[0].ival = 0;
    c->nf = 1;
    return 1;
}

static int parse_scan(struct parser *ps, struct cmd *c)
{
    return parse_key(ps, &c->key, &c->klen) && parse_key(ps, &c->key2, &c->k2len) &&
           parse_keyword(ps, "limit") && parse_int(ps, &c->n);
}

static int parse_top(struct parser *ps, struct cmd *c)
{
    return parse_int(ps, &c->n) && parse_keyword(ps, "by") && parse_key(ps, &c->by, &c->bylen);
}

static void cmd_clear(struct cmd *c)
{
    memset(c, 0, sizeof *c);
}

static int parse_body(struct parser *ps, struct cmd *c)
{
    switch (c->kind) {
    case C_SET: return parse_set(ps, c);
    case C_GET:
    case C_DEL: return parse_key(ps, &c->key, &c->klen);
    case C_INCR: return parse_incr(ps, c);
    case C_APPEND: return parse_append(ps, c);
    case C_SCAN: return parse_scan(ps, c);
    case C_TOP: return parse_top(ps, c);
    case C_COUNT: return 1;
    default: return 0;
    }
}

int parse_command(const char *line, size_t n, struct cmd *c)
{
    struct parser ps;
    ps.lx.p = line;
    ps.lx.end = line + n;
    ps.err = 0;
    cmd_clear(c);
    advance(&ps);
    c->kind = command_kind(&ps.cur);
    if (c->kind == C_BAD)
        return -1;
    advance(&ps);
    if (!parse_body(&ps, c) || ps.err || ps.cur.kind != T_END) {
        c->kind = C_BAD;
        return -1;
    }
    return 0;
}
