/* grammar.c - the workflow language as a finite byte automaton for constrained decoding: the
 * canonical subset (depth 1, fixed spacing, short lowercase names) with every static rule,
 * definition before use included. The state is bounded (at most WG_MAXV names of WG_NAME bytes,
 * numbers of one digit), so the language it accepts is regular. */
#include "judgerl/workflow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "workflow/wf_internal.h"

#define WG_MAXV 32 /* most assignments the automaton can hold */
#define WG_NAME 12 /* bytes in a canonical name */
#define WG_OPLEN 10

enum {
    P_LINE,    /* reading the first word of a line: a new name or `return` */
    P_LIT,     /* writing a fixed literal, then going to `after_lit` */
    P_OP,      /* reading the operator's name up to '(' */
    P_NAME,    /* reading a name argument (slot kind in `slot`) */
    P_LIST,    /* a list slot: '[' or a list name */
    P_ITEM,    /* reading an item of a [..] list */
    P_AFTER_LIST, /* after a list: ')' or (ensemble) ", mode=llm)" */
    P_INSTR,   /* inside @"..." */
    P_LOOPS,   /* one digit 1..5 */
    P_CLOSE,   /* expecting ')' */
    P_AFTER,   /* after ')': '\n' or " xK" */
    P_XD,      /* the digit K */
    P_XNL,     /* '\n' after xK */
    P_RET,     /* reading the returned name */
    P_DONE
};

enum { S_TEXT, S_CODE, S_REVIEW, S_LISTNAME, S_ITEM, S_RETURN };

typedef struct {
    uint8_t nv;
    uint8_t vk[WG_MAXV];
    uint8_t vlen[WG_MAXV];
    char vn[WG_MAXV][WG_NAME];
    uint16_t calls;       /* committed executor calls */
    uint8_t ph, after_lit, lit, li;
    uint8_t wlen;
    char w[WG_NAME];
    uint8_t lhslen;
    char lhs[WG_NAME];
    uint8_t op, ai, a0k, num, mode_llm, list_n, list_code, slot, K;
    uint8_t ilen;
} wg_state;

typedef struct {
    int max_stmts, max_calls;
} wg_ctx;

static const char *const lits[] = {"= ", " ", "@\"", " mode=llm", "x"};
enum { L_EQ, L_SP, L_AT, L_MODE, L_X };

static int lower(int c) { return c >= 'a' && c <= 'z'; }
static int namec(int c) { return lower(c) || (c >= '0' && c <= '9') || c == '_'; }

static int word_is(const wg_state *s, const char *lit) { return strlen(lit) == s->wlen && !memcmp(s->w, lit, s->wlen); }

static int var_find(const wg_state *s, const char *w, int n) {
    for (int i = 0; i < s->nv; i++)
        if (s->vlen[i] == n && !memcmp(s->vn[i], w, (size_t)n)) return i;
    return -1;
}

static int kind_fits(int slot, int k) {
    switch (slot) {
    case S_TEXT: case S_ITEM: case S_RETURN: return k == JR_WF_TEXT || k == JR_WF_CODE;
    case S_CODE: return k == JR_WF_CODE;
    case S_REVIEW: return k == JR_WF_REVIEWV;
    default: return k == JR_WF_LIST_TEXT || k == JR_WF_LIST_CODE;
    }
}

/* Candidate i for a slot: -1 is `problem` (text slots only), else variable i. Writes its name. */
static int cand(const wg_state *s, int slot, int i, const char **name, int *len) {
    if (i < 0) {
        if (slot != S_TEXT) return 0;
        *name = "problem";
        *len = 7;
        return 1;
    }
    if (!kind_fits(slot, s->vk[i])) return 0;
    *name = s->vn[i];
    *len = s->vlen[i];
    return 1;
}

/* Does some candidate of the slot start with the current word? Sets *exact when one equals it
 * (its kind in *kind). */
static int word_prefix(const wg_state *s, int slot, int *exact, int *kind) {
    int any = 0;
    *exact = 0;
    for (int i = -1; i < s->nv; i++) {
        const char *n;
        int L;
        if (!cand(s, slot, i, &n, &L) || L < s->wlen || memcmp(n, s->w, s->wlen)) continue;
        any = 1;
        if (L == s->wlen) { *exact = 1; *kind = i < 0 ? JR_WF_TEXT : s->vk[i]; }
    }
    return any;
}

