/* exec.c - the workflow executor: runs a parsed workflow on one row, operator by operator, with
 * independent branches (xK runs, list items) in parallel, budgets, and a trace of every call */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/clock.h"
#include "judgerl/rng.h"
#include "judgerl/sandbox.h"
#include "judgerl/strbuf.h"
#include "judgerl/verify.h"
#include "workflow/wf_exec.h"

static const char *const type_names[WF_TYPES] = {"math", "code", "qa"};

/* ---- operator templates ---- */
struct jr_wf_templates {
    char *tmpl[JR_WF_N_OPS][WF_TYPES]; /* OP_TYPE.txt, else OP.txt */
};

static int type_index(const char *type) {
    for (int k = 0; k < WF_TYPES && type; k++)
        if (!strcmp(type, type_names[k])) return k;
    return -1;
}

jr_status jr_wf_templates_open(jr_wf_templates **out, const char *dir, const char *cfg_dir) {
    *out = NULL;
    jr_wf_templates *t = calloc(1, sizeof *t);
    if (!t) return jr_fail(JR_ENOMEM, "workflow templates: out of memory");
    if (!dir) dir = "templates/workflow";
    jr_status st = JR_OK;
    for (int op = 0; op < JR_WF_N_OPS && !st; op++) {
        if (op == JR_WF_REFINE) continue; /* review + revise */
        for (int k = 0; k < WF_TYPES && !st; k++) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s_%s.txt", dir, jr_wf_op_name((jr_wf_op)op), type_names[k]);
            if (jr_template_load(path, cfg_dir, &t->tmpl[op][k]) == JR_OK) continue;
            snprintf(path, sizeof path, "%s/%s.txt", dir, jr_wf_op_name((jr_wf_op)op));
            if (jr_template_load(path, cfg_dir, &t->tmpl[op][k]))
                st = jr_fail(JR_ENOTFOUND, "workflow.templates: neither %s/%s_%s.txt nor %s found (the current directory, the config's directory and the judgerl repository were tried)",
                             dir, jr_wf_op_name((jr_wf_op)op), type_names[k], path);
        }
    }
    if (st) { jr_wf_templates_close(t); return st; }
    jr_err_clear();
    *out = t;
    return JR_OK;
}

void jr_wf_templates_close(jr_wf_templates *t) {
    if (!t) return;
    for (int op = 0; op < JR_WF_N_OPS; op++)
        for (int k = 0; k < WF_TYPES; k++) free(t->tmpl[op][k]);
    free(t);
}

jr_status jr_wf_render(const jr_wf_templates *t, jr_wf_op op, const json_t *row, const json_t *fields, char **out) {
    *out = NULL;
    int k = type_index(json_string_value(json_object_get(row, "type")));
    if (k < 0) return jr_fail(JR_EINVAL, "row: field 'type' must be \"math\", \"code\" or \"qa\"");
    if ((int)op < 0 || op >= JR_WF_N_OPS || !t->tmpl[op][k]) return jr_fail(JR_EINVAL, "workflow templates: operator %d has no template", (int)op);
    json_t *f = fields ? json_deep_copy(fields) : json_object();
    if (!f) return jr_fail(JR_ENOMEM, "workflow templates: out of memory");
    const char *problem = json_string_value(json_object_get(row, "problem"));
    const char *ep = json_string_value(json_object_get(row, "entry_point"));
    if (problem) json_object_set_new(f, "problem", json_string(problem));
    if (ep) json_object_set_new(f, "entry_point", json_string(ep));
    jr_status st = jr_template_render(t->tmpl[op][k], f, out);
    json_decref(f);
    return st;
}

/* ---- executor lifecycle ---- */
jr_status jr_wf_executor_open(jr_wf_executor **out, const jr_judge_opts *jo, const char *cfg_dir, const jr_workflow_opts *o) {
    *out = NULL;
    jr_wf_executor *e = calloc(1, sizeof *e);
    if (!e) return jr_fail(JR_ENOMEM, "workflow executor: out of memory");
    e->o = *o;
    jr_status st = jr_wf_templates_open(&e->tmpl, o->templates, cfg_dir);
    if (!st) st = wf_client_open(e, jo);
    if (st) { jr_wf_executor_close(e); return st; }
    jr_err_clear();
    *out = e;
    return JR_OK;
}

