/* jinja_parse.c - the chat-template parser: tags and expressions into an AST (jinja_parse,
 * jinja_free); constructs outside the supported subset are errors naming them */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/jinja_internal.h"

/* ------------------------------------------------------------------ parser */

static tok *cur(parser *ps) { return ps->t; }
static int is_op(tok *t, const char *op) { return t->type == TK_OP && t->n == strlen(op) && !memcmp(t->s, op, t->n); }
static int is_kw(tok *t, const char *kw) { return t->type == TK_NAME && t->n == strlen(kw) && !memcmp(t->s, kw, t->n); }
static tok *advance(parser *ps) { tok *t = ps->t; if (t->type != TK_EOF) ps->t++; return t; }

/* Nesting of expressions and blocks beyond this is an error (the parser recurses: no stack overflow). */
enum { MAX_DEPTH = 200 };

static void *too_deep(parser *ps, int line) {
    jinja_perr(ps->p, line, "template nested too deeply (over %d levels of blocks, elif branches or parentheses)", MAX_DEPTH);
    return NULL;
}

static node *mknode(parser *ps, int kind, int line) {
    node *n = jinja_alloc(ps->p->ar, sizeof *n);
    if (!n) { jinja_perr(ps->p, line, "out of memory"); return NULL; }
    n->kind = kind;
    n->line = line;
    return n;
}

static const char *tokstr(parser *ps, tok *t) {
    char *s = jinja_alloc(ps->p->ar, t->n + 1);
    if (s) memcpy(s, t->s, t->n);
    return s;
}

static int expect_op(parser *ps, const char *op) {
    if (!is_op(cur(ps), op)) {
        tok *t = cur(ps);
        return jinja_perr(ps->p, t->line, "expected '%s', got '%.*s'", op, t->type == TK_EOF ? 5 : (int)t->n,
                    t->type == TK_EOF ? "end of tag" : t->s);
    }
    advance(ps);
    return 0;
}

static node *p_expr(parser *ps);
static node *p_or(parser *ps);
static node *p_unary(parser *ps, int with_filter);

typedef struct { node **v; const char **kw; int n, cap; } nodevec;

static int nv_push(parser *ps, nodevec *nv, node *x, const char *kw) {
    if (nv->n == nv->cap) {
        int nc = nv->cap ? nv->cap * 2 : 4;
        node **a = jinja_alloc(ps->p->ar, (size_t)nc * sizeof *a);
        const char **k = jinja_alloc(ps->p->ar, (size_t)nc * sizeof *k);
        if (!a || !k) return jinja_perr(ps->p, 0, "out of memory");
        if (nv->n) { memcpy(a, nv->v, (size_t)nv->n * sizeof *a); memcpy(k, nv->kw, (size_t)nv->n * sizeof *k); }
        nv->v = a; nv->kw = k; nv->cap = nc;
    }
    nv->v[nv->n] = x;
    nv->kw[nv->n] = kw;
    nv->n++;
    return 0;
}

/* ( args ) with keyword arguments; the '(' is current */
static int p_args(parser *ps, node *n) {
    nodevec nv = {0};
    advance(ps);
    while (!is_op(cur(ps), ")")) {
        const char *kw = NULL;
        if (cur(ps)->type == TK_NAME && is_op(cur(ps) + 1, "=")) { kw = tokstr(ps, cur(ps)); advance(ps); advance(ps); }
        node *a = p_expr(ps);
        if (!a || nv_push(ps, &nv, a, kw)) return -1;
        if (!is_op(cur(ps), ",")) break;
        advance(ps);
    }
    if (expect_op(ps, ")")) return -1;
    n->args = nv.v;
    n->kw = nv.kw;
    n->nargs = nv.n;
    return 0;
}

