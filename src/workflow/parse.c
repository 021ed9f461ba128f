/* parse.c - the workflow language's lexer, parser and static checks (docs/WORKFLOWS.md) */
#include "judgerl/workflow.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/config.h"
#include "workflow/wf_internal.h"

static const char *const op_names[JR_WF_N_OPS] = {"answer", "custom", "codegen", "program", "ensemble", "mdensemble",
                                                  "test", "review", "revise", "format", "refine"};

const char *jr_wf_op_name(jr_wf_op op) { return op >= 0 && op < JR_WF_N_OPS ? op_names[op] : "?"; }

int jr_wf_op_lookup(const char *s, size_t n) {
    for (int i = 0; i < JR_WF_N_OPS; i++)
        if (strlen(op_names[i]) == n && !memcmp(op_names[i], s, n)) return i;
    return -1;
}

/* Per-operator signature: the argument slots and what each accepts. */
const jr_wf_sig jr_wf_sigs[JR_WF_N_OPS] = {
    [JR_WF_ANSWER] = {1, {JR_WF_A_TEXT}, 1},
    [JR_WF_CUSTOM] = {2, {JR_WF_A_TEXT, JR_WF_A_INSTR}, 1},
    [JR_WF_CODEGEN] = {1, {JR_WF_A_TEXT}, 1},
    [JR_WF_PROGRAM] = {1, {JR_WF_A_TEXT}, 2},
    [JR_WF_ENSEMBLE] = {1, {JR_WF_A_LIST}, 0},
    [JR_WF_MDENSEMBLE] = {1, {JR_WF_A_LIST}, JR_WF_MD_VOTES},
    [JR_WF_TEST] = {2, {JR_WF_A_CODE, JR_WF_A_LOOPS}, 0},
    [JR_WF_REVIEW] = {1, {JR_WF_A_TEXT}, 1},
    [JR_WF_REVISE] = {2, {JR_WF_A_TEXT, JR_WF_A_REVIEW}, 1},
    [JR_WF_FORMAT] = {1, {JR_WF_A_TEXT}, 1},
    [JR_WF_REFINE] = {2, {JR_WF_A_TEXT, JR_WF_A_LOOPS}, 0},
};

int jr_wf_op_calls(jr_wf_op op, int num, int mode_llm) {
    if (op == JR_WF_TEST) return num;       /* one fix per failing loop */
    if (op == JR_WF_REFINE) return 2 * num; /* review + revise per round */
    if (op == JR_WF_ENSEMBLE) return mode_llm ? 1 : 0;
    return jr_wf_sigs[op].calls;
}

jr_wf_kind jr_wf_result_kind(jr_wf_op op, jr_wf_kind arg0) {
    switch (op) {
    case JR_WF_CODEGEN: case JR_WF_TEST: return JR_WF_CODE;
    case JR_WF_REVIEW: return JR_WF_REVIEWV;
    case JR_WF_REVISE: case JR_WF_REFINE: return arg0;
    case JR_WF_ENSEMBLE: case JR_WF_MDENSEMBLE: return arg0 == JR_WF_LIST_CODE ? JR_WF_CODE : JR_WF_TEXT;
    default: return JR_WF_TEXT;
    }
}

const char *jr_wf_kind_name(jr_wf_kind k) {
    switch (k) {
    case JR_WF_TEXT: return "text";
    case JR_WF_CODE: return "code";
    case JR_WF_REVIEWV: return "a review";
    default: return "a list";
    }
}

jr_workflow_limits jr_workflow_limits_default(void) { return (jr_workflow_limits){12, 3, 24}; }

/* ===================================== lexer ============================================== */
enum { T_EOF, T_NL, T_IDENT, T_NUM, T_INSTR, T_LP, T_RP, T_COMMA, T_LB, T_RB, T_EQ };

typedef struct {
    int type;
    const char *s; /* identifier / instruction text */
    size_t n;
    int line, col;
    long num;
} tok;