void jr_wf_executor_close(jr_wf_executor *e) {
    if (!e) return;
    wf_client_close(e);
    jr_wf_templates_close(e->tmpl);
    free(e);
}

void jr_wf_result_free(jr_wf_result *r) {
    free(r->answer);
    free(r->reason);
    json_decref(r->trace);
    memset(r, 0, sizeof *r);
}

/* ---- one run ---- */
typedef struct wval {
    jr_wf_kind kind;
    char *text;    /* text / code / a review's feedback */
    int pass;      /* a review: 1 when the solution was judged correct */
    char **items;  /* a list */
    int n;
} wval;

typedef struct run {
    jr_wf_executor *e;
    const jr_workflow *w;
    const json_t *row;
    const char *problem;
    int type;
    pthread_mutex_t mu;
    int calls;
    long tokens;
    double t0, deadline;
    int failed;
    char *reason;
    json_t *trace;
    wval *vals;
    uint64_t seed;
} run;

static void wval_free(wval *v) {
    free(v->text);
    for (int i = 0; i < v->n; i++) free(v->items[i]);
    free(v->items);
    memset(v, 0, sizeof *v);
}

static uint64_t mix(uint64_t a, uint64_t b) {
    uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Records the run's first failure: "line L:C: op: message" (budget failures as they are). */
static int failf(run *r, const jr_wf_node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int failf(run *r, const jr_wf_node *n, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&r->mu);
    if (!r->failed) {
        r->failed = 1;
        char full[900];
        if (n && strncmp(msg, "budget:", 7)) snprintf(full, sizeof full, "line %d:%d: %s: %s", n->line, n->col, jr_wf_op_name(n->op), msg);
        else snprintf(full, sizeof full, "%s", msg);
        r->reason = strdup(full);
    }
    pthread_mutex_unlock(&r->mu);
    return -1;
}

static int has_failed(run *r) {
    pthread_mutex_lock(&r->mu);
    int f = r->failed;
    pthread_mutex_unlock(&r->mu);
    return f;
}

/* Renders the operator's template for the row's type with the given fields (name, value pairs,
 * NULL-terminated; NULL values are left out). NULL when it cannot. */
static char *render(run *r, jr_wf_op op, ...) {
    json_t *f = json_object();
    va_list ap;
    va_start(ap, op);
    for (const char *k; (k = va_arg(ap, const char *));) {
        const char *v = va_arg(ap, const char *);
        if (v && f) json_object_set_new(f, k, json_string(v));
    }
    va_end(ap);
    char *out = NULL;
    if (!f || jr_wf_render(r->e->tmpl, op, r->row, f, &out)) out = NULL;
    json_decref(f);
    return out;
}

/* One model call for node n on branch `path`: budgets first, then the call, then the trace. */
static int llm(run *r, const jr_wf_node *n, uint64_t path, const char *prompt, char **text) {
    *text = NULL;
    if (!prompt) return failf(r, n, "cannot render the operator's template");
    const jr_workflow_opts *o = &r->e->o;
    pthread_mutex_lock(&r->mu);
    int failed = r->failed;
    char budget[200] = "";
    if (r->calls >= o->budget_calls) snprintf(budget, sizeof budget, "budget: %d executor calls used (workflow.budget_calls)", r->calls);
    else if (r->tokens >= o->budget_tokens) snprintf(budget, sizeof budget, "budget: %ld tokens used (workflow.budget_tokens = %ld)", r->tokens, o->budget_tokens);
    else if (jr_now_s() >= r->deadline) snprintf(budget, sizeof budget, "budget: wall time of %.3g s used (workflow.budget_seconds)", o->budget_seconds);
    else if (!failed) r->calls++;
    pthread_mutex_unlock(&r->mu);
    if (failed) return -1;
    if (budget[0]) return failf(r, n, "%s", budget);
    wf_reply rep;
    int rc = wf_client_call(r->e, prompt, mix(r->seed, path), r->deadline, &rep);
    long tok = rep.tokens;
    const char *src = "usage";
    if (tok < 0) { tok = (long)((strlen(prompt) + (rep.text ? strlen(rep.text) : 0) + 3) / 4); src = "estimate"; }
    json_t *c = json_pack("{s:s, s:i, s:i, s:s, s:s, s:s?, s:I, s:s, s:f, s:b, s:s?, s:s?}", "op", jr_wf_op_name(n->op), "line", n->line,
                          "col", n->col, "branch", "", "prompt", prompt, "output", rep.text, "tokens", (json_int_t)tok,
                          "tokens_source", src, "latency_s", rep.latency_s, "cached", rep.cached, "finish", rep.finish,
                          "error", rc ? rep.error : NULL);
    char br[20];
    snprintf(br, sizeof br, "%016llx", (unsigned long long)path);
    if (c) json_object_set_new(c, "branch", json_string(br));
    pthread_mutex_lock(&r->mu);
    r->tokens += tok;
    if (c) json_array_append_new(json_object_get(r->trace, "calls"), c);
    pthread_mutex_unlock(&r->mu);
    if (rc) {
        failf(r, n, "%s", rep.error);
        wf_reply_free(&rep);
        return -1;
    }
    *text = rep.text;
    rep.text = NULL;
    wf_reply_free(&rep);
    return 0;
}

/* ---- reading replies ---- */
static char *trim_dup(const char *s, size_t n) {
    while (n && isspace((unsigned char)*s)) s++, n--;
    while (n && isspace((unsigned char)s[n - 1])) n--;
    return strndup(s, n);
}

/* The content of the last <tag>...</tag>, trimmed (NULL when none). */
static char *tag(const char *text, const char *name) {
    char open[48], close[48];
    snprintf(open, sizeof open, "<%s>", name);
    snprintf(close, sizeof close, "</%s>", name);
    const char *best = NULL, *p = text;
    for (const char *q; (q = strstr(p, open)); p = q + 1) best = q;
    if (!best) return NULL;
    best += strlen(open);
    const char *end = strstr(best, close);
    if (!end) return NULL;
    return trim_dup(best, (size_t)(end - best));
}

/* The code of a reply: the last ``` fenced block (language tag dropped), else the whole reply when
 * it defines or returns something; NULL when there is no code. */
static char *code_of(const char *text) {
    const char *last = NULL, *p = text;
    for (const char *q; (q = strstr(p, "```")); ) {
        const char *body = q + 3;
        const char *end = strstr(body, "```");
        if (!end) break;
        last = q;
        p = end + 3;
    }
    if (last) {
        const char *body = last + 3, *end = strstr(body, "```");
        const char *nl = memchr(body, '\n', (size_t)(end - body));
        if (nl) body = nl + 1; /* drop "python" */
        char *c = trim_dup(body, (size_t)(end - body));
        if (c && *c) return c;
        free(c);
        return NULL;
    }
    if (strstr(text, "def ") || strstr(text, "return")) return trim_dup(text, strlen(text));
    return NULL;
}

/* ---- evaluation ---- */
static int eval(run *r, int id, uint64_t path, wval *out);

typedef struct branch {
    run *r;
    int id;
    uint64_t path;
    wval v;
    int rc;
} branch;

static void *branch_main(void *arg) {
    branch *b = arg;
    b->rc = eval(b->r, b->id, b->path, &b->v);
    return NULL;
}

/* Evaluates node ids[i] on path mix(path, i) for i < n, concurrently; 0 when all succeed. */
static int eval_parallel(run *r, const int *ids, int n, uint64_t path, wval *outs) {
    branch *b = calloc((size_t)n, sizeof *b);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    int *started = calloc((size_t)n, sizeof *started);
    if (!b || !th || !started) { free(b); free(th); free(started); return failf(r, NULL, "out of memory"); }
    for (int i = 0; i < n; i++) {
        b[i] = (branch){r, ids[i], mix(path, (uint64_t)i + 1), {0}, 0};
        started[i] = n > 1 && pthread_create(&th[i], NULL, branch_main, &b[i]) == 0;
        if (!started[i]) branch_main(&b[i]);
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        if (started[i]) pthread_join(th[i], NULL);
        if (b[i].rc) rc = -1;
        outs[i] = b[i].v;
    }
    free(b);
    free(th);
    free(started);
    return rc;
}

static int copy_val(run *r, const wval *src, wval *out) {
    memset(out, 0, sizeof *out);
    out->kind = src->kind;
    out->pass = src->pass;
    if (src->text && !(out->text = strdup(src->text))) return failf(r, NULL, "out of memory");
    if (src->n) {
        out->items = calloc((size_t)src->n, sizeof *out->items);
        if (!out->items) return failf(r, NULL, "out of memory");
        for (out->n = 0; out->n < src->n; out->n++)
            if (!(out->items[out->n] = strdup(src->items[out->n]))) return failf(r, NULL, "out of memory");
    }
    return 0;
}

/* 1 when two answers count as the same vote: code equal ignoring whitespace, else equivalent
 * answers (jr_answer_equiv: canonical forms, numbers, lists). */
static int same_answer(const run *r, const char *a, const char *b) {
    if (r->type != 1) return jr_answer_equiv(a, b);
    for (;;) {
        while (*a && isspace((unsigned char)*a)) a++;
        while (*b && isspace((unsigned char)*b)) b++;
        if (*a != *b || !*a) break;
        a++, b++;
    }
    return !*a && !*b;
}

/* The item whose class of equivalent items has the most votes (weights[j] per item; NULL = one
 * each), the earliest on ties. */
static int vote(const run *r, char **items, int n, const int *weights) {
    int best = 0, best_n = -1;
    for (int i = 0; i < n; i++) {
        int c = 0;
        for (int j = 0; j < n; j++)
            if (same_answer(r, items[i], items[j])) c += weights ? weights[j] : 1;
        if (c > best_n) { best_n = c; best = i; }
    }
    return best;
}

/* "A: ...\n\n" blocks of items in the order order[0..n). */
static char *lettered(char **items, const uint32_t *order, int n) {
    jr_strbuf b = {0};
    for (int i = 0; i < n; i++) {
        char h[8];
        snprintf(h, sizeof h, "%c: ", 'A' + i);
        jr_strbuf_add(&b, h);
        jr_strbuf_add(&b, items[order ? order[i] : (uint32_t)i]);
        jr_strbuf_add(&b, "\n\n");
    }
    return jr_strbuf_take(&b);
}

/* The letter of a reply (<solution_letter>X</solution_letter>, or a reply that is one letter):
 * its index < n, or -1. */
static int letter_of(const char *text, int n) {
    char *t = tag(text, "solution_letter");
    if (!t) t = trim_dup(text, strlen(text));
    int k = -1;
    if (t && strlen(t) == 1 && toupper((unsigned char)t[0]) >= 'A' && toupper((unsigned char)t[0]) < 'A' + n) k = toupper((unsigned char)t[0]) - 'A';
    free(t);
    return k;
}

static int op_ensemble(run *r, const jr_wf_node *n, uint64_t path, wval *list, wval *out) {
    out->kind = list->kind == JR_WF_LIST_CODE ? JR_WF_CODE : JR_WF_TEXT;
    if (n->op == JR_WF_ENSEMBLE && !n->mode_llm) {
        out->text = strdup(list->items[vote(r, list->items, list->n, NULL)]);
        return out->text ? 0 : failf(r, n, "out of memory");
    }
    int votes[JR_WF_LIST_MAX] = {0}, rounds = n->op == JR_WF_ENSEMBLE ? 1 : 3, valid = 0;
    jr_rng rng;
    jr_rng_seed2(&rng, r->seed, path);
    for (int k = 0; k < rounds; k++) {
        uint32_t order[JR_WF_LIST_MAX];
        for (int i = 0; i < list->n; i++) order[i] = (uint32_t)i;
        if (n->op == JR_WF_MDENSEMBLE) jr_rng_shuffle_idx(&rng, order, (uint32_t)list->n);
        char *sol = lettered(list->items, order, list->n);
        char *prompt = sol ? render(r, n->op, "solutions", sol, NULL) : NULL;
        free(sol);
        char *reply;
        int rc = llm(r, n, mix(path, (uint64_t)k), prompt, &reply);
        free(prompt);
        if (rc) return -1;
        int l = letter_of(reply, list->n);
        free(reply);
        if (l >= 0) { votes[order[l]]++; valid++; }
        else if (n->op == JR_WF_ENSEMBLE) return failf(r, n, "the reply names no letter A..%c", 'A' + list->n - 1);
    }
    if (!valid) return failf(r, n, "none of the %d votes names a letter A..%c", rounds, 'A' + list->n - 1);
    out->text = strdup(list->items[vote(r, list->items, list->n, votes)]);
    return out->text ? 0 : failf(r, n, "out of memory");
}

static int op_review(run *r, const jr_wf_node *n, uint64_t path, const char *solution, wval *out) {
    char *prompt = render(r, JR_WF_REVIEW, "solution", solution, NULL), *reply;
    int rc = llm(r, n, path, prompt, &reply);
    free(prompt);
    if (rc) return -1;
    char *res = tag(reply, "review_result"), *fb = tag(reply, "feedback");
    free(reply);
    int pass = -1;
    if (res) {
        for (char *p = res; *p; p++) *p = (char)tolower((unsigned char)*p);
        if (!strcmp(res, "true") || !strcmp(res, "yes")) pass = 1;
        if (!strcmp(res, "false") || !strcmp(res, "no")) pass = 0;
    }
    free(res);
    if (pass < 0) { free(fb); return failf(r, n, "the reply has no <review_result>true|false</review_result>"); }
    out->kind = JR_WF_REVIEWV;
    out->pass = pass;
    out->text = fb ? fb : strdup("");
    return 0;
}

static int op_revise(run *r, const jr_wf_node *n, uint64_t path, const wval *sol, const char *feedback, wval *out) {
    char *prompt = render(r, JR_WF_REVISE, "solution", sol->text, "feedback", feedback, NULL), *reply;
    int rc = llm(r, n, path, prompt, &reply);
    free(prompt);
    if (rc) return -1;
    char *s = tag(reply, "solution");
    if (s && sol->kind == JR_WF_CODE) {
        char *c = code_of(s);
        free(s);
        s = c;
    }
    free(reply);
    if (!s || !*s) { free(s); return failf(r, n, "the reply has no <solution>...</solution>%s", sol->kind == JR_WF_CODE ? " with code" : ""); }
    out->kind = sol->kind;
    out->text = s;
    return 0;
}

/* Records one sandbox run in the trace. */
static void trace_run(run *r, const jr_wf_node *n, const char *code, const char *result, int passed, int total, double wall) {
    json_t *e = json_pack("{s:s, s:i, s:i, s:s, s:s, s:f}", "op", jr_wf_op_name(n->op), "line", n->line, "col", n->col, "code", code,
                          "result", result ? result : "", "wall_s", wall);
    if (e && total >= 0) json_object_set_new(e, "asserts", json_pack("[i, i]", passed, total));
    pthread_mutex_lock(&r->mu);
    if (e) json_array_append_new(json_object_get(r->trace, "sandbox"), e);
    pthread_mutex_unlock(&r->mu);
}

/* program(x): Python defining solve(), run in the sandbox; its printed value is the answer. One
 * retry with the error when the program fails. */
static int op_program(run *r, const jr_wf_node *n, uint64_t path, const char *x, wval *out) {
    char *feedback = NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        char *prompt = render(r, JR_WF_PROGRAM, "input", x, "input_differs", strcmp(x, r->problem) ? "1" : NULL, "feedback", feedback, NULL);
        char *reply;
        int rc = llm(r, n, mix(path, (uint64_t)attempt), prompt, &reply);
        free(prompt);
        free(feedback);
        feedback = NULL;
        if (rc) return -1;
        char *code = code_of(reply);
        free(reply);
        if (!code) {
            feedback = strdup("The reply held no Python code block.");
            continue;
        }
        jr_strbuf b = {0};
        jr_strbuf_add(&b, code);
        jr_strbuf_add(&b, "\n\nprint(solve())\n");
        char *prog = jr_strbuf_take(&b);
        const char *argv[] = {r->e->o.sandbox.python, "-I", "-c", prog ? prog : "", NULL};
        jr_sandbox_result sr;
        jr_status st = prog ? jr_sandbox_run(&r->e->o.sandbox, argv, NULL, 0, &sr) : jr_fail(JR_ENOMEM, "out of memory");
        free(prog);
        if (st) { free(code); return failf(r, n, "sandbox: %s", jr_errmsg()); }
        const char *end = sr.out + sr.out_len, *lb = end;
        while (lb > sr.out && isspace((unsigned char)lb[-1])) lb--;
        end = lb;
        while (lb > sr.out && lb[-1] != '\n') lb--;
        int ok = sr.outcome == JR_SB_PASSED && end > lb;
        char why[600];
        snprintf(why, sizeof why, "%s%s%.400s", sr.outcome == JR_SB_TIMEOUT ? "timed out" : sr.reason ? sr.reason : ok ? "ran" : "printed nothing",
                 sr.err_len ? ": " : "", sr.err_len ? sr.err : "");
        trace_run(r, n, code, ok ? "printed a value" : why, 0, -1, sr.wall_s);
        if (ok) {
            out->kind = JR_WF_TEXT;
            out->text = strndup(lb, (size_t)(end - lb));
        }
        jr_sandbox_result_free(&sr);
        if (ok) { free(code); return out->text ? 0 : failf(r, n, "out of memory"); }
        feedback = malloc(strlen(code) + strlen(why) + 64);
        if (feedback) sprintf(feedback, "Code:\n%s\n\nResult: %s", code, why);
        free(code);
    }
    free(feedback);
    return failf(r, n, "the program failed twice in the sandbox (see the trace)");
}