static int reserved(const char *w, int n) {
    return jr_wf_op_lookup(w, (size_t)n) >= 0 || (n == 7 && !memcmp(w, "problem", 7)) || (n == 6 && !memcmp(w, "return", 6));
}

static int has_returnable(const wg_state *s) {
    for (int i = 0; i < s->nv; i++)
        if (kind_fits(S_RETURN, s->vk[i])) return 1;
    return 0;
}

static int is_op_prefix(const char *w, int n) {
    for (int o = 0; o < JR_WF_N_OPS; o++) {
        const char *on = jr_wf_op_name((jr_wf_op)o);
        if ((int)strlen(on) >= n && !memcmp(on, w, (size_t)n)) return 1;
    }
    return 0;
}

static void lit_go(wg_state *s, int lit, int after) {
    s->ph = P_LIT;
    s->lit = (uint8_t)lit;
    s->li = 0;
    s->after_lit = (uint8_t)after;
}

/* Enters argument slot ai of the current operator. */
static void enter_arg(wg_state *s) {
    int a = jr_wf_sigs[s->op].arg[s->ai];
    s->wlen = 0;
    switch (a) {
    case JR_WF_A_INSTR: s->ilen = 0; lit_go(s, L_AT, P_INSTR); break;
    case JR_WF_A_LOOPS: s->ph = P_LOOPS; break;
    case JR_WF_A_LIST: s->ph = P_LIST; s->list_n = 0; s->list_code = 1; break;
    default: s->ph = P_NAME; s->slot = a == JR_WF_A_CODE ? S_CODE : a == JR_WF_A_REVIEW ? S_REVIEW : S_TEXT; break;
    }
}

static int cur_cost(const wg_state *s) { return jr_wf_op_calls((jr_wf_op)s->op, s->num ? s->num : 1, s->mode_llm); }

static int fits(const wg_ctx *c, const wg_state *s, int cost) { return s->calls + cost <= c->max_calls; }

/* The call's argument list is complete: ')' was read. */
static int close_call(const wg_ctx *c, wg_state *s) {
    if (!fits(c, s, cur_cost(s))) return 0;
    s->ph = P_AFTER;
    return 1;
}

/* Argument ai is complete; `sep` is ',' or ')'. */
static int end_arg(const wg_ctx *c, wg_state *s, unsigned char sep) {
    int n = jr_wf_sigs[s->op].n_args;
    if (sep == ')') {
        if (s->ai + 1 != n) return 0;
        return close_call(c, s);
    }
    if (s->ai + 1 >= n) return 0;
    s->ai++;
    lit_go(s, L_SP, 0xff); /* 0xff: enter the next argument */
    return 1;
}

static void commit(wg_state *s, int kind, int cost) {
    int i = s->nv++;
    memcpy(s->vn[i], s->lhs, s->lhslen);
    s->vlen[i] = s->lhslen;
    s->vk[i] = (uint8_t)kind;
    s->calls = (uint16_t)(s->calls + cost);
    s->ph = P_LINE;
    s->wlen = 0;
    s->op = s->ai = s->a0k = s->num = s->mode_llm = s->K = 0;
}

static int result_kind(const wg_state *s) { return jr_wf_result_kind((jr_wf_op)s->op, (jr_wf_kind)s->a0k); }

static int wg_step(const void *ctxp, void *sp, unsigned char b);

/* P_LINE: the first word of a line, a new name or `return`. */
static int step_line(const wg_ctx *c, wg_state *s, unsigned char b) {
    if (b == ' ') {
        if (!s->wlen) return 0;
        if (word_is(s, "return")) {
            if (!has_returnable(s)) return 0;
            s->ph = P_RET;
            s->wlen = 0;
            return 1;
        }
        if (reserved(s->w, s->wlen) || var_find(s, s->w, s->wlen) >= 0 || s->nv + 1 >= c->max_stmts || s->nv >= WG_MAXV) return 0;
        memcpy(s->lhs, s->w, s->wlen);
        s->lhslen = s->wlen;
        s->wlen = 0;
        lit_go(s, L_EQ, P_OP);
        return 1;
    }
    if (!(s->wlen ? namec(b) : lower(b)) || s->wlen >= WG_NAME) return 0;
    s->w[s->wlen++] = (char)b;
    return 1;
}

