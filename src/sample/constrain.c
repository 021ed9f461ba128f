/* constrain.c - constrained decoding over a choice trie, a PCRE2 regex (hard partial matching) or a caller's byte automaton */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "judgerl/clock.h"
#include "judgerl/constrain.h"
#include "judgerl/utf8.h"

#include <pcre2.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Bounds on one regex check (see jr_constraint_mask): PCRE2's match limit for an output of n
 * bytes is REGEX_LIMIT_BASE + REGEX_LIMIT_SQ * n^2 (linear and quadratic patterns stay far below,
 * exponential backtracking such as (a+)+b hits it within ~20 bytes); one mask computation may take
 * at most JR_CONSTRAINT_STEP_SECONDS. */
#define REGEX_LIMIT_BASE 10000.0
#define REGEX_LIMIT_SQ 8.0
#define REGEX_LIMIT_MAX 100000000.0

typedef struct {
    int32_t child;   /* first child node, -1 none */
    int32_t sibling; /* next sibling, -1 none */
    uint8_t byte;    /* the byte on the edge into this node */
    uint8_t term;    /* a choice ends here */
} trie_node;

struct jr_constraint {
    jr_token_bytes v;
    int kind; /* 0 choice, 1 regex, 2 automaton */
    trie_node *nodes;
    int n_nodes, cap_nodes;
    pcre2_code *re;
    jr_byte_automaton au;
};

static int trie_step(const trie_node *t, int node, uint8_t b) {
    for (int c = t[node].child; c >= 0; c = t[c].sibling)
        if (t[c].byte == b) return c;
    return -1;
}

static jr_status trie_add(jr_constraint *c, const char *s) {
    int node = 0;
    for (const uint8_t *p = (const uint8_t *)s; *p; p++) {
        int nx = trie_step(c->nodes, node, *p);
        if (nx < 0) {
            if (c->n_nodes == c->cap_nodes) {
                int cap = c->cap_nodes * 2;
                trie_node *t = realloc(c->nodes, (size_t)cap * sizeof *t);
                if (!t) return jr_fail(JR_ENOMEM, "constraint: out of memory for the choice trie");
                c->nodes = t;
                c->cap_nodes = cap;
            }
            nx = c->n_nodes++;
            c->nodes[nx] = (trie_node){-1, c->nodes[node].child, *p, 0};
            c->nodes[node].child = nx;
        }
        node = nx;
    }
    c->nodes[node].term = 1;
    return JR_OK;
}

jr_status jr_constraint_choice(jr_constraint **out, const jr_token_bytes *v, const char *const *choices, int n) {
    *out = NULL;
    if (n <= 0) return jr_fail(JR_EINVAL, "guided_choice: the list of choices is empty");
    for (int i = 0; i < n; i++)
        if (!choices[i] || !choices[i][0]) return jr_fail(JR_EINVAL, "guided_choice[%d]: a choice must be a non-empty string", i);
    jr_constraint *c = calloc(1, sizeof *c);
    if (!c) return jr_fail(JR_ENOMEM, "constraint: out of memory");
    c->v = *v;
    c->cap_nodes = 64;
    c->nodes = malloc((size_t)c->cap_nodes * sizeof *c->nodes);
    if (!c->nodes) { free(c); return jr_fail(JR_ENOMEM, "constraint: out of memory"); }
    c->nodes[0] = (trie_node){-1, -1, 0, 0};
    c->n_nodes = 1;
    for (int i = 0; i < n; i++) {
        jr_status st = trie_add(c, choices[i]);
        if (st) { jr_constraint_free(c); return st; }
    }
    *out = c;
    return JR_OK;
}

jr_status jr_constraint_regex(jr_constraint **out, const jr_token_bytes *v, const char *pattern) {
    *out = NULL;
    size_t n = strlen(pattern);
    char *wrapped = malloc(n + 16);
    if (!wrapped) return jr_fail(JR_ENOMEM, "constraint: out of memory");
    /* The whole output must match: anchored at the start, \z at the end. */
    memcpy(wrapped, "(?:", 3);
    memcpy(wrapped + 3, pattern, n);
    memcpy(wrapped + 3 + n, ")\\z", 4);
    int err;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)wrapped, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_ANCHORED, &err, &off, NULL);
    free(wrapped);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        return jr_fail(JR_EINVAL, "guided_regex: %s at offset %d", (const char *)msg, (int)off - 3);
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE | PCRE2_JIT_PARTIAL_HARD); /* best effort: falls back to the interpreter */
    jr_constraint *c = calloc(1, sizeof *c);
    if (!c) { pcre2_code_free(re); return jr_fail(JR_ENOMEM, "constraint: out of memory"); }
    c->v = *v;
    c->kind = 1;
    c->re = re;
    *out = c;
    return JR_OK;
}

jr_status jr_constraint_automaton(jr_constraint **out, const jr_token_bytes *v, const jr_byte_automaton *a) {
    *out = NULL;
    jr_constraint *c = calloc(1, sizeof *c);
    if (!c) {
        if (a->free_ctx) a->free_ctx(a->ctx);
        return jr_fail(JR_ENOMEM, "constraint: out of memory");
    }
    c->v = *v;
    c->kind = 2;
    c->au = *a;
    *out = c;
    return JR_OK;
}