/* test(code, loops): runs the code against the row's PUBLIC tests in the sandbox; on failure asks
 * for a fix, at most `loops` times. Gives the last code (passing or not: the grade decides). */
static int op_test(run *r, const jr_wf_node *n, uint64_t path, const wval *code, wval *out) {
    const char *tests = json_string_value(json_object_get(r->row, "public_tests"));
    const char *ep = json_string_value(json_object_get(r->row, "entry_point"));
    if (!tests || !ep) return failf(r, n, "the row has no public_tests and entry_point to test against");
    char *suite = malloc(strlen(tests) + 64);
    if (!suite) return failf(r, n, "out of memory");
    sprintf(suite, "%s\n\ndef check(candidate):\n    pass\n", tests); /* the driver calls check(entry_point) */
    char *cur = strdup(code->text);
    for (int k = 0; cur; k++) {
        jr_py_job job = {cur, suite, ep, 1, NULL};
        jr_py_result pr;
        jr_status st = jr_sandbox_python(&r->e->o.sandbox, &job, &pr);
        if (st) { free(cur); free(suite); return failf(r, n, "sandbox: %s", jr_errmsg()); }
        trace_run(r, n, cur, pr.result, pr.asserts_passed, pr.asserts_total, pr.wall_s);
        int passed = pr.outcome == JR_SB_PASSED;
        char why[600];
        snprintf(why, sizeof why, "%s", pr.result ? pr.result : "failed");
        jr_py_result_free(&pr);
        if (passed || k == n->num) break;
        char *prompt = render(r, JR_WF_TEST, "solution", cur, "error", why, NULL), *reply;
        if (llm(r, n, mix(path, (uint64_t)k), prompt, &reply)) { free(prompt); free(cur); free(suite); return -1; }
        free(prompt);
        char *fixed = code_of(reply);
        free(reply);
        if (!fixed) { free(cur); free(suite); return failf(r, n, "the fix holds no code"); }
        free(cur);
        cur = fixed;
    }
    free(suite);
    if (!cur) return failf(r, n, "out of memory");
    out->kind = JR_WF_CODE;
    out->text = cur;
    return 0;
}