/* P_LIT: a fixed literal. */
static int step_lit(const wg_ctx *c, wg_state *s, unsigned char b) {
    const char *l = lits[s->lit];
    if ((unsigned char)l[s->li] != b) return 0;
    if (l[++s->li]) return 1;
    if (s->lit == L_MODE) {
        s->mode_llm = 1;
        if (!fits(c, s, cur_cost(s))) return 0;
    }
    if (s->after_lit == 0xff) enter_arg(s);
    else { s->ph = s->after_lit; s->wlen = 0; }
    return 1;
}

/* P_OP: the operator's name up to '('. */
static int step_op(const wg_ctx *c, wg_state *s, unsigned char b) {
    if (b == '(') {
        int op = jr_wf_op_lookup(s->w, s->wlen);
        if (op < 0) return 0;
        s->op = (uint8_t)op;
        s->ai = 0;
        s->num = 0;
        s->mode_llm = 0;
        if (!fits(c, s, cur_cost(s))) return 0;
        enter_arg(s);
        return 1;
    }
    if (!lower(b) || s->wlen >= WG_OPLEN) return 0;
    s->w[s->wlen++] = (char)b;
    return is_op_prefix(s->w, s->wlen);
}

/* P_NAME, P_ITEM: a name argument or an item of a [..] list. */
static int step_name(const wg_ctx *c, wg_state *s, unsigned char b) {
    int exact, kind;
    int slot = s->ph == P_ITEM ? S_ITEM : s->slot;
    if (namec(b) && (s->wlen || lower(b))) {
        if (s->wlen >= WG_NAME) return 0;
        s->w[s->wlen++] = (char)b;
        return word_prefix(s, slot, &exact, &kind);
    }
    if (!s->wlen || !word_prefix(s, slot, &exact, &kind) || !exact) return 0;
    if (s->ph == P_ITEM) {
        if (kind != JR_WF_CODE) s->list_code = 0;
        s->list_n++;
        s->wlen = 0;
        if (b == ',') {
            if (s->list_n >= JR_WF_LIST_MAX) return 0;
            lit_go(s, L_SP, P_ITEM);
            return 1;
        }
        if (b != ']' || s->list_n < 2) return 0;
        s->a0k = s->list_code ? JR_WF_LIST_CODE : JR_WF_LIST_TEXT;
        s->ph = P_AFTER_LIST;
        return 1;
    }
    if (b != ',' && b != ')') return 0;
    if (s->ai == 0) s->a0k = (uint8_t)kind;
    if (slot == S_LISTNAME) {
        s->ph = P_AFTER_LIST;
        return wg_step(c, s, b);
    }
    return end_arg(c, s, b);
}

/* P_LIST, P_AFTER_LIST, P_CLOSE, P_INSTR, P_LOOPS: the rest of the argument list. */
static int step_args(const wg_ctx *c, wg_state *s, unsigned char b) {
    switch (s->ph) {
    case P_LIST:
        if (b == '[') { s->ph = P_ITEM; s->wlen = 0; return 1; }
        if (!lower(b)) return 0;
        s->ph = P_NAME;
        s->slot = S_LISTNAME;
        return wg_step(c, s, b);
    case P_AFTER_LIST:
        if (b == ')') return close_call(c, s);
        if (b != ',' || s->op != JR_WF_ENSEMBLE) return 0;
        lit_go(s, L_MODE, P_CLOSE);
        return 1;
    case P_CLOSE:
        return b == ')' && close_call(c, s);
    case P_INSTR:
        if (b == '"') {
            if (!s->ilen) return 0;
            s->ph = P_CLOSE;
            return 1;
        }
        if (b < 0x20 || b > 0x7e || s->ilen >= JR_WF_INSTR_MAX) return 0;
        s->ilen++;
        return 1;
    case P_LOOPS:
        if (b < '1' || b > '0' + JR_WF_LOOPS_MAX) return 0;
        s->num = (uint8_t)(b - '0');
        if (!fits(c, s, cur_cost(s))) return 0;
        s->ph = P_CLOSE;
        return 1;
    default:
        return 0;
    }
}