void jr_constraint_free(jr_constraint *c) {
    if (!c) return;
    if (c->kind == 2 && c->au.free_ctx) c->au.free_ctx(c->au.ctx);
    free(c->nodes);
    if (c->re) pcre2_code_free(c->re);
    free(c);
}

jr_status jr_cstate_init(jr_cstate *s, const jr_constraint *c) {
    memset(s, 0, sizeof *s);
    if (c->kind == 1) {
        s->match = pcre2_match_data_create_from_pattern(c->re, NULL);
        s->mctx = pcre2_match_context_create(NULL);
        if (!s->match || !s->mctx) { jr_cstate_free(s); return jr_fail(JR_ENOMEM, "constraint: out of memory"); }
    }
    if (c->kind == 2) {
        s->match = calloc(2, c->au.state_size);
        if (!s->match) return jr_fail(JR_ENOMEM, "constraint: out of memory");
        c->au.start(c->au.ctx, s->match);
        s->node = -2; /* marks s->match as the automaton's plain allocation */
    }
    return JR_OK;
}

void jr_cstate_free(jr_cstate *s) {
    free(s->buf);
    if (s->match && s->node == -2) free(s->match);
    else if (s->match) pcre2_match_data_free(s->match);
    if (s->mctx) pcre2_match_context_free(s->mctx);
    memset(s, 0, sizeof *s);
}

static int buf_reserve(jr_cstate *s, size_t n) {
    if (s->cap >= n) return 1;
    size_t cap = s->cap ? s->cap : 64;
    while (cap < n) cap *= 2;
    char *b = realloc(s->buf, cap);
    if (!b) return 0;
    s->buf = b;
    s->cap = cap;
    return 1;
}

/* Bytes still missing from an incomplete UTF-8 character at the end of s[0..n) (0 when none). */
static int utf8_missing(const char *s, size_t n) {
    size_t missing;
    jr_utf8_incomplete_tail(s, n, &missing);
    return (int)missing;
}

/* 1 when subject (len bytes) can still be extended into a full match, 2 when it is a full match
 * (possibly extendable too), 0 when neither. */
/* pcre2_match under the match limit for this subject length; a limit hit sets s->failed. */
static int bounded_match(const jr_constraint *c, jr_cstate *s, const char *subj, size_t len, uint32_t opts) {
    double lim = REGEX_LIMIT_BASE + REGEX_LIMIT_SQ * (double)len * (double)len;
    if (lim > REGEX_LIMIT_MAX) lim = REGEX_LIMIT_MAX;
    pcre2_set_match_limit(s->mctx, (uint32_t)lim);
    pcre2_set_depth_limit(s->mctx, (uint32_t)lim);
    int rc = pcre2_match(c->re, (PCRE2_SPTR)subj, len, 0, opts, s->match, s->mctx);
    if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_NOMEMORY) {
        if (!s->failed)
            jr_fail(JR_EINVAL, "guided_regex: checking an output of %zu bytes needs more than %.0f PCRE2 backtracking steps: "
                    "the pattern backtracks catastrophically (a repeated group whose body also repeats, like (a+)+); rewrite it",
                    len, lim);
        s->failed = 1;
    }
    return rc;
}

static int regex_viable(const jr_constraint *c, jr_cstate *s, const char *subj, size_t len) {
    if (len == 0) return 1;
    int rc = bounded_match(c, s, subj, len, PCRE2_PARTIAL_HARD);
    if (rc >= 0) return 2;
    if (rc == PCRE2_ERROR_PARTIAL) return 1;
    return 0;
}

/* Viability of buf[0..len) where the end may be an incomplete UTF-8 character: tries every value
 * of the next byte (the others completed with 0x80), so a character is allowed byte by byte. */
static int regex_viable_utf(const jr_constraint *c, jr_cstate *s, size_t len) {
    int miss = utf8_missing(s->buf, len);
    if (miss == 0) return regex_viable(c, s, s->buf, len);
    if (!buf_reserve(s, len + 4)) return 0;
    for (int b = 0x80; b <= 0xBF; b++) {
        s->buf[len] = (char)b;
        for (int k = 1; k < miss; k++) s->buf[len + k] = (char)0x80;
        if (regex_viable(c, s, s->buf, len + miss)) return 1;
        for (int k = 1; k < miss; k++) s->buf[len + k] = (char)0xBF;
        if (regex_viable(c, s, s->buf, len + miss)) return 1;
    }
    return 0;
}

/* Automaton: steps a copy of the state (into the scratch half) through bytes[0..n); 1 when every
 * byte is accepted and the result is viable. */
static int au_try(const jr_constraint *c, jr_cstate *s, const char *bytes, int n) {
    const jr_byte_automaton *a = &c->au;
    unsigned char *cur = s->match, *tmp = cur + a->state_size;
    memcpy(tmp, cur, a->state_size);
    for (int k = 0; k < n; k++)
        if (!a->step(a->ctx, tmp, (unsigned char)bytes[k])) return 0;
    return a->viable(a->ctx, tmp);
}

