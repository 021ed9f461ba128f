/* jinja_internal.h - what the chat-template interpreter's files share: the arena, the lexer's
 * tokens and segments (jinja_lex.c), the AST (jinja_parse.c) and the values (jinja.c evaluates) */
#ifndef JUDGERL_JINJA_INTERNAL_H
#define JUDGERL_JINJA_INTERNAL_H

#include <stddef.h>

#include "tokenizer/jinja.h"

/* ------------------------------------------------------------------ arena */

typedef struct ablk { struct ablk *next; size_t used, cap; char data[]; } ablk;
typedef struct { ablk *head; } arena;

/* n zeroed bytes (16-aligned) that live until jinja_arena_free; NULL when out of memory. */
void *jinja_alloc(arena *a, size_t n);
void jinja_arena_free(arena *a);

/* ------------------------------------------------------------------ lexer */

enum { TK_EOF, TK_NAME, TK_INT, TK_FLOAT, TK_STR, TK_OP };

typedef struct {
    int type;
    const char *s; /* NAME/OP text, STR decoded */
    size_t n;
    long long i;
    double f;
    int line;
} tok;

enum { SEG_TEXT, SEG_EXPR, SEG_STMT };

typedef struct {
    int kind;
    const char *text; /* SEG_TEXT */
    size_t n;
    tok *toks;        /* SEG_EXPR / SEG_STMT, ended by TK_EOF */
    int line;
} seg;

typedef struct node node;

struct jinja_tpl {
    arena ar;
    node *body;
    char *name;
};

typedef struct {
    arena *ar;
    const char *name;
    char err[512];
    int failed;
} pctx;

/* Records "NAME: line L: message" in p (the first error only); returns -1. */
int jinja_perr(pctx *p, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Splits a template into text, {{ }} and {% %} segments, the latter two as tokens (ended by
 * TK_EOF), with whitespace control applied; NULL on error (jinja_perr called). */
seg *jinja_lex(pctx *p, const char *src, size_t *nseg);

/* ------------------------------------------------------------------ AST */

enum {
    N_TEXT, N_OUT, N_IF, N_FOR, N_SET, N_BREAK, N_CONTINUE, /* statements */
    E_LIT, E_NAME, E_ATTR, E_ITEM, E_SLICE, E_CALL, E_FILTER, E_TEST, E_BIN, E_NOT, E_NEG, E_AND, E_OR, E_COND,
    E_LIST, E_DICT
};

typedef struct val val;

struct node {
    int kind, line;
    node *next;          /* statement lists */
    /* generic fields */
    node *a, *b, *c;     /* children */
    node *body, *orelse; /* statement bodies */
    node **args;         /* call/filter/test/list/dict args */
    const char **kw;     /* keyword names (NULL for positional) */
    int nargs;
    const char *s;       /* name, attribute, operator, text */
    size_t n;
    val *lit;            /* E_LIT */
    const char **targets; int ntargets; /* for / set */
    const char *attr;    /* set ns.attr */
};

typedef struct {
    pctx *p;
    seg *segs;
    size_t nseg, si; /* current segment */
    tok *t;          /* current token in segment */
    int depth;       /* nesting of expressions and blocks (bounded: no stack overflow) */
} parser;

/* ------------------------------------------------------------------ values */

enum { V_UNDEF, V_NONE, V_BOOL, V_INT, V_FLOAT, V_STR, V_LIST, V_DICT, V_FUNC };

typedef struct vlist { val *v; size_t n, cap; } vlist;
typedef struct vdict { const char **k; size_t *kn; val *v; size_t n, cap; int ns; } vdict;

struct val {
    int t;
    union {
        int b;
        long long i;
        double f;
        struct { const char *s; size_t n; } s;
        vlist *l;
        vdict *d;
        const char *fn;
    } u;
};

static inline val mkstr(const char *s, size_t n) { val v = {V_STR, {0}}; v.u.s.s = s; v.u.s.n = n; return v; }
static inline val mkint(long long i) { val v = {V_INT, {0}}; v.u.i = i; return v; }
static inline val mkbool(int b) { val v = {V_BOOL, {0}}; v.u.b = !!b; return v; }
static inline val mknone(void) { val v = {V_NONE, {0}}; return v; }

#endif