/* P_AFTER, P_XD, P_XNL, P_RET: after ')' to the end of the line, and the return line. */
static int step_end(const wg_ctx *c, wg_state *s, unsigned char b) {
    int exact, kind;
    switch (s->ph) {
    case P_AFTER:
        if (b == '\n') { commit(s, result_kind(s), cur_cost(s)); return 1; }
        if (b != ' ') return 0;
        kind = result_kind(s);
        if (kind != JR_WF_TEXT && kind != JR_WF_CODE) return 0;
        lit_go(s, L_X, P_XD);
        return 1;
    case P_XD:
        if (b < '2' || b > '0' + JR_WF_REPEAT_MAX) return 0;
        s->K = (uint8_t)(b - '0');
        if (!fits(c, s, cur_cost(s) * s->K)) return 0;
        s->ph = P_XNL;
        return 1;
    case P_XNL:
        if (b != '\n') return 0;
        commit(s, result_kind(s) == JR_WF_CODE ? JR_WF_LIST_CODE : JR_WF_LIST_TEXT, cur_cost(s) * s->K);
        return 1;
    case P_RET:
        if (b == '\n') {
            if (!word_prefix(s, S_RETURN, &exact, &kind) || !exact) return 0;
            s->ph = P_DONE;
            return 1;
        }
        if (!(s->wlen ? namec(b) : lower(b)) || s->wlen >= WG_NAME) return 0;
        s->w[s->wlen++] = (char)b;
        return word_prefix(s, S_RETURN, &exact, &kind);
    default:
        return 0;
    }
}

static int wg_step(const void *ctxp, void *sp, unsigned char b) {
    const wg_ctx *c = ctxp;
    wg_state *s = sp;
    switch (s->ph) {
    case P_LINE: return step_line(c, s, b);
    case P_LIT: return step_lit(c, s, b);
    case P_OP: return step_op(c, s, b);
    case P_NAME: case P_ITEM: return step_name(c, s, b);
    case P_LIST: case P_AFTER_LIST: case P_CLOSE: case P_INSTR: case P_LOOPS: return step_args(c, s, b);
    case P_AFTER: case P_XD: case P_XNL: case P_RET: return step_end(c, s, b);
    default: return 0;
    }
}

static int wg_accepting(const void *ctxp, const void *sp) {
    const wg_state *s = sp;
    int exact = 0, kind;
    if (s->ph == P_DONE) return 1;
    return s->ph == P_RET && s->wlen && word_prefix(s, S_RETURN, &exact, &kind) && exact;
}

/* ---------------------------------------------------------------------------------------------
 * Viability: a fixed continuation policy writes the shortest obvious completion (finish the
 * line with the first candidates that fit, then `return` the newest answer, with one extra
 * `answer(problem)` line when no answer exists yet). A state is viable when the policy reaches an
 * accepted output; the policy's next byte then leads to a viable state again, so generation never
 * gets stuck. The policy may miss completions another path would find; that only narrows what the
 * constraint allows, never what it accepts. */

/* The next byte that extends the word toward the first candidate of the slot, or the
 * terminator when the word is a candidate already. -1 when there is none. */
static int toward(const wg_state *s, int slot, int term) {
    for (int i = -1; i < s->nv; i++) {
        const char *n;
        int L;
        if (!cand(s, slot, i, &n, &L) || L < s->wlen || memcmp(n, s->w, s->wlen)) continue;
        if (slot == S_ITEM && i < 0) continue;
        return L == s->wlen ? term : (unsigned char)n[s->wlen];
    }
    return -1;
}

static int count_kind(const wg_state *s, int slot) {
    int n = 0;
    for (int i = 0; i < s->nv; i++) n += kind_fits(slot, s->vk[i]);
    return n;
}