static int run_call(run *r, int id, uint64_t path, wval *args, wval *out) {
    const jr_wf_node *n = &r->w->nodes[id];
    const char *x = args[0].text;
    char *prompt = NULL, *reply = NULL;
    switch (n->op) {
    case JR_WF_ANSWER: case JR_WF_CUSTOM: case JR_WF_CODEGEN: case JR_WF_FORMAT: {
        const char *instr = n->op == JR_WF_CUSTOM ? r->w->nodes[n->args[1]].instr : NULL;
        prompt = n->op == JR_WF_FORMAT ? render(r, n->op, "solution", x, NULL) : render(r, n->op, "input", x, "instruction", instr, NULL);
        int rc = llm(r, n, path, prompt, &reply);
        free(prompt);
        if (rc) return -1;
        char *v = n->op == JR_WF_CODEGEN ? code_of(reply) : n->op == JR_WF_CUSTOM ? trim_dup(reply, strlen(reply)) : tag(reply, "answer");
        free(reply);
        if (!v || !*v) {
            free(v);
            return failf(r, n, "%s", n->op == JR_WF_CODEGEN ? "the reply holds no code" : n->op == JR_WF_CUSTOM ? "the reply is empty" : "the reply has no <answer>...</answer>");
        }
        out->kind = n->op == JR_WF_CODEGEN ? JR_WF_CODE : JR_WF_TEXT;
        out->text = v;
        return 0;
    }
    case JR_WF_PROGRAM:
        return op_program(r, n, path, x, out);
    case JR_WF_TEST:
        return op_test(r, n, path, &args[0], out);
    case JR_WF_ENSEMBLE: case JR_WF_MDENSEMBLE:
        return op_ensemble(r, n, path, &args[0], out);
    case JR_WF_REVIEW:
        return op_review(r, n, path, x, out);
    case JR_WF_REVISE:
        return op_revise(r, n, path, &args[0], args[1].text, out);
    case JR_WF_REFINE: {
        if (copy_val(r, &args[0], out)) return -1;
        for (int k = 0; k < n->num; k++) {
            wval rv = {0}, nv = {0};
            if (op_review(r, n, mix(path, 2 * (uint64_t)k), out->text, &rv)) { wval_free(&rv); return -1; }
            int pass = rv.pass;
            if (!pass && op_revise(r, n, mix(path, 2 * (uint64_t)k + 1), out, rv.text, &nv)) { wval_free(&rv); return -1; }
            wval_free(&rv);
            if (pass) break;
            wval_free(out);
            *out = nv;
        }
        return 0;
    }
    default:
        return failf(r, n, "operator not runnable");
    }
}