static node *p_primary(parser *ps) {
    tok *t = cur(ps);
    node *n;
    if (t->type == TK_STR) {
        advance(ps);
        /* adjacent string literals concatenate */
        size_t total = t->n;
        tok *q = cur(ps);
        while (q->type == TK_STR) { total += q->n; q++; }
        char *s = jinja_alloc(ps->p->ar, total + 1);
        if (!s || !(n = mknode(ps, E_LIT, t->line)) || !(n->lit = jinja_alloc(ps->p->ar, sizeof(val)))) return NULL;
        memcpy(s, t->s, t->n);
        size_t o = t->n;
        while (cur(ps)->type == TK_STR) { memcpy(s + o, cur(ps)->s, cur(ps)->n); o += cur(ps)->n; advance(ps); }
        *n->lit = mkstr(s, o);
        return n;
    }
    if (t->type == TK_INT || t->type == TK_FLOAT) {
        advance(ps);
        if (!(n = mknode(ps, E_LIT, t->line)) || !(n->lit = jinja_alloc(ps->p->ar, sizeof(val)))) return NULL;
        if (t->type == TK_INT) *n->lit = mkint(t->i);
        else { n->lit->t = V_FLOAT; n->lit->u.f = t->f; }
        return n;
    }
    if (t->type == TK_NAME) {
        advance(ps);
        if (!(n = mknode(ps, E_LIT, t->line))) return NULL;
        if (is_kw(t, "true") || is_kw(t, "True") || is_kw(t, "false") || is_kw(t, "False") || is_kw(t, "none") ||
            is_kw(t, "None")) {
            if (!(n->lit = jinja_alloc(ps->p->ar, sizeof(val)))) return NULL;
            *n->lit = (t->s[0] == 'n' || t->s[0] == 'N') ? mknone() : mkbool(t->s[0] == 't' || t->s[0] == 'T');
            return n;
        }
        n->kind = E_NAME;
        n->s = tokstr(ps, t);
        return n;
    }
    if (is_op(t, "(")) {
        advance(ps);
        node *e = p_expr(ps);
        if (!e) return NULL;
        if (is_op(cur(ps), ",")) { /* a tuple: represented as a list */
            nodevec nv = {0};
            if (nv_push(ps, &nv, e, NULL)) return NULL;
            while (is_op(cur(ps), ",")) {
                advance(ps);
                if (is_op(cur(ps), ")")) break;
                node *x = p_expr(ps);
                if (!x || nv_push(ps, &nv, x, NULL)) return NULL;
            }
            if (!(n = mknode(ps, E_LIST, t->line))) return NULL;
            n->args = nv.v; n->nargs = nv.n;
            e = n;
        }
        if (expect_op(ps, ")")) return NULL;
        return e;
    }
    if (is_op(t, "[")) {
        advance(ps);
        nodevec nv = {0};
        while (!is_op(cur(ps), "]")) {
            node *x = p_expr(ps);
            if (!x || nv_push(ps, &nv, x, NULL)) return NULL;
            if (!is_op(cur(ps), ",")) break;
            advance(ps);
        }
        if (expect_op(ps, "]") || !(n = mknode(ps, E_LIST, t->line))) return NULL;
        n->args = nv.v; n->nargs = nv.n;
        return n;
    }
    if (is_op(t, "{")) {
        advance(ps);
        nodevec nv = {0};
        while (!is_op(cur(ps), "}")) {
            node *k = p_expr(ps);
            if (!k || expect_op(ps, ":")) return NULL;
            node *x = p_expr(ps);
            if (!x || nv_push(ps, &nv, k, NULL) || nv_push(ps, &nv, x, NULL)) return NULL;
            if (!is_op(cur(ps), ",")) break;
            advance(ps);
        }
        if (expect_op(ps, "}") || !(n = mknode(ps, E_DICT, t->line))) return NULL;
        n->args = nv.v; n->nargs = nv.n;
        return n;
    }
    jinja_perr(ps->p, t->line, "unexpected '%.*s' in an expression", t->type == TK_EOF ? 10 : (int)t->n,
         t->type == TK_EOF ? "end of tag" : t->s);
    return NULL;
}