static int au_mask(const jr_constraint *c, jr_cstate *s, uint8_t *allowed, int *complete) {
    const jr_token_bytes *v = &c->v;
    int count = 0;
    *complete = c->au.accepting(c->au.ctx, s->match);
    uint8_t first_ok[256];
    for (int b = 0; b < 256; b++) {
        char ch = (char)b;
        first_ok[b] = (uint8_t)au_try(c, s, &ch, 1);
    }
    for (int t = 0; t < v->n; t++) {
        int L = v->len[t];
        if (!v->bytes[t] || L <= 0 || !first_ok[(uint8_t)v->bytes[t][0]]) continue;
        if (L == 1 || au_try(c, s, v->bytes[t], L)) { allowed[t] = 1; count++; }
    }
    return count;
}

int jr_constraint_mask(const jr_constraint *c, jr_cstate *s, uint8_t *allowed, int *complete) {
    const jr_token_bytes *v = &c->v;
    int count = 0;
    memset(allowed, 0, (size_t)v->n);
    if (c->kind == 2) return au_mask(c, s, allowed, complete);
    if (c->kind == 0) {
        *complete = c->nodes[s->node].term;
        for (int t = 0; t < v->n; t++) {
            if (!v->bytes[t] || v->len[t] <= 0) continue;
            int node = s->node;
            for (int k = 0; k < v->len[t] && node >= 0; k++) node = trie_step(c->nodes, node, (uint8_t)v->bytes[t][k]);
            if (node >= 0) { allowed[t] = 1; count++; }
        }
        return count;
    }
    double t0 = jr_now_s();
    s->failed = 0;
    *complete = s->len > 0 && utf8_missing(s->buf, s->len) == 0 && bounded_match(c, s, s->buf, s->len, 0) >= 0;
    if (s->len == 0 && !*complete) *complete = bounded_match(c, s, "", 0, 0) >= 0;
    /* First byte filter: which next bytes can extend the output at all. */
    uint8_t first_ok[256];
    size_t base = s->len;
    if (!buf_reserve(s, base + 8)) return 0;
    for (int b = 0; b < 256; b++) {
        s->buf[base] = (char)b;
        first_ok[b] = (uint8_t)(regex_viable_utf(c, s, base + 1) != 0);
    }
    for (int t = 0; t < v->n; t++) {
        if (s->failed) return -1;
        if ((t & 255) == 0) {
            double el = jr_now_s() - t0;
            if (el > JR_CONSTRAINT_STEP_SECONDS) {
                jr_fail(JR_EINVAL, "guided_regex: one token's check of the vocabulary took more than %g s at an output of %zu bytes; "
                        "the pattern is too costly to enforce (simplify it)", JR_CONSTRAINT_STEP_SECONDS, base);
                return -1;
            }
        }
        int L = v->len[t];
        if (!v->bytes[t] || L <= 0 || !first_ok[(uint8_t)v->bytes[t][0]]) continue;
        if (L == 1) { allowed[t] = 1; count++; continue; }
        if (!buf_reserve(s, base + (size_t)L + 8)) break;
        memcpy(s->buf + base, v->bytes[t], (size_t)L);
        if (regex_viable_utf(c, s, base + (size_t)L)) { allowed[t] = 1; count++; }
    }
    return s->failed ? -1 : count;
}

jr_status jr_constraint_advance(const jr_constraint *c, jr_cstate *s, int32_t tok) {
    const jr_token_bytes *v = &c->v;
    if (tok < 0 || tok >= v->n || !v->bytes[tok] || v->len[tok] <= 0)
        return jr_fail(JR_EINVAL, "constraint: token %d is not allowed here", (int)tok);
    if (c->kind == 0) {
        int node = s->node;
        for (int k = 0; k < v->len[tok] && node >= 0; k++) node = trie_step(c->nodes, node, (uint8_t)v->bytes[tok][k]);
        if (node < 0) return jr_fail(JR_EINVAL, "constraint: token %d leaves every choice", (int)tok);
        s->node = node;
    }
    if (c->kind == 2) {
        if (!au_try(c, s, v->bytes[tok], v->len[tok]))
            return jr_fail(JR_EINVAL, "constraint: token %d cannot lead to an accepted output", (int)tok);
        memcpy(s->match, (unsigned char *)s->match + c->au.state_size, c->au.state_size);
    }
    size_t L = (size_t)v->len[tok];
    if (!buf_reserve(s, s->len + L + 8)) return jr_fail(JR_ENOMEM, "constraint: out of memory");
    memcpy(s->buf + s->len, v->bytes[tok], L);
    s->failed = 0;
    if (c->kind == 1 && !regex_viable_utf(c, s, s->len + L))
        return s->failed ? JR_EINVAL : jr_fail(JR_EINVAL, "constraint: token %d cannot lead to a match", (int)tok);
    s->len += L;
    return JR_OK;
}
