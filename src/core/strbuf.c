/* strbuf.c - a growable NUL-terminated string whose allocation failure is checked once, at the end */
#include "judgerl/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jr_strbuf_addn(jr_strbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) { b->oom = 1; return; }
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void jr_strbuf_add(jr_strbuf *b, const char *s) { jr_strbuf_addn(b, s, strlen(s)); }

void jr_strbuf_addc(jr_strbuf *b, char c) { jr_strbuf_addn(b, &c, 1); }

void jr_strbuf_addf(jr_strbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0) { b->oom = 1; return; }
    jr_strbuf_addn(b, s, (size_t)n);
    free(s);
}

char *jr_strbuf_take(jr_strbuf *b) {
    char *p = b->p;
    if (b->oom) { free(p); p = NULL; }
    else if (!p) p = strdup("");
    b->p = NULL;
    b->n = b->cap = 0;
    return p;
}

void jr_strbuf_free(jr_strbuf *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

char *jr_strfmt(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    return s;
}