/* A list of `kind` from nodes ids[0..n) evaluated in parallel (the K runs of xK, a [..] literal). */
static int eval_list(run *r, const int *ids, int n, uint64_t path, jr_wf_kind kind, wval *out) {
    wval outs[JR_WF_LIST_MAX > JR_WF_REPEAT_MAX ? JR_WF_LIST_MAX : JR_WF_REPEAT_MAX];
    int rc = eval_parallel(r, ids, n, path, outs);
    out->kind = kind;
    out->items = calloc((size_t)n, sizeof *out->items);
    for (int k = 0; k < n; k++) {
        if (out->items) { out->items[out->n++] = outs[k].text; outs[k].text = NULL; }
        wval_free(&outs[k]);
    }
    if (!out->items) return failf(r, NULL, "out of memory");
    return rc;
}

static int eval(run *r, int id, uint64_t path, wval *out) {
    memset(out, 0, sizeof *out);
    if (has_failed(r)) return -1;
    const jr_wf_node *n = &r->w->nodes[id];
    if (n->type == JR_WF_N_VAR) {
        if (n->var < 0) {
            out->kind = JR_WF_TEXT;
            out->text = strdup(r->problem);
            return out->text ? 0 : failf(r, NULL, "out of memory");
        }
        return copy_val(r, &r->vals[n->var], out);
    }
    if (n->type == JR_WF_N_LIST) return eval_list(r, n->items, n->n_items, path, n->kind, out);
    if (n->type != JR_WF_N_CALL) return 0; /* instructions and numbers are read from the node */
    wval args[3] = {{0}};
    int rc = 0;
    for (int i = 0; i < n->n_args && !rc; i++) rc = eval(r, n->args[i], mix(path, 100 + (uint64_t)i), &args[i]);
    if (!rc) rc = run_call(r, id, path, args, out);
    for (int i = 0; i < n->n_args; i++) wval_free(&args[i]);
    return rc;
}

