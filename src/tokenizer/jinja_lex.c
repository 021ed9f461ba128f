/* jinja_lex.c - the chat-template lexer: the arena, segments (text, {{ }}, {% %}, comments, raw)
 * with whitespace control, and each tag's tokens */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/jinja_internal.h"

void *jinja_alloc(arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (!a->head || a->head->used + n > a->head->cap) {
        size_t cap = n > 65536 ? n : 65536;
        ablk *b = malloc(sizeof *b + cap);
        if (!b) return NULL;
        b->next = a->head;
        b->used = 0;
        b->cap = cap;
        a->head = b;
    }
    void *p = a->head->data + a->head->used;
    a->head->used += n;
    memset(p, 0, n);
    return p;
}

void jinja_arena_free(arena *a) {
    while (a->head) { ablk *n = a->head->next; free(a->head); a->head = n; }
}

int jinja_perr(pctx *p, int line, const char *fmt, ...) {
    if (p->failed) return -1;
    char m[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    snprintf(p->err, sizeof p->err, "%s: line %d: %s", p->name, line, m);
    p->failed = 1;
    return -1;
}

static int is_ident(int c, int first) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9');
}

/* Tokenizes the inside of a tag, src[0..n). */
static tok *lex_tag(pctx *p, const char *src, size_t n, int line) {
    size_t cap = 16, cnt = 0;
    tok *v = jinja_alloc(p->ar, cap * sizeof *v);
    if (!v) return NULL;
    size_t i = 0;
    for (;;) {
        while (i < n && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r')) {
            if (src[i] == '\n') line++;
            i++;
        }
        if (cnt + 1 >= cap) {
            tok *nv = jinja_alloc(p->ar, cap * 2 * sizeof *nv);
            if (!nv) return NULL;
            memcpy(nv, v, cnt * sizeof *v);
            v = nv;
            cap *= 2;
        }
        tok *t = &v[cnt];
        t->line = line;
        if (i >= n) { t->type = TK_EOF; return v; }
        char c = src[i];
        if (is_ident((unsigned char)c, 1)) {
            size_t j = i;
            while (j < n && is_ident((unsigned char)src[j], 0)) j++;
            t->type = TK_NAME; t->s = src + i; t->n = j - i; i = j;
        } else if (c >= '0' && c <= '9') {
            size_t j = i;
            int isf = 0;
            while (j < n && ((src[j] >= '0' && src[j] <= '9') || src[j] == '_')) j++;
            if (j + 1 < n && src[j] == '.' && src[j + 1] >= '0' && src[j + 1] <= '9') {
                isf = 1; j++;
                while (j < n && src[j] >= '0' && src[j] <= '9') j++;
            }
            if (j < n && (src[j] == 'e' || src[j] == 'E')) {
                size_t k = j + 1;
                if (k < n && (src[k] == '+' || src[k] == '-')) k++;
                if (k < n && src[k] >= '0' && src[k] <= '9') {
                    isf = 1; j = k;
                    while (j < n && src[j] >= '0' && src[j] <= '9') j++;
                }
            }
            char buf[64];
            size_t l = j - i < 63 ? j - i : 63, o = 0;
            for (size_t q = 0; q < l; q++) if (src[i + q] != '_') buf[o++] = src[i + q];
            buf[o] = 0;
            if (isf) { t->type = TK_FLOAT; t->f = strtod(buf, NULL); }
            else { t->type = TK_INT; t->i = strtoll(buf, NULL, 10); }
            i = j;
        } else if (c == '\'' || c == '"') {
            char *out = jinja_alloc(p->ar, n - i + 1);
            if (!out) return NULL;
            size_t o = 0, j = i + 1;
            while (j < n && src[j] != c) {
                if (src[j] == '\\' && j + 1 < n) {
                    char e = src[++j];
                    switch (e) {
                    case 'n': out[o++] = '\n'; break;
                    case 't': out[o++] = '\t'; break;
                    case 'r': out[o++] = '\r'; break;
                    case '\\': out[o++] = '\\'; break;
                    case '\'': out[o++] = '\''; break;
                    case '"': out[o++] = '"'; break;
                    case '\n': line++; break;
                    default: out[o++] = '\\'; out[o++] = e; break;
                    }
                    j++;
                    continue;
                }
                if (src[j] == '\n') line++;
                out[o++] = src[j++];
            }
            if (j >= n) { jinja_perr(p, t->line, "unterminated string literal"); return NULL; }
            t->type = TK_STR; t->s = out; t->n = o; i = j + 1;
        } else {
            static const char *ops[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">", "=",
                                        "(", ")", "[", "]", "{", "}", ",", ".", ":", "|", NULL};
            int k;
            for (k = 0; ops[k]; k++) {
                size_t l = strlen(ops[k]);
                if (i + l <= n && !memcmp(src + i, ops[k], l)) break;
            }
            if (!ops[k]) { jinja_perr(p, line, "unexpected character '%c' in a tag", c); return NULL; }
            t->type = TK_OP; t->s = ops[k]; t->n = strlen(ops[k]); i += t->n;
        }
        cnt++;
    }
}

/* Splits the template into text / expression / statement segments applying whitespace control,
 * trim_blocks and lstrip_blocks. */