static node *p_postfix(parser *ps, node *n) {
    for (;;) {
        tok *t = cur(ps);
        if (is_op(t, ".")) {
            advance(ps);
            tok *a = cur(ps);
            if (a->type != TK_NAME && a->type != TK_INT) { jinja_perr(ps->p, a->line, "expected an attribute name after '.'"); return NULL; }
            advance(ps);
            node *x = mknode(ps, E_ATTR, t->line);
            if (!x) return NULL;
            x->a = n;
            if (a->type == TK_INT) {
                x->kind = E_ITEM;
                if (!(x->b = mknode(ps, E_LIT, t->line)) || !(x->b->lit = jinja_alloc(ps->p->ar, sizeof(val)))) return NULL;
                *x->b->lit = mkint(a->i);
            } else x->s = tokstr(ps, a);
            n = x;
        } else if (is_op(t, "[")) {
            advance(ps);
            node *parts[3] = {NULL, NULL, NULL};
            int np = 0, slice = 0;
            for (;;) {
                if (is_op(cur(ps), ":")) { advance(ps); slice = 1; np++; if (np > 2) { jinja_perr(ps->p, t->line, "bad slice"); return NULL; } continue; }
                if (is_op(cur(ps), "]")) break;
                node *e = p_expr(ps);
                if (!e) return NULL;
                parts[np] = e;
                if (!is_op(cur(ps), ":")) break;
            }
            if (expect_op(ps, "]")) return NULL;
            node *x = mknode(ps, slice ? E_SLICE : E_ITEM, t->line);
            if (!x) return NULL;
            x->a = n;
            if (slice) { x->b = parts[0]; x->c = parts[1]; x->body = parts[2]; }
            else {
                if (!parts[0]) { jinja_perr(ps->p, t->line, "empty subscript"); return NULL; }
                x->b = parts[0];
            }
            n = x;
        } else if (is_op(t, "(")) {
            node *x = mknode(ps, E_CALL, t->line);
            if (!x) return NULL;
            x->a = n;
            if (p_args(ps, x)) return NULL;
            n = x;
        } else return n;
    }
}

static node *p_filters(parser *ps, node *n) {
    for (;;) {
        tok *t = cur(ps);
        if (is_op(t, "|")) {
            advance(ps);
            tok *f = cur(ps);
            if (f->type != TK_NAME) { jinja_perr(ps->p, f->line, "expected a filter name after '|'"); return NULL; }
            advance(ps);
            node *x = mknode(ps, E_FILTER, t->line);
            if (!x) return NULL;
            x->a = n;
            x->s = tokstr(ps, f);
            if (is_op(cur(ps), "(") && p_args(ps, x)) return NULL;
            n = x;
        } else if (is_kw(t, "is")) {
            advance(ps);
            int neg = 0;
            if (is_kw(cur(ps), "not")) { neg = 1; advance(ps); }
            tok *f = cur(ps);
            if (f->type != TK_NAME) { jinja_perr(ps->p, f->line, "expected a test name after 'is'"); return NULL; }
            advance(ps);
            node *x = mknode(ps, E_TEST, t->line);
            if (!x) return NULL;
            x->a = n;
            x->s = tokstr(ps, f);
            if (is_op(cur(ps), "(")) { if (p_args(ps, x)) return NULL; }
            else if (cur(ps)->type == TK_STR || cur(ps)->type == TK_INT || cur(ps)->type == TK_FLOAT ||
                     (cur(ps)->type == TK_NAME && !is_kw(cur(ps), "and") && !is_kw(cur(ps), "or") && !is_kw(cur(ps), "else") &&
                      !is_kw(cur(ps), "if") && !is_kw(cur(ps), "in") && !is_kw(cur(ps), "not") && !is_kw(cur(ps), "is"))) {
                node *arg = p_primary(ps);
                if (!arg) return NULL;
                nodevec nv = {0};
                if (nv_push(ps, &nv, arg, NULL)) return NULL;
                x->args = nv.v; x->kw = nv.kw; x->nargs = 1;
            }
            if (neg) {
                node *y = mknode(ps, E_NOT, t->line);
                if (!y) return NULL;
                y->a = x;
                x = y;
            }
            n = x;
        } else return n;
    }
}

static node *p_unary(parser *ps, int with_filter) {
    tok *t = cur(ps);
    node *n;
    if (is_op(t, "-") || is_op(t, "+")) {
        advance(ps);
        if (++ps->depth > MAX_DEPTH) return too_deep(ps, t->line);
        node *a = p_unary(ps, 0);
        ps->depth--;
        if (!a) return NULL;
        if (is_op(t, "+")) n = a;
        else { if (!(n = mknode(ps, E_NEG, t->line))) return NULL; n->a = a; }
    } else {
        n = p_primary(ps);
        if (!n) return NULL;
        n = p_postfix(ps, n);
        if (!n) return NULL;
    }
    if (with_filter) n = p_filters(ps, n);
    return n;
}

static node *bin(parser *ps, const char *op, node *l, node *r, int line) {
    if (!l || !r) return NULL;
    node *n = mknode(ps, E_BIN, line);
    if (!n) return NULL;
    n->s = op; n->a = l; n->b = r;
    return n;
}