/* Runs statement i: its call, or K independent runs of it in parallel (a list). */
static int run_stmt(run *r, int i) {
    const jr_wf_stmt *s = &r->w->stmts[i];
    uint64_t path = mix(0x5747, (uint64_t)i);
    if (s->repeat <= 1) return eval(r, s->expr, path, &r->vals[i]);
    int ids[JR_WF_REPEAT_MAX];
    for (int k = 0; k < s->repeat; k++) ids[k] = s->expr;
    return eval_list(r, ids, s->repeat, path, s->kind, &r->vals[i]);
}

jr_status jr_workflow_run(jr_wf_executor *e, const jr_workflow *w, const json_t *row, uint64_t row_index, jr_wf_result *out) {
    memset(out, 0, sizeof *out);
    const char *problem = json_string_value(json_object_get(row, "problem"));
    if (!problem) return jr_fail(JR_EINVAL, "row: field 'problem' must be a string");
    const char *type = json_string_value(json_object_get(row, "type"));
    int t = type_index(type);
    if (t < 0) return jr_fail(JR_EINVAL, "row: field 'type' must be \"math\", \"code\" or \"qa\"");
    run r = {.e = e, .w = w, .row = row, .problem = problem, .type = t, .seed = mix(e->o.seed, row_index)};
    pthread_mutex_init(&r.mu, NULL);
    r.t0 = jr_now_s();
    r.deadline = r.t0 + e->o.budget_seconds;
    r.trace = json_pack("{s:[], s:[]}", "calls", "sandbox");
    r.vals = calloc((size_t)(w->n_stmts ? w->n_stmts : 1), sizeof *r.vals);
    if (!r.trace || !r.vals) {
        json_decref(r.trace);
        free(r.vals);
        pthread_mutex_destroy(&r.mu);
        return jr_fail(JR_ENOMEM, "workflow run: out of memory");
    }
    for (int i = 0; i < w->n_stmts && !r.failed; i++) run_stmt(&r, i);
    out->wall_s = jr_now_s() - r.t0;
    out->n_calls = r.calls;
    out->tokens = r.tokens;
    if (!r.failed && (w->ret < 0 || !r.vals[w->ret].text)) failf(&r, NULL, "the returned value is empty");
    if (r.failed) {
        out->ok = 0;
        out->reason = r.reason;
    } else {
        out->ok = 1;
        out->answer = strdup(r.vals[w->ret].text);
    }
    json_object_set_new(r.trace, "outcome", json_string(out->ok ? "answer" : "failed"));
    json_object_set_new(r.trace, out->ok ? "answer" : "reason", json_string(out->ok ? out->answer : out->reason));
    json_object_set_new(r.trace, "n_calls", json_integer(r.calls));
    json_object_set_new(r.trace, "tokens", json_integer(r.tokens));
    json_object_set_new(r.trace, "wall_s", json_real(out->wall_s));
    json_object_set_new(r.trace, "max_calls", json_integer(w->max_calls));
    out->trace = r.trace;
    for (int i = 0; i < w->n_stmts; i++) wval_free(&r.vals[i]);
    free(r.vals);
    pthread_mutex_destroy(&r.mu);
    return JR_OK;
}