/* Can the policy supply op's arguments? */
static int op_possible(const wg_ctx *c, const wg_state *s, int op) {
    if (!fits(c, s, jr_wf_op_calls((jr_wf_op)op, 1, 0))) return 0;
    switch (op) {
    case JR_WF_ENSEMBLE: case JR_WF_MDENSEMBLE: return count_kind(s, S_LISTNAME) > 0 || count_kind(s, S_ITEM) >= 2;
    case JR_WF_TEST: return count_kind(s, S_CODE) > 0;
    case JR_WF_REVISE: return count_kind(s, S_REVIEW) > 0;
    default: return 1;
    }
}

static int policy(const wg_ctx *c, const wg_state *s) {
    switch (s->ph) {
    case P_LINE: {
        int ret = has_returnable(s);
        if (ret && s->wlen <= 6 && !memcmp("return", s->w, s->wlen)) return s->wlen == 6 ? ' ' : "return"[s->wlen];
        if (s->wlen && !reserved(s->w, s->wlen) && var_find(s, s->w, s->wlen) < 0) return ' ';
        return s->wlen ? '_' : 'v';
    }
    case P_LIT: return (unsigned char)lits[s->lit][s->li];
    case P_OP: {
        /* an operator starting with the word that fits: the cheap, always-possible ones first */
        static const int order[] = {JR_WF_ENSEMBLE, JR_WF_ANSWER, JR_WF_CUSTOM, JR_WF_CODEGEN, JR_WF_FORMAT, JR_WF_PROGRAM,
                                    JR_WF_TEST, JR_WF_REVISE, JR_WF_REVIEW, JR_WF_REFINE, JR_WF_MDENSEMBLE};
        for (int k = 0; k < JR_WF_N_OPS; k++) {
            const char *on = jr_wf_op_name((jr_wf_op)order[k]);
            if ((int)strlen(on) < s->wlen || memcmp(on, s->w, s->wlen) || !op_possible(c, s, order[k])) continue;
            return on[s->wlen] ? (unsigned char)on[s->wlen] : '(';
        }
        return -1;
    }
    case P_NAME: {
        int last = s->ai + 1 == jr_wf_sigs[s->op].n_args || s->slot == S_LISTNAME;
        return toward(s, s->slot, last ? ')' : ',');
    }
    case P_ITEM: return toward(s, S_ITEM, s->list_n + 1 >= 2 ? ']' : ',');
    case P_LIST: return count_kind(s, S_LISTNAME) ? toward(s, S_LISTNAME, ')') : '[';
    case P_AFTER_LIST: case P_CLOSE: return ')';
    case P_INSTR: return s->ilen ? '"' : 'x';
    case P_LOOPS: return '1';
    case P_AFTER: case P_XNL: return '\n';
    case P_XD: return '2';
    case P_RET: return toward(s, S_RETURN, '\n');
    default: return -1;
    }
}

static int wg_viable(const void *ctxp, const void *sp) {
    const wg_ctx *c = ctxp;
    wg_state s;
    memcpy(&s, sp, sizeof s);
    for (int steps = 0; steps < 4 * (WG_NAME + JR_WF_INSTR_MAX + 64); steps++) {
        if (wg_accepting(ctxp, &s)) return 1;
        int b = policy(c, &s);
        if (b < 0 || !wg_step(ctxp, &s, (unsigned char)b)) return 0;
    }
    return 0;
}

static void wg_start(const void *ctx, void *sp) {
    (void)ctx;
    memset(sp, 0, sizeof(wg_state));
}

jr_status jr_workflow_constraint(jr_constraint **out, const jr_token_bytes *v, const jr_workflow_limits *lim) {
    *out = NULL;
    jr_workflow_limits dl = jr_workflow_limits_default();
    if (!lim) lim = &dl;
    if (lim->max_statements < 2 || lim->max_statements > WG_MAXV + 1 || lim->max_calls < 1 || lim->max_depth < 1)
        return jr_fail(JR_EINVAL, "workflow grammar: max_statements must be 2..%d, max_calls and max_depth >= 1", WG_MAXV + 1);
    wg_ctx *c = malloc(sizeof *c);
    if (!c) return jr_fail(JR_ENOMEM, "workflow grammar: out of memory");
    c->max_stmts = lim->max_statements;
    c->max_calls = lim->max_calls > 60000 ? 60000 : lim->max_calls;
    jr_byte_automaton a = {sizeof(wg_state), c, wg_start, wg_step, wg_viable, wg_accepting, free};
    return jr_constraint_automaton(out, v, &a);
}