static node *p_pow(parser *ps) {
    node *l = p_unary(ps, 1);
    while (l && is_op(cur(ps), "**")) { int ln = cur(ps)->line; advance(ps); l = bin(ps, "**", l, p_unary(ps, 1), ln); }
    return l;
}

static node *p_math2(parser *ps) {
    node *l = p_pow(ps);
    for (;;) {
        tok *t = cur(ps);
        const char *op = is_op(t, "*") ? "*" : is_op(t, "/") ? "/" : is_op(t, "//") ? "//" : is_op(t, "%") ? "%" : NULL;
        if (!op || !l) return l;
        advance(ps);
        l = bin(ps, op, l, p_pow(ps), t->line);
    }
}

static node *p_concat(parser *ps) {
    node *l = p_math2(ps);
    while (l && is_op(cur(ps), "~")) { int ln = cur(ps)->line; advance(ps); l = bin(ps, "~", l, p_math2(ps), ln); }
    return l;
}

static node *p_math1(parser *ps) {
    node *l = p_concat(ps);
    for (;;) {
        tok *t = cur(ps);
        const char *op = is_op(t, "+") ? "+" : is_op(t, "-") ? "-" : NULL;
        if (!op || !l) return l;
        advance(ps);
        l = bin(ps, op, l, p_concat(ps), t->line);
    }
}

static node *p_compare(parser *ps) {
    node *l = p_math1(ps);
    for (;;) {
        tok *t = cur(ps);
        const char *op = NULL;
        if (is_op(t, "==")) op = "==";
        else if (is_op(t, "!=")) op = "!=";
        else if (is_op(t, "<")) op = "<";
        else if (is_op(t, "<=")) op = "<=";
        else if (is_op(t, ">")) op = ">";
        else if (is_op(t, ">=")) op = ">=";
        else if (is_kw(t, "in")) op = "in";
        else if (is_kw(t, "not") && is_kw(t + 1, "in")) { op = "notin"; advance(ps); }
        if (!op || !l) return l;
        advance(ps);
        l = bin(ps, op, l, p_math1(ps), t->line);
    }
}

static node *p_not(parser *ps) {
    tok *t = cur(ps);
    if (is_kw(t, "not")) {
        advance(ps);
        if (++ps->depth > MAX_DEPTH) return too_deep(ps, t->line);
        node *a = p_not(ps);
        ps->depth--;
        if (!a) return NULL;
        node *n = mknode(ps, E_NOT, t->line);
        if (n) n->a = a;
        return n;
    }
    return p_compare(ps);
}

static node *p_and(parser *ps) {
    node *l = p_not(ps);
    while (l && is_kw(cur(ps), "and")) {
        int ln = cur(ps)->line;
        advance(ps);
        node *r = p_not(ps), *n = r ? mknode(ps, E_AND, ln) : NULL;
        if (!n) return NULL;
        n->a = l; n->b = r; l = n;
    }
    return l;
}

static node *p_or(parser *ps) {
    node *l = p_and(ps);
    while (l && is_kw(cur(ps), "or")) {
        int ln = cur(ps)->line;
        advance(ps);
        node *r = p_and(ps), *n = r ? mknode(ps, E_OR, ln) : NULL;
        if (!n) return NULL;
        n->a = l; n->b = r; l = n;
    }
    return l;
}

static node *p_expr(parser *ps) {
    if (++ps->depth > MAX_DEPTH) return too_deep(ps, cur(ps)->line);
    node *e = p_or(ps);
    ps->depth--;
    while (e && is_kw(cur(ps), "if")) {
        int ln = cur(ps)->line;
        advance(ps);
        node *c = p_or(ps);
        if (!c) return NULL;
        node *o = NULL;
        if (is_kw(cur(ps), "else")) { advance(ps); if (!(o = p_expr(ps))) return NULL; }
        node *n = mknode(ps, E_COND, ln);
        if (!n) return NULL;
        n->a = c; n->b = e; n->c = o;
        e = n;
    }
    return e;
}

static int at_end(parser *ps) {
    if (cur(ps)->type != TK_EOF) {
        tok *t = cur(ps);
        return jinja_perr(ps->p, t->line, "unexpected '%.*s' at the end of a tag", (int)t->n, t->type == TK_STR ? "string" : t->s);
    }
    return 0;
}

/* Parses statements until one of the `stops` tag names; *stop gets the index found (-1 = end). */
static node *p_body(parser *ps, const char *const *stops, int *stop);

