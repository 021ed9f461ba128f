/* strbuf.c - a growable NUL-terminated string whose allocation failure is checked once, at the end */
#include "judgerl/strbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Makes room for n more bytes and the NUL; 0 after an allocation failure (oom set). */
static int reserve(jr_strbuf *b, size_t n) {
    if (b->oom) return 0;
    if (b->n + n + 1 <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) { b->oom = 1; return 0; }
    b->p = p;
    b->cap = cap;
    return 1;
}

void jr_strbuf_addn(jr_strbuf *b, const char *s, size_t n) {
    uintptr_t at = (uintptr_t)s, base = (uintptr_t)b->p;
    int inside = b->p && at >= base && at < base + b->cap; /* a copy of the buffer's own bytes */
    size_t off = inside ? (size_t)(at - base) : 0;
    if (!reserve(b, n)) return;
    if (inside) s = b->p + off;
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void jr_strbuf_add(jr_strbuf *b, const char *s) { jr_strbuf_addn(b, s, strlen(s)); }

void jr_strbuf_addc(jr_strbuf *b, char c) { jr_strbuf_addn(b, &c, 1); }

void jr_strbuf_addf(jr_strbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    jr_strbuf_vaddf(b, fmt, ap);
    va_end(ap);
}

void jr_strbuf_vaddf(jr_strbuf *b, const char *fmt, va_list ap) {
    for (int tries = 0; tries < 2 && !b->oom; tries++) { /* formatted in place; once more after growing */
        va_list aq;
        va_copy(aq, ap);
        size_t room = b->p ? b->cap - b->n : 0;
        int n = vsnprintf(b->p ? b->p + b->n : NULL, room, fmt, aq);
        va_end(aq);
        if (n < 0) { b->oom = 1; return; }
        if ((size_t)n < room) { b->n += (size_t)n; return; }
        if (!reserve(b, (size_t)n)) return;
    }
}

void jr_strbuf_reset(jr_strbuf *b) {
    b->n = 0;
    if (b->p) b->p[0] = 0;
}

char *jr_strbuf_take(jr_strbuf *b) {
    char *p = b->p;
    if (b->oom) { free(p); p = NULL; }
    else if (!p) p = strdup("");
    *b = (jr_strbuf){0};
    return p;
}

void jr_strbuf_free(jr_strbuf *b) {
    free(b->p);
    *b = (jr_strbuf){0};
}

char *jr_strfmt(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    return s;
}