/* ---- random valid workflows: uniform walks of the automaton over a few whole pieces ---- */

static const char *const kPieces[] = {
    "a = ", "b = ", "c = ", "answer(", "custom(", "codegen(", "program(", "ensemble(", "mdensemble(", "test(", "review(",
    "revise(", "format(", "refine(", "problem)", "problem, ", "a)", "a, ", "a]", "b)", "b, ", "b]", "c)", "c, ", "c]",
    "[", ")", "1)", "2)", "@\"Find the first hop.\")", ", mode=llm)", "mode=llm)", "\n", " x3\n", " x5\n", "return a", "return b", "return c",
};
#define N_PIECES (int)(sizeof kPieces / sizeof *kPieces)

#define N_NAME_PIECES 3 /* kPieces[0..2]: "a = ", "b = ", "c = " */

static jr_status random_walk(const jr_workflow_limits *lim, int ordered, jr_rng *r, char **out) {
    *out = NULL;
    const char *bytes[N_PIECES + 1];
    int32_t lens[N_PIECES + 1];
    for (int i = 0; i < N_PIECES; i++) {
        bytes[i] = kPieces[i];
        lens[i] = (int32_t)strlen(kPieces[i]);
    }
    bytes[N_PIECES] = NULL; /* the end: allowed when the text so far is a whole workflow */
    lens[N_PIECES] = 0;
    jr_token_bytes tb = {N_PIECES + 1, bytes, lens};
    jr_constraint *c;
    jr_status st = jr_workflow_constraint(&c, &tb, lim);
    if (st) return st;
    jr_cstate s;
    if ((st = jr_cstate_init(&s, c))) { jr_constraint_free(c); return st; }
    uint8_t mask[N_PIECES + 1];
    int ended = 0, assigned = 0;
    for (int step = 0; step < 4096 && !st && !ended; step++) {
        int complete = 0, n = jr_constraint_mask(c, &s, mask, &complete);
        mask[N_PIECES] = (uint8_t)(complete != 0);
        n = n < 0 ? -1 : n + (complete != 0);
        for (int k = 0; ordered && n > 0 && k < N_NAME_PIECES; k++) /* only the next letter starts an assignment */
            if (k != assigned && mask[k]) { mask[k] = 0; n--; }
        if (n <= 0) { st = n < 0 ? JR_EINTERNAL : jr_fail(JR_EINTERNAL, "workflow grammar: a random walk got stuck after \x27%.*s\x27", (int)s.len, s.buf ? s.buf : ""); break; }
        int pick = (int)jr_rng_below(r, (uint64_t)n), t = 0;
        for (; t <= N_PIECES; t++)
            if (mask[t] && pick-- == 0) break;
        if (t == N_PIECES) ended = 1;
        else st = jr_constraint_advance(c, &s, t);
        assigned += t < N_NAME_PIECES;
    }
    if (!st && !ended) st = jr_fail(JR_EINTERNAL, "workflow grammar: a random walk did not end");
    if (!st) {
        *out = malloc(s.len + 1);
        if (!*out) st = jr_fail(JR_ENOMEM, "workflow grammar: out of memory");
        else {
            memcpy(*out, s.buf ? s.buf : "", s.len);
            (*out)[s.len] = 0;
        }
    }
    jr_cstate_free(&s);
    jr_constraint_free(c);
    return st;
}

jr_status jr_workflow_random_with(const jr_workflow_limits *lim, const jr_wf_random_opts *o, jr_rng *r, char **out) {
    jr_status st = JR_OK;
    /* a walk can reach a point where no piece fits (the grammar would need a byte the pieces lack): walk again */
    for (int tries = 0; tries < 64; tries++)
        if ((st = random_walk(lim, o && o->ordered_names, r, out)) != JR_EINTERNAL) return st;
    return st;
}

jr_status jr_workflow_random(const jr_workflow_limits *lim, jr_rng *r, char **out) { return jr_workflow_random_with(lim, NULL, r, out); }