static const char *SUPPORTED_TAGS = "if, elif, else, endif, for, endfor, set, break, continue, generation, raw";

/* the rest of an if (or elif) tag: condition, body, elif/else branches, endif */
static node *p_if(parser *ps, int line) {
    node *n = mknode(ps, N_IF, line);
    if (!n || !(n->a = p_expr(ps)) || at_end(ps)) return NULL;
    static const char *const stops[] = {"elif", "else", "endif", NULL};
    int stop;
    n->body = p_body(ps, stops, &stop);
    if (ps->p->failed) return NULL;
    if (stop == 0) { /* elif: a nested if in the else branch, which consumes the endif */
        if (++ps->depth > MAX_DEPTH) return too_deep(ps, line);
        n->orelse = p_if(ps, ps->segs[ps->si - 1].line);
        ps->depth--;
        return ps->p->failed ? NULL : n;
    }
    if (stop == 1) {
        if (at_end(ps)) return NULL;
        static const char *const stops2[] = {"endif", NULL};
        n->orelse = p_body(ps, stops2, &stop);
        if (ps->p->failed) return NULL;
    }
    if (stop < 0) { jinja_perr(ps->p, line, "{%% if %%} without {%% endif %%}"); return NULL; }
    if (at_end(ps)) return NULL;
    return n;
}

static node *p_stmt(parser *ps, seg *sg) {
    tok *t = ps->t;
    int line = sg->line;
    if (ps->depth > MAX_DEPTH) return too_deep(ps, line);
    if (t->type != TK_NAME) { jinja_perr(ps->p, line, "expected a tag name after '{%%'"); return NULL; }
    if (is_kw(t, "if")) {
        advance(ps);
        return p_if(ps, line);
    }
    if (is_kw(t, "for")) {
        advance(ps);
        node *n = mknode(ps, N_FOR, line);
        if (!n) return NULL;
        const char **tg = jinja_alloc(ps->p->ar, 8 * sizeof *tg);
        if (!tg) return NULL;
        int nt = 0, paren = 0;
        if (is_op(cur(ps), "(")) { paren = 1; advance(ps); }
        for (;;) {
            if (cur(ps)->type != TK_NAME || nt == 8) { jinja_perr(ps->p, line, "expected a loop variable name"); return NULL; }
            tg[nt++] = tokstr(ps, advance(ps));
            if (!is_op(cur(ps), ",")) break;
            advance(ps);
        }
        if (paren && expect_op(ps, ")")) return NULL;
        n->targets = tg; n->ntargets = nt;
        if (!is_kw(cur(ps), "in")) { jinja_perr(ps->p, line, "expected 'in' in a for tag"); return NULL; }
        advance(ps);
        if (!(n->a = p_or(ps))) return NULL; /* no conditional expression: `if` filters the loop */
        if (is_kw(cur(ps), "if")) { advance(ps); if (!(n->b = p_expr(ps))) return NULL; }
        if (is_kw(cur(ps), "recursive")) { jinja_perr(ps->p, line, "recursive for loops are not supported"); return NULL; }
        if (at_end(ps)) return NULL;
        static const char *const stops[] = {"else", "endfor", NULL};
        int stop;
        n->body = p_body(ps, stops, &stop);
        if (ps->p->failed) return NULL;
        if (stop == 0) {
            if (at_end(ps)) return NULL;
            static const char *const stops2[] = {"endfor", NULL};
            n->orelse = p_body(ps, stops2, &stop);
            if (ps->p->failed) return NULL;
        }
        if (stop < 0) { jinja_perr(ps->p, line, "{%% for %%} without {%% endfor %%}"); return NULL; }
        if (at_end(ps)) return NULL;
        return n;
    }
    if (is_kw(t, "set")) {
        advance(ps);
        node *n = mknode(ps, N_SET, line);
        if (!n) return NULL;
        if (cur(ps)->type != TK_NAME) { jinja_perr(ps->p, line, "expected a name after 'set'"); return NULL; }
        n->s = tokstr(ps, advance(ps));
        if (is_op(cur(ps), ".")) {
            advance(ps);
            if (cur(ps)->type != TK_NAME) { jinja_perr(ps->p, line, "expected an attribute name in set"); return NULL; }
            n->attr = tokstr(ps, advance(ps));
        }
        if (!is_op(cur(ps), "=")) {
            jinja_perr(ps->p, line, "only `{%% set name = expr %%}` and `{%% set ns.attr = expr %%}` are supported (no block set)");
            return NULL;
        }
        advance(ps);
        if (!(n->a = p_expr(ps))) return NULL;
        if (is_op(cur(ps), ",")) { jinja_perr(ps->p, line, "tuple assignment in set is not supported"); return NULL; }
        if (at_end(ps)) return NULL;
        return n;
    }
    if (is_kw(t, "break") || is_kw(t, "continue")) {
        node *n = mknode(ps, is_kw(t, "break") ? N_BREAK : N_CONTINUE, line);
        advance(ps);
        if (!n || at_end(ps)) return NULL;
        return n;
    }
    if (is_kw(t, "generation")) {
        advance(ps);
        if (at_end(ps)) return NULL;
        static const char *const stops[] = {"endgeneration", NULL};
        int stop;
        node *n = mknode(ps, N_IF, line);
        if (!n || !(n->a = mknode(ps, E_LIT, line)) || !(n->a->lit = jinja_alloc(ps->p->ar, sizeof(val)))) return NULL;
        *n->a->lit = mkbool(1);
        n->body = p_body(ps, stops, &stop);
        if (ps->p->failed) return NULL;
        if (stop < 0) { jinja_perr(ps->p, line, "{%% generation %%} without {%% endgeneration %%}"); return NULL; }
        if (at_end(ps)) return NULL;
        return n;
    }
    jinja_perr(ps->p, line, "unsupported Jinja tag '%.*s' (supported: %s)", (int)t->n, t->s, SUPPORTED_TAGS);
    return NULL;
}