seg *jinja_lex(pctx *p, const char *src0, size_t *nseg) {
    /* newlines normalised to \n and one trailing newline dropped, as jinja2 does */
    size_t n0 = strlen(src0);
    char *src = jinja_alloc(p->ar, n0 + 1);
    if (!src) return NULL;
    size_t n = 0;
    for (size_t i = 0; i < n0; i++) {
        if (src0[i] == '\r') { src[n++] = '\n'; if (i + 1 < n0 && src0[i + 1] == '\n') i++; }
        else src[n++] = src0[i];
    }
    if (n && src[n - 1] == '\n') n--;
    src[n] = 0;
    size_t cap = 64, cnt = 0;
    seg *v = jinja_alloc(p->ar, cap * sizeof *v);
    if (!v) return NULL;
    size_t i = 0;
    int line = 1, strip_next = 0, trim_nl = 0;
    while (i <= n) {
        /* find the next tag start */
        size_t j = i;
        const char *open = NULL;
        while (j + 1 < n) {
            if (src[j] == '{' && (src[j + 1] == '{' || src[j + 1] == '%' || src[j + 1] == '#')) { open = src + j; break; }
            j++;
        }
        size_t tend = open ? j : n;
        size_t ts = i;
        if (strip_next) while (ts < tend && (src[ts] == ' ' || src[ts] == '\t' || src[ts] == '\n')) ts++;
        else if (trim_nl && ts < tend && src[ts] == '\n') ts++;
        size_t te = tend;
        int kind = open ? (open[1] == '{' ? SEG_EXPR : open[1] == '%' ? SEG_STMT : -1) : 0;
        if (open && open[2] == '-') {
            while (te > ts && (src[te - 1] == ' ' || src[te - 1] == '\t' || src[te - 1] == '\n')) te--;
        } else if (open && kind != SEG_EXPR && open[2] != '+') {
            /* lstrip_blocks: spaces/tabs between a line start and a block or comment tag */
            size_t k = te;
            while (k > ts && (src[k - 1] == ' ' || src[k - 1] == '\t')) k--;
            if (k == 0 || src[k - 1] == '\n') te = k;
        }
        if (cnt + 2 >= cap) {
            seg *nv = jinja_alloc(p->ar, cap * 2 * sizeof *nv);
            if (!nv) return NULL;
            memcpy(nv, v, cnt * sizeof *v);
            v = nv;
            cap *= 2;
        }
        if (te > ts) { v[cnt].kind = SEG_TEXT; v[cnt].text = src + ts; v[cnt].n = te - ts; v[cnt].line = line; cnt++; }
        for (size_t q = i; q < tend; q++) if (src[q] == '\n') line++;
        if (!open) break;
        /* the tag body */
        size_t b = j + 2;
        if (b < n && (src[b] == '-' || src[b] == '+')) b++;
        const char *close = kind == SEG_EXPR ? "}}" : kind == SEG_STMT ? "%}" : "#}";
        size_t e = b;
        int in_str = 0, found = 0;
        while (e + 1 < n) {
            if (kind != -1) {
                if (!in_str && (src[e] == '\'' || src[e] == '"')) { in_str = src[e]; e++; continue; }
                if (in_str && src[e] == '\\') { e += 2; continue; }
                if (in_str && src[e] == in_str) { in_str = 0; e++; continue; }
            }
            if (!in_str && src[e] == close[0] && src[e + 1] == close[1]) { found = 1; break; }
            e++;
        }
        if (!found) {
            jinja_perr(p, line, "unclosed '%.2s' (no '%s' follows)", open, close);
            return NULL;
        }
        size_t be = e;
        strip_next = be > b && src[be - 1] == '-';
        if (strip_next) be--;
        trim_nl = kind != SEG_EXPR; /* trim_blocks: after a block or comment tag */
        int tline = line;
        for (size_t q = j; q < e + 2; q++) if (src[q] == '\n') line++;
        if (kind == SEG_STMT) {
            /* {% raw %} ... {% endraw %} */
            tok *tk = lex_tag(p, src + b, be - b, tline);
            if (!tk) return NULL;
            if (tk[0].type == TK_NAME && tk[0].n == 3 && !memcmp(tk[0].s, "raw", 3) && tk[1].type == TK_EOF) {
                const char *er = strstr(src + e + 2, "endraw");
                const char *st = er;
                while (st && st > src + e + 2 && st[-1] != '{') st--;
                if (!er || st <= src + e + 2) { jinja_perr(p, tline, "{%% raw %%} without {%% endraw %%}"); return NULL; }
                size_t rs = e + 2, re = (size_t)(st - 1 - src);
                if (re > rs) { v[cnt].kind = SEG_TEXT; v[cnt].text = src + rs; v[cnt].n = re - rs; v[cnt].line = tline; cnt++; }
                const char *ce = strstr(er, "%}");
                if (!ce) { jinja_perr(p, tline, "unclosed endraw"); return NULL; }
                for (const char *q = src + e + 2; q < ce; q++) if (*q == '\n') line++;
                strip_next = ce[-1] == '-';
                i = (size_t)(ce + 2 - src);
                continue;
            }
            v[cnt].kind = SEG_STMT; v[cnt].toks = tk; v[cnt].line = tline; cnt++;
        } else if (kind == SEG_EXPR) {
            tok *tk = lex_tag(p, src + b, be - b, tline);
            if (!tk) return NULL;
            v[cnt].kind = SEG_EXPR; v[cnt].toks = tk; v[cnt].line = tline; cnt++;
        }
        i = e + 2;
    }
    *nseg = cnt;
    return v;
}