typedef struct {
    const char *text;
    size_t len, pos;
    int line;
    size_t line_start;
    tok t;              /* current token */
    jr_workflow *w;
    int cap_nodes, cap_stmts;
    const jr_workflow_limits *lim;
    int total_calls;
} parser;

static jr_status perr(int line, int col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static jr_status perr(int line, int col, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return jr_fail(JR_EFORMAT, "workflow:%d:%d: %s", line, col, msg);
}

static int is_id0(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_id(int c) { return is_id0(c) || (c >= '0' && c <= '9'); }

static jr_status lex(parser *p) {
    const char *s = p->text;
    for (;;) {
        while (p->pos < p->len && (s[p->pos] == ' ' || s[p->pos] == '\t' || s[p->pos] == '\r')) p->pos++;
        if (p->pos < p->len && s[p->pos] == '#')
            while (p->pos < p->len && s[p->pos] != '\n') p->pos++;
        break;
    }
    tok *t = &p->t;
    memset(t, 0, sizeof *t);
    t->line = p->line;
    t->col = (int)(p->pos - p->line_start) + 1;
    if (p->pos >= p->len) { t->type = T_EOF; return JR_OK; }
    unsigned char c = (unsigned char)s[p->pos];
    t->s = s + p->pos;
    if (c == '\n') {
        t->type = T_NL;
        p->pos++;
        p->line++;
        p->line_start = p->pos;
        return JR_OK;
    }
    if (is_id0(c)) {
        size_t b = p->pos;
        while (p->pos < p->len && is_id((unsigned char)s[p->pos])) p->pos++;
        t->type = T_IDENT;
        t->n = p->pos - b;
        return JR_OK;
    }
    if (c >= '0' && c <= '9') {
        size_t b = p->pos;
        long v = 0;
        while (p->pos < p->len && s[p->pos] >= '0' && s[p->pos] <= '9') {
            if (v < 1000000) v = v * 10 + (s[p->pos] - '0');
            p->pos++;
        }
        t->type = T_NUM;
        t->n = p->pos - b;
        t->num = v;
        return JR_OK;
    }
    if (c == '@') {
        if (p->pos + 1 >= p->len || s[p->pos + 1] != '"') return perr(t->line, t->col, "expected '\"' after '@' (an instruction is @\"text\")");
        size_t b = p->pos + 2, e = b;
        while (e < p->len && s[e] != '"' && s[e] != '\n') {
            if ((unsigned char)s[e] < 0x20 && s[e] != '\t')
                return perr(t->line, (int)(e - p->line_start) + 1, "control byte 0x%02X in an instruction", (unsigned char)s[e]);
            e++;
        }
        if (e >= p->len || s[e] != '"') return perr(t->line, t->col, "unterminated instruction (missing closing '\"' on this line)");
        if (e == b) return perr(t->line, t->col, "empty instruction");
        if (e - b > JR_WF_INSTR_MAX) return perr(t->line, t->col, "instruction longer than %d bytes", JR_WF_INSTR_MAX);
        t->type = T_INSTR;
        t->s = s + b;
        t->n = e - b;
        p->pos = e + 1;
        return JR_OK;
    }
    static const char punct[] = "(),[]=";
    static const int ptype[] = {T_LP, T_RP, T_COMMA, T_LB, T_RB, T_EQ};
    const char *q = c ? strchr(punct, c) : NULL;
    if (q) {
        t->type = ptype[q - punct];
        t->n = 1;
        p->pos++;
        return JR_OK;
    }
    if (c > 0x20 && c < 0x7f) return perr(t->line, t->col, "unexpected character '%c'", c);
    return perr(t->line, t->col, "unexpected byte 0x%02X", c);
}

/* ================================= suggestions ============================================ */
/* " (did you mean 'x'?)" for the closest of cands within distance 2, else "". */
static void suggest(char *out, size_t cap, const char *s, size_t n, const char *const *cands, int nc) {
    int best = 3, bi = -1;
    char w[JR_WF_NAME_MAX + 8];
    if (n >= sizeof w) { out[0] = 0; return; }
    memcpy(w, s, n);
    w[n] = 0;
    for (int i = 0; i < nc; i++) {
        int d = jr_edit_distance(w, cands[i]);
        if (d < best) { best = d; bi = i; }
    }
    if (bi >= 0) snprintf(out, cap, " (did you mean '%s'?)", cands[bi]);
    else out[0] = 0;
}

/* ================================== parser ================================================ */
static int new_node(parser *p, jr_wf_node_kind type, int line, int col) {
    jr_workflow *w = p->w;
    if (w->n_nodes == p->cap_nodes) {
        int cap = p->cap_nodes ? 2 * p->cap_nodes : 32;
        jr_wf_node *n = realloc(w->nodes, (size_t)cap * sizeof *n);
        if (!n) return -1;
        w->nodes = n;
        p->cap_nodes = cap;
    }
    jr_wf_node *n = &w->nodes[w->n_nodes];
    memset(n, 0, sizeof *n);
    n->type = type;
    n->line = line;
    n->col = col;
    n->var = -1;
    return w->n_nodes++;
}

static int find_var(const jr_workflow *w, const char *s, size_t n) {
    for (int i = 0; i < w->n_stmts; i++)
        if (strlen(w->stmts[i].name) == n && !memcmp(w->stmts[i].name, s, n)) return i;
    return -1;
}

static jr_status undefined(parser *p, const tok *t) {
    const jr_workflow *w = p->w;
    const char *cands[64];
    int nc = 0;
    cands[nc++] = "problem";
    for (int i = 0; i < w->n_stmts && nc < 64; i++) cands[nc++] = w->stmts[i].name;
    char hint[64];
    suggest(hint, sizeof hint, t->s, t->n, cands, nc);
    return perr(t->line, t->col, "undefined name '%.*s'%s", (int)t->n, t->s, hint);
}

static jr_status parse_expr(parser *p, int depth, int *out);

/* A variable reference at the current identifier token. */
static jr_status parse_var(parser *p, int *out) {
    tok t = p->t;
    int v = -1;
    if (!(t.n == 7 && !memcmp(t.s, "problem", 7)) && (v = find_var(p->w, t.s, t.n)) < 0) return undefined(p, &t);
    int id = new_node(p, JR_WF_N_VAR, t.line, t.col);
    if (id < 0) return jr_fail(JR_ENOMEM, "workflow: out of memory");
    p->w->nodes[id].var = v;
    p->w->nodes[id].kind = v < 0 ? JR_WF_TEXT : p->w->stmts[v].kind;
    *out = id;
    return lex(p);
}

static jr_status parse_list(parser *p, int depth, int *out) {
    tok open = p->t;
    int id = new_node(p, JR_WF_N_LIST, open.line, open.col);
    if (id < 0) return jr_fail(JR_ENOMEM, "workflow: out of memory");
    jr_status st = lex(p);
    int all_code = 1;
    while (!st) {
        if (p->t.type == T_RB && p->w->nodes[id].n_items == 0) break;
        if (p->w->nodes[id].n_items == JR_WF_LIST_MAX) return perr(p->t.line, p->t.col, "a list holds at most %d items", JR_WF_LIST_MAX);
        tok it = p->t;
        int item;
        if ((st = parse_expr(p, depth, &item))) return st;
        jr_wf_node *in = &p->w->nodes[item];
        if (in->type == JR_WF_N_LIST) return perr(it.line, it.col, "lists cannot be nested");
        if (in->type != JR_WF_N_CALL && in->type != JR_WF_N_VAR) return perr(it.line, it.col, "a list item must be a name or a call");
        if (in->kind != JR_WF_TEXT && in->kind != JR_WF_CODE)
            return perr(it.line, it.col, "a list item must be text or code, got %s", jr_wf_kind_name(in->kind));
        if (in->type == JR_WF_N_VAR && in->var < 0) return perr(it.line, it.col, "'problem' is the input, not a candidate answer");
        if (in->kind != JR_WF_CODE) all_code = 0;
        jr_wf_node *ln = &p->w->nodes[id];
        ln->items[ln->n_items++] = item;
        if (p->t.type == T_RB) break;
        if (p->t.type != T_COMMA) return perr(p->t.line, p->t.col, "expected ',' or ']' in a list");
        st = lex(p);
    }
    if (st) return st;
    jr_wf_node *ln = &p->w->nodes[id];
    if (ln->n_items < 2) return perr(open.line, open.col, "a list needs at least 2 items, got %d", ln->n_items);
    ln->kind = all_code ? JR_WF_LIST_CODE : JR_WF_LIST_TEXT;
    *out = id;
    return lex(p);
}

static int is_list(jr_wf_kind k) { return k == JR_WF_LIST_TEXT || k == JR_WF_LIST_CODE; }

/* Checks argument `i` (node a) of a call to op against the signature. */
static jr_status check_arg(parser *p, jr_wf_op op, int i, int a) {
    const jr_wf_node *n = &p->w->nodes[a];
    int want = jr_wf_sigs[op].arg[i];
    const char *on = op_names[op];
    const char *what = n->type == JR_WF_N_INSTR ? "an instruction" : n->type == JR_WF_N_INT ? "a number" : jr_wf_kind_name(n->kind);
    if (want == JR_WF_A_INSTR) {
        if (n->type != JR_WF_N_INSTR) return perr(n->line, n->col, "%s: argument %d must be an instruction @\"...\", got %s", on, i + 1, what);
        return JR_OK;
    }
    if (want == JR_WF_A_LOOPS) {
        if (n->type != JR_WF_N_INT) return perr(n->line, n->col, "%s: argument %d must be a number 1..%d, got %s", on, i + 1, JR_WF_LOOPS_MAX, what);
        if (n->num < 1 || n->num > JR_WF_LOOPS_MAX)
            return perr(n->line, n->col, "%s: %s must be 1..%d, got %d", on, op == JR_WF_TEST ? "loops" : "rounds", JR_WF_LOOPS_MAX, n->num);
        return JR_OK;
    }
    if (n->type == JR_WF_N_INSTR || n->type == JR_WF_N_INT) return perr(n->line, n->col, "%s: argument %d must be %s, got %s", on, i + 1,
                                                                        want == JR_WF_A_LIST ? "a list" : want == JR_WF_A_CODE ? "code" : want == JR_WF_A_REVIEW ? "a review" : "text", what);
    if (want == JR_WF_A_LIST) {
        if (!is_list(n->kind)) return perr(n->line, n->col, "%s: argument %d must be a list ([a, b] or a name from `call xK`), got %s", on, i + 1, what);
        return JR_OK;
    }
    if (is_list(n->kind)) {
        if (n->type == JR_WF_N_VAR) return perr(n->line, n->col, "list '%s' can only go into ensemble or mdensemble", p->w->stmts[n->var].name);
        return perr(n->line, n->col, "a list can only go into ensemble or mdensemble");
    }
    if (want == JR_WF_A_REVIEW) {
        if (n->kind != JR_WF_REVIEWV) return perr(n->line, n->col, "%s: argument %d must be a review (from review(x)), got %s", on, i + 1, what);
        return JR_OK;
    }
    if (n->kind == JR_WF_REVIEWV) return perr(n->line, n->col, "%s: argument %d must be %s, got a review", on, i + 1, want == JR_WF_A_CODE ? "code" : "text");
    if (want == JR_WF_A_CODE && n->kind != JR_WF_CODE)
        return perr(n->line, n->col, "%s: argument %d must be code (from codegen or test), got text", on, i + 1);
    return JR_OK;
}

/* An option `key=value` inside a call's parentheses (current token: the key). */
static jr_status parse_option(parser *p, jr_wf_op op, int id, int line, int col) {
    tok key = p->t;
    jr_status st = lex(p); /* '=' */
    if (!st) st = lex(p);
    if (st) return st;
    if (op != JR_WF_ENSEMBLE) return perr(key.line, key.col, "'%s' takes no options", op_names[op]);
    if (!(key.n == 4 && !memcmp(key.s, "mode", 4))) {
        const char *c[] = {"mode"};
        char hint[64];
        suggest(hint, sizeof hint, key.s, key.n, c, 1);
        return perr(key.line, key.col, "unknown option '%.*s'%s", (int)key.n, key.s, hint);
    }
    tok v = p->t;
    if (v.type != T_IDENT || !((v.n == 3 && !memcmp(v.s, "llm", 3)) || (v.n == 4 && !memcmp(v.s, "vote", 4)))) {
        if (v.type == T_IDENT) return perr(v.line, v.col, "mode must be 'vote' or 'llm', got '%.*s'", (int)v.n, v.s);
        return perr(v.line, v.col, "mode must be 'vote' or 'llm'");
    }
    p->w->nodes[id].mode_llm = v.n == 3;
    (void)line;
    (void)col;
    return lex(p);
}

static jr_status parse_call(parser *p, int depth, int *out) {
    tok name = p->t;
    int op = jr_wf_op_lookup(name.s, name.n);
    if (op < 0) {
        char hint[64];
        suggest(hint, sizeof hint, name.s, name.n, op_names, JR_WF_N_OPS);
        if (!hint[0]) snprintf(hint, sizeof hint, " (operators: answer, custom, codegen, program, ensemble, ...)");
        return perr(name.line, name.col, "unknown operator '%.*s'%s", (int)name.n, name.s, hint);
    }
    if (depth > p->lim->max_depth) return perr(name.line, name.col, "calls nested deeper than %d", p->lim->max_depth);
    int id = new_node(p, JR_WF_N_CALL, name.line, name.col);
    if (id < 0) return jr_fail(JR_ENOMEM, "workflow: out of memory");
    p->w->nodes[id].op = (jr_wf_op)op;
    p->w->n_operators++;
    jr_status st = lex(p); /* '(' */
    if (!st) st = lex(p);
    int nargs = 0, has_opt = 0;
    while (!st && p->t.type != T_RP) {
        if (p->t.type == T_IDENT && p->pos < p->len) {
            /* key=value: look ahead for '=' */
            size_t q = p->pos;
            while (q < p->len && (p->text[q] == ' ' || p->text[q] == '\t')) q++;
            if (q < p->len && p->text[q] == '=') {
                if (has_opt) return perr(p->t.line, p->t.col, "option given twice");
                has_opt = 1;
                st = parse_option(p, (jr_wf_op)op, id, name.line, name.col);
                goto sep;
            }
        }
        if (has_opt) return perr(p->t.line, p->t.col, "arguments must come before options");
        if (p->t.type == T_EOF || p->t.type == T_NL) return perr(p->t.line, p->t.col, "expected ')' to close the call to '%s'", op_names[op]);
        int a;
        if ((st = parse_expr(p, depth + 1, &a))) return st;
        if (nargs == 3) return perr(name.line, name.col, "'%s' takes %d argument%s, got more", op_names[op], jr_wf_sigs[op].n_args, jr_wf_sigs[op].n_args == 1 ? "" : "s");
        p->w->nodes[id].args[nargs++] = a;
    sep:
        if (st) return st;
        if (p->t.type == T_RP) break;
        if (p->t.type != T_COMMA) return perr(p->t.line, p->t.col, "expected ',' or ')' in the call to '%s'", op_names[op]);
        if ((st = lex(p))) return st;
        if (p->t.type == T_RP) return perr(p->t.line, p->t.col, "expected an argument after ','");
    }
    if (st) return st;
    jr_wf_node *n = &p->w->nodes[id];
    n->n_args = nargs;
    const jr_wf_sig *sg = &jr_wf_sigs[op];
    if (nargs != sg->n_args)
        return perr(name.line, name.col, "'%s' takes %d argument%s, got %d", op_names[op], sg->n_args, sg->n_args == 1 ? "" : "s", nargs);
    for (int i = 0; i < nargs; i++)
        if ((st = check_arg(p, (jr_wf_op)op, i, n->args[i]))) return st;
    n = &p->w->nodes[id];
    int num = 0;
    if (sg->arg[nargs - 1] == JR_WF_A_LOOPS) num = p->w->nodes[n->args[nargs - 1]].num;
    n->num = num;
    n->kind = jr_wf_result_kind((jr_wf_op)op, p->w->nodes[n->args[0]].kind);
    *out = id;
    return lex(p);
}

static jr_status parse_expr(parser *p, int depth, int *out) {
    tok t = p->t;
    switch (t.type) {
    case T_IDENT: {
        /* a call when '(' follows */
        size_t q = p->pos;
        while (q < p->len && (p->text[q] == ' ' || p->text[q] == '\t')) q++;
        if (q < p->len && p->text[q] == '(') return parse_call(p, depth, out);
        return parse_var(p, out);
    }
    case T_LB: return parse_list(p, depth, out);
    case T_INSTR: case T_NUM: {
        int id = new_node(p, t.type == T_NUM ? JR_WF_N_INT : JR_WF_N_INSTR, t.line, t.col);
        if (id < 0) return jr_fail(JR_ENOMEM, "workflow: out of memory");
        jr_wf_node *n = &p->w->nodes[id];
        if (t.type == T_NUM) n->num = (int)t.num;
        else if (!(n->instr = strndup(t.s, t.n))) return jr_fail(JR_ENOMEM, "workflow: out of memory");
        *out = id;
        return lex(p);
    }
    case T_EOF: case T_NL: return perr(t.line, t.col, "expected an expression before the end of the line");
    default: return perr(t.line, t.col, "expected an expression, got '%.*s'", (int)t.n, t.s);
    }
}

static int expr_calls(const jr_workflow *w, int id) {
    const jr_wf_node *n = &w->nodes[id];
    int c = 0;
    if (n->type == JR_WF_N_CALL) {
        c = jr_wf_op_calls(n->op, n->num, n->mode_llm);
        for (int i = 0; i < n->n_args; i++) c += expr_calls(w, n->args[i]);
    } else if (n->type == JR_WF_N_LIST) {
        for (int i = 0; i < n->n_items; i++) c += expr_calls(w, n->items[i]);
    }
    return c;
}

static jr_status parse_assign(parser *p, tok name) {
    jr_workflow *w = p->w;
    if (name.n > JR_WF_NAME_MAX) return perr(name.line, name.col, "name longer than %d bytes", JR_WF_NAME_MAX);
    if (jr_wf_op_lookup(name.s, name.n) >= 0) return perr(name.line, name.col, "'%.*s' is an operator and cannot be assigned", (int)name.n, name.s);
    if (name.n == 7 && !memcmp(name.s, "problem", 7)) return perr(name.line, name.col, "'problem' is the input and cannot be assigned");
    int prev = find_var(w, name.s, name.n);
    if (prev >= 0) return perr(name.line, name.col, "name '%.*s' already defined at line %d", (int)name.n, name.s, w->stmts[prev].line);
    if (w->n_stmts + 1 >= p->lim->max_statements)
        return perr(name.line, name.col, "too many statements: at most %d, the return included", p->lim->max_statements);
    jr_status st = lex(p);
    if (st) return st;
    if (p->t.type != T_EQ) return perr(p->t.line, p->t.col, "expected '=' after '%.*s'", (int)name.n, name.s);
    if ((st = lex(p))) return st;
    tok rhs = p->t;
    int e;
    if ((st = parse_expr(p, 1, &e))) return st;
    if (w->nodes[e].type != JR_WF_N_CALL) return perr(rhs.line, rhs.col, "the right side must be an operator call");
    int repeat = 1;
    if (p->t.type == T_IDENT) {
        tok x = p->t;
        size_t k = 1;
        long K = 0;
        while (k < x.n && x.s[k] >= '0' && x.s[k] <= '9' && K < 1000) K = K * 10 + (x.s[k++] - '0');
        if (x.s[0] != 'x' || x.n < 2 || k != x.n) return perr(x.line, x.col, "expected the end of the line or xK, got '%.*s'", (int)x.n, x.s);
        if (K < 2 || K > JR_WF_REPEAT_MAX) return perr(x.line, x.col, "x%ld: K must be 2..%d", K, JR_WF_REPEAT_MAX);
        jr_wf_kind rk = w->nodes[e].kind;
        if (rk != JR_WF_TEXT && rk != JR_WF_CODE) return perr(x.line, x.col, "x%ld: only a call giving text or code can be repeated", K);
        repeat = (int)K;
        if ((st = lex(p))) return st;
    }
    if (p->t.type != T_NL && p->t.type != T_EOF)
        return perr(p->t.line, p->t.col, "expected the end of the line, got '%.*s'", (int)(p->t.n ? p->t.n : 1), p->t.s);
    int calls = expr_calls(w, e) * repeat;
    if (p->total_calls + calls > p->lim->max_calls)
        return perr(rhs.line, rhs.col, "executor calls exceed the bound: this line brings the most calls to %d, at most %d", p->total_calls + calls, p->lim->max_calls);
    p->total_calls += calls;
    if (w->n_stmts == p->cap_stmts) {
        int cap = p->cap_stmts ? 2 * p->cap_stmts : 8;
        jr_wf_stmt *s = realloc(w->stmts, (size_t)cap * sizeof *s);
        if (!s) return jr_fail(JR_ENOMEM, "workflow: out of memory");
        w->stmts = s;
        p->cap_stmts = cap;
    }
    jr_wf_stmt *s = &w->stmts[w->n_stmts++];
    memset(s, 0, sizeof *s);
    memcpy(s->name, name.s, name.n);
    s->expr = e;
    s->repeat = repeat;
    s->line = name.line;
    s->calls = calls;
    jr_wf_kind k = w->nodes[e].kind;
    s->kind = repeat > 1 ? (k == JR_WF_CODE ? JR_WF_LIST_CODE : JR_WF_LIST_TEXT) : k;
    return JR_OK;
}

static jr_status parse_return(parser *p, tok kw) {
    jr_workflow *w = p->w;
    jr_status st = lex(p);
    if (st) return st;
    tok t = p->t;
    if (t.type != T_IDENT) return perr(t.line, t.col, "expected a name after 'return'");
    size_t q = p->pos;
    while (q < p->len && (p->text[q] == ' ' || p->text[q] == '\t')) q++;
    if (q < p->len && p->text[q] == '(') return perr(t.line, t.col, "return takes a name, not a call: assign the call first");
    if (t.n == 7 && !memcmp(t.s, "problem", 7)) return perr(t.line, t.col, "return: 'problem' is the input, not an answer");
    int v = find_var(w, t.s, t.n);
    if (v < 0) return undefined(p, &t);
    jr_wf_kind k = w->stmts[v].kind;
    if (is_list(k)) return perr(t.line, t.col, "return: '%.*s' is a list; pass it to ensemble first", (int)t.n, t.s);
    if (k == JR_WF_REVIEWV) return perr(t.line, t.col, "return: '%.*s' is a review, not an answer", (int)t.n, t.s);
    w->ret = v;
    if ((st = lex(p))) return st;
    if (p->t.type != T_NL && p->t.type != T_EOF)
        return perr(p->t.line, p->t.col, "expected the end of the line after 'return %.*s'", (int)t.n, t.s);
    /* Only blank lines and comments may follow. */
    while (p->t.type == T_NL)
        if ((st = lex(p))) return st;
    if (p->t.type != T_EOF) return perr(p->t.line, p->t.col, "nothing may follow 'return' (line %d)", kw.line);
    return JR_OK;
}

void jr_workflow_free(jr_workflow *w) {
    if (!w) return;
    for (int i = 0; i < w->n_nodes; i++) free(w->nodes[i].instr);
    free(w->nodes);
    free(w->stmts);
    free(w);
}

jr_status jr_workflow_parse(const char *text, size_t len, const jr_workflow_limits *lim, jr_workflow **out) {
    *out = NULL;
    jr_workflow_limits dl = jr_workflow_limits_default();
    if (!lim) lim = &dl;
    if (lim->max_statements < 2 || lim->max_depth < 1 || lim->max_calls < 1)
        return jr_fail(JR_EINVAL, "workflow limits: max_statements >= 2, max_depth >= 1 and max_calls >= 1 are required");
    parser p = {.text = text, .len = len, .line = 1, .lim = lim};
    p.w = calloc(1, sizeof *p.w);
    if (!p.w) return jr_fail(JR_ENOMEM, "workflow: out of memory");
    p.w->ret = -1;
    jr_status st = lex(&p);
    while (!st) {
        if (p.t.type == T_NL) { st = lex(&p); continue; }
        if (p.t.type == T_EOF) {
            if (p.w->n_stmts == 0) st = perr(p.t.line, p.t.col, "empty workflow: write assignments and a final 'return NAME'");
            else st = perr(p.t.line, p.t.col, "missing 'return NAME' at the end");
            break;
        }
        if (p.t.type != T_IDENT) { st = perr(p.t.line, p.t.col, "expected a name or 'return' at the start of a line"); break; }
        tok name = p.t;
        if (name.n == 6 && !memcmp(name.s, "return", 6)) { st = parse_return(&p, name); break; }
        st = parse_assign(&p, name);
    }
    if (st) { jr_workflow_free(p.w); return st; }
    p.w->max_calls = p.total_calls;
    *out = p.w;
    return JR_OK;
}

/* ---- the operator returned ---- */

#define RET_PROBLEM (-1) /* the content is the input `problem` itself */

/* The operator that produced node i's content (jr_workflow_returned_op), RET_PROBLEM for `problem`. Names are
 * defined before use, so the walk back ends. */
static int produced_by(const jr_workflow *w, int i) {
    const jr_wf_node *n = &w->nodes[i];
    if (n->type == JR_WF_N_VAR) return n->var < 0 ? RET_PROBLEM : produced_by(w, w->stmts[n->var].expr);
    if (n->type == JR_WF_N_LIST) {
        int got = RET_PROBLEM;
        for (int k = 0; k < n->n_items; k++) {
            int x = produced_by(w, n->items[k]);
            got = k == 0 || x == got ? x : JR_WF_N_OPS;
        }
        return got;
    }
    if (n->type != JR_WF_N_CALL) return RET_PROBLEM;
    switch (n->op) {
    case JR_WF_ENSEMBLE: case JR_WF_MDENSEMBLE: case JR_WF_REFINE: case JR_WF_REVISE: case JR_WF_TEST: case JR_WF_FORMAT: {
        int x = n->n_args > 0 ? produced_by(w, n->args[0]) : RET_PROBLEM; /* passes its first argument's content on */
        return x == RET_PROBLEM ? (int)n->op : x;
    }
    default: return (int)n->op;
    }
}

int jr_workflow_returned_op(const jr_workflow *w) {
    if (!w || w->ret < 0 || w->ret >= w->n_stmts) return JR_WF_N_OPS;
    int x = produced_by(w, w->stmts[w->ret].expr);
    return x == RET_PROBLEM ? JR_WF_N_OPS : x;
}