static node *p_body(parser *ps, const char *const *stops, int *stop) {
    node *head = NULL, **tail = &head;
    *stop = -1;
    if (++ps->depth > MAX_DEPTH) return too_deep(ps, ps->si < ps->nseg ? ps->segs[ps->si].line : 0);

    while (ps->si < ps->nseg && !ps->p->failed) {
        seg *sg = &ps->segs[ps->si++];
        node *n = NULL;
        if (sg->kind == SEG_TEXT) {
            if (!(n = mknode(ps, N_TEXT, sg->line))) return NULL;
            n->s = sg->text; n->n = sg->n;
        } else if (sg->kind == SEG_EXPR) {
            ps->t = sg->toks;
            if (!(n = mknode(ps, N_OUT, sg->line)) || !(n->a = p_expr(ps)) || at_end(ps)) return NULL;
        } else {
            ps->t = sg->toks;
            tok *t = ps->t;
            if (stops && t->type == TK_NAME)
                for (int k = 0; stops[k]; k++)
                    if (is_kw(t, stops[k])) { advance(ps); *stop = k; ps->depth--; return head; }
            if (t->type == TK_NAME && (is_kw(t, "endif") || is_kw(t, "endfor") || is_kw(t, "else") || is_kw(t, "elif") ||
                                       is_kw(t, "endgeneration"))) {
                jinja_perr(ps->p, sg->line, "unexpected {%% %.*s %%}", (int)t->n, t->s);
                return NULL;
            }
            n = p_stmt(ps, sg);
            if (!n) return NULL;
        }
        *tail = n;
        tail = &n->next;
    }
    ps->depth--;
    return head;
}

jr_status jinja_parse(const char *src, const char *name, struct jinja_tpl **out) {
    *out = NULL;
    struct jinja_tpl *t = calloc(1, sizeof *t);
    if (!t) return jr_fail(JR_ENOMEM, "out of memory");
    t->name = jr_strdup(name);
    pctx p = {&t->ar, name, "", 0};
    size_t nseg = 0;
    seg *segs = jinja_lex(&p, src, &nseg);
    if (segs) {
        parser ps = {&p, segs, nseg, 0, NULL, 0};
        int stop;
        t->body = p_body(&ps, NULL, &stop);
    } else if (!p.failed) jinja_perr(&p, 0, "out of memory");
    if (p.failed || !t->name) {
        jr_status st = jr_fail(JR_EUNSUPPORTED, "%s", p.err);
        jinja_free(t);
        return st;
    }
    *out = t;
    return JR_OK;
}

void jinja_free(struct jinja_tpl *t) {
    if (!t) return;
    jinja_arena_free(&t->ar);
    free(t->name);
    free(t);
}

