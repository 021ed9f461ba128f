/* wf_env.c - the workflow environment (wfrl.h): a policy's completion is a workflow; it is parsed,
 * executed on its row, its answer scored by the reward registry (seed 2's five components) and
 * graded for gold accuracy by a verifier. Also the `workflow_correctness` reward function. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/clock.h"
#include "judgerl/fsutil.h"
#include "judgerl/verify.h"
#include "judgerl/wfrl.h"

const jr_cfg_field jr_wf_env_cfg[] = {
    {"wfenv.price_per_1k", JR_CFG_FLOAT, "0.002",
     "executor price per 1,000 tokens (prompt + completion): the efficiency component's cost is tokens / 1000 x this; "
     "a local executor gets a price too, so it is not free (and not scored 0)", NULL, NULL, 0, 1e6},
    {"wfenv.invalid_reward", JR_CFG_FLOAT, "-5.0",
     "reward of a workflow that does not parse (below every executed workflow's reward, -3.75 at least)", NULL, NULL,
     -1e6, 1e6},
    {"wfenv.failed_reward", JR_CFG_FLOAT, "-4.0",
     "reward of a workflow that parses but ends without an answer (operator or budget failure)", NULL, NULL, -1e6, 1e6},
    {"wfenv.parallel", JR_CFG_INT, "4", "workflows executed at once", NULL, NULL, 1, 1024},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

void jr_wf_env_opts_from_config(jr_wf_env_opts *o, const jr_config *c) {
    o->price_per_1k = jr_cfg_float(c, "wfenv.price_per_1k");
    o->invalid_reward = jr_cfg_float(c, "wfenv.invalid_reward");
    o->failed_reward = jr_cfg_float(c, "wfenv.failed_reward");
    o->parallel = (int)jr_cfg_int(c, "wfenv.parallel");
}

/* ---- the correctness reward function ---- */

static jr_rw_rc wfc_unscored(jr_rw_out *out, const char *fmt, const char *arg) {
    size_t n = strlen(fmt) + (arg ? strlen(arg) : 0) + 1;
    out->reason = malloc(n);
    if (out->reason) snprintf(out->reason, n, fmt, arg ? arg : "");
    return JR_RW_UNSCORED;
}

static jr_rw_rc eval_wf_correct(const jr_reward_opts *ro, const json_t *params, const json_t *row, jr_rw_out *out) {
    const char *type = json_string_value(json_object_get(row, "type"));
    const char *resp = json_string_value(json_object_get(row, "response"));
    if (!type) return wfc_unscored(out, "workflow_correctness: field 'type' must be math, code or qa%s", NULL);
    if (!resp) return wfc_unscored(out, "workflow_correctness: field 'response' must be a string%s", NULL);
    if (!strcmp(type, "code")) {
        int ok;
        char why[256];
        if (jr_wf_grade(row, resp, &ro->sandbox, &ok, why, sizeof why))
            return wfc_unscored(out, "workflow_correctness: hidden tests: %s", jr_errmsg());
        out->value = ok ? ro->judge.reference.correct : ro->judge.reference.incorrect;
        out->detail = json_pack("{s:s,s:b}", "hidden_tests", why, "passed", ok);
        return JR_RW_SCORED;
    }
    char nb[64];
    const char *ref = jr_row_text_or_number(row, "answer", nb, sizeof nb);
    if (!ref) return wfc_unscored(out, "workflow_correctness: field 'answer' (the reference) must be a string or a number%s", NULL);
    int verifier_only = json_is_false(json_object_get(params, "judge"));
    if (ro->judge.reference.shortcircuit || verifier_only) {
        char *got = jr_answer_extract(resp);
        int eq = jr_answer_equiv(resp, ref) || (got && jr_answer_equiv(got, ref));
        free(got);
        if (eq) {
            out->value = ro->judge.reference.correct;
            out->detail = json_pack("{s:b}", "shortcircuit", 1);
            return JR_RW_SCORED;
        }
    }
    if (verifier_only) { /* params.judge: false: no match is wrong, without a judge */
        out->value = ro->judge.reference.incorrect;
        out->detail = json_pack("{s:b}", "verifier", 1);
        return JR_RW_SCORED;
    }
    out->judge_row = json_incref((json_t *)row);
    return JR_RW_JUDGE;
}

static jr_status check_wf_correct(const json_t *params) {
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)params, k, v) {
        if (strcmp(k, "judge")) return jr_fail(JR_EINVAL, "workflow_correctness: unknown param '%s' (judge)", k);
        if (!json_is_boolean(v)) return jr_fail(JR_EINVAL, "workflow_correctness: params.judge must be true or false");
    }
    return JR_OK;
}

static const jr_reward_fn wf_correct_fn = {
    "workflow_correctness", "reference",
    "seed 2: maths / QA by the reference protocol (10 / -5; params.judge: false = the verifier alone: a normalised "
    "match 10, else -5), code by the row's hidden_tests in the sandbox", check_wf_correct, eval_wf_correct};

static pthread_once_t reg_once = PTHREAD_ONCE_INIT;
static jr_status reg_status;
static char reg_msg[256];

static void do_register(void) {
    reg_status = jr_reward_fn_register(&wf_correct_fn);
    if (reg_status) snprintf(reg_msg, sizeof reg_msg, "%s", jr_errmsg());
}

jr_status jr_wf_reward_register(void) {
    pthread_once(&reg_once, do_register);
    return reg_status ? jr_fail(reg_status, "%s", reg_msg) : JR_OK;
}

/* ---- the environment ---- */

typedef struct {
    uint64_t id;
    json_t *row;        /* the trainer's row (a copy) */
    char *text;         /* the workflow */
    /* filled by the worker */
    jr_workflow *w;
    char *parse_error;
    jr_wf_result res;
    int gold, gold_known;
    char gold_why[256];
} wf_item;

/* Statistics of one split and domain. */
#define WF_MAX_PARTS 32
typedef struct {
    long n, scored, valid, answered, gold_right, gold_errors, ops_sum, tokens_sum;
    double reward_sum;
    double comp_sum[WF_MAX_PARTS];
    long comp_n[WF_MAX_PARTS];
    long op_used[JR_WF_N_OPS];
    long op_returned[JR_WF_N_OPS + 1]; /* jr_workflow_returned_op; [JR_WF_N_OPS]: mixed */
} wf_stat;

static const char *const kDomains[] = {"math", "code", "qa", "overall"};

typedef struct {
    jr_wf_executor *ex;
    jr_reward *rw;
    const jr_workflow_opts *wo;
    jr_wf_env_opts o;
    wf_item *items;
    size_t n, cap;
    atomic_size_t next;
    atomic_int canceled;
    const char **names;
    double *weights;
    struct jr_wf_buffer *buffer;
    const int64_t *step;
    int shuffle_buffer;     /* jr_wf_env_shuffle_buffer */
    uint64_t shuffle_seed;
    pthread_mutex_t mu;
    wf_stat stats[2][4]; /* [heldout][domain] */
} wf_env;

static int is_heldout(const json_t *row) {
    const char *s = json_string_value(json_object_get(row, "split"));
    return s && !strcmp(s, "heldout");
}

static int domain_index(const json_t *row) {
    const char *t = json_string_value(json_object_get(row, "type"));
    for (int d = 0; t && d < 3; d++)
        if (!strcmp(t, kDomains[d])) return d;
    return -1;
}

/* An answer the verifier could not grade (work_one kept its message in gold_why): never silently wrong. */
static int gold_error(const wf_item *it) { return it->w && it->res.ok && it->gold_known == 0; }

/* Adds a finished sample to its split's statistics (under e->mu). */
static void stat_add(wf_env *e, const wf_item *it, const jr_env_result *r) {
    int d = domain_index(it->row);
    wf_stat *targets[2] = {&e->stats[is_heldout(it->row)][3], d >= 0 ? &e->stats[is_heldout(it->row)][d] : NULL};
    int used[JR_WF_N_OPS] = {0}, ret = it->w ? jr_workflow_returned_op(it->w) : 0; /* once for both targets */
    for (int i = 0; it->w && i < it->w->n_nodes; i++)
        if (it->w->nodes[i].type == JR_WF_N_CALL) used[it->w->nodes[i].op] = 1;
    for (int t = 0; t < 2; t++) {
        wf_stat *s = targets[t];
        if (!s) continue;
        s->n++;
        if (r->scored) { s->scored++; s->reward_sum += r->reward; }
        for (int c = 0; c < r->n_parts && c < WF_MAX_PARTS; c++)
            if (r->parts_scored[c]) { s->comp_sum[c] += r->parts[c]; s->comp_n[c]++; }
        if (it->w) {
            s->valid++;
            s->ops_sum += it->w->n_operators;
            for (int o = 0; o < JR_WF_N_OPS; o++) s->op_used[o] += used[o];
            s->op_returned[ret]++;
        }
        if (it->w && it->res.ok) s->answered++;
        s->gold_right += it->gold_known == 1 && it->gold;
        s->gold_errors += gold_error(it);
        s->tokens_sum += it->res.tokens;
    }
}

static void item_free(wf_item *it) {
    json_decref(it->row);
    free(it->text);
    jr_workflow_free(it->w);
    free(it->parse_error);
    jr_wf_result_free(&it->res);
    memset(it, 0, sizeof *it);
}

static jr_status we_submit(void *ctx, const json_t *row, const char *completion, size_t len, uint64_t id, jr_env_queue *q) {
    wf_env *e = ctx;
    (void)q;
    if (e->n == e->cap) {
        size_t nc = e->cap ? 2 * e->cap : 16;
        wf_item *ni = realloc(e->items, nc * sizeof *ni);
        if (!ni) return jr_fail(JR_ENOMEM, "workflow environment: out of memory");
        e->items = ni;
        e->cap = nc;
    }
    wf_item *it = &e->items[e->n];
    memset(it, 0, sizeof *it);
    it->id = id;
    it->row = json_deep_copy(row);
    it->text = jr_malloc(len + 1);
    if (!it->row || !it->text) { item_free(it); return jr_fail(JR_ENOMEM, "workflow environment: out of memory"); }
    memcpy(it->text, completion, len);
    it->text[len] = 0;
    e->n++;
    return JR_OK;
}

/* The key of the executor's draws for an item: a held-out sample with a "sample_index" (its place in its
 * prompt's group) is keyed by its problem text and that index, so every evaluation of a held-out row, the
 * policy's and a fixed workflow's alike, gives its k-th sample the same executor draws (a workflow scored
 * twice on a row scores the same; comparisons are paired); any other sample by its id (its slot). */
static uint64_t exec_key(const wf_item *it) {
    const json_t *k = json_object_get(it->row, "sample_index");
    const char *prob = json_string_value(json_object_get(it->row, "problem"));
    if (!is_heldout(it->row) || !json_is_integer(k) || !prob) return it->id;
    return jr_rng_hash(prob, strlen(prob)) ^ ((uint64_t)json_integer_value(k) * 0x9e3779b97f4a7c15ULL);
}

/* Parses, runs and gold-grades item i (any thread). */
static void work_one(wf_env *e, wf_item *it) {
    if (jr_workflow_parse(it->text, strlen(it->text), &e->wo->limits, &it->w)) {
        it->parse_error = jr_strdup(jr_errmsg());
        return;
    }
    if (jr_workflow_run(e->ex, it->w, it->row, exec_key(it), &it->res)) {
        /* the row itself is unusable: reported as unscored with the message */
        it->parse_error = NULL;
        it->res.ok = 0;
        it->res.reason = jr_strdup(jr_errmsg());
        it->res.trace = NULL;
        it->gold_known = -1;
        return;
    }
    if (it->res.ok) {
        char why[256];
        if (!jr_wf_grade(it->row, it->res.answer, &e->wo->sandbox, &it->gold, why, sizeof why)) it->gold_known = 1;
        snprintf(it->gold_why, sizeof it->gold_why, "%s", it->gold_known ? why : jr_errmsg());
    } else {
        it->gold = 0; /* a failed run counts as wrong */
        it->gold_known = 1;
    }
}

static void *worker(void *arg) {
    wf_env *e = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&e->next, 1);
        if (i >= e->n || atomic_load(&e->canceled)) break;
        work_one(e, &e->items[i]);
    }
    return NULL;
}

static json_t *operators_of(const jr_workflow *w) {
    json_t *a = json_array();
    for (int i = 0; w && i < w->n_nodes; i++)
        if (w->nodes[i].type == JR_WF_N_CALL) json_array_append_new(a, json_string(jr_wf_op_name(w->nodes[i].op)));
    return a;
}

/* The registry's row of an executed item. */
static json_t *reward_row(const wf_env *e, const wf_item *it) {
    json_t *r = json_object();
    const char *copy[] = {"id", "problem", "answer", "type", "entry_point", "hidden_tests", NULL};
    for (int k = 0; copy[k]; k++) {
        json_t *v = json_object_get(it->row, copy[k]);
        if (v) json_object_set(r, copy[k], v);
    }
    json_t *pr = json_object_get(it->row, "problem");
    if (pr) json_object_set(r, "prompt", pr); /* the judge sees the problem, not the Layer-1 prompt */
    json_object_set_new(r, "response", json_string(it->res.answer));
    json_object_set_new(r, "cost", json_real((double)it->res.tokens / 1000.0 * e->o.price_per_1k));
    json_object_set_new(r, "latency", json_real(it->res.wall_s));
    json_object_set_new(r, "operator_count", json_integer(it->w->n_operators));
    json_object_set_new(r, "workflow", json_string(it->text));
    return r;
}

static json_t *item_detail(const wf_env *e, const wf_item *it) {
    const char *dom = json_string_value(json_object_get(it->row, "type"));
    json_t *d = json_pack("{s:b,s:s}", "valid", it->w != NULL, "domain", dom ? dom : "");
    if (!d) return NULL;
    if (!it->w) {
        json_object_set_new(d, "outcome", json_string("invalid"));
        json_object_set_new(d, "reason", json_string(it->parse_error ? it->parse_error : "does not parse"));
        json_object_set_new(d, "gold_correct", json_false());
        json_object_set_new(d, "n_operators", json_integer(0));
        return d;
    }
    json_object_set_new(d, "outcome", json_string(it->res.ok ? "answer" : "failed"));
    if (it->res.ok) json_object_set_new(d, "answer", json_string(it->res.answer));
    else json_object_set_new(d, "reason", json_string(it->res.reason ? it->res.reason : "failed"));
    json_object_set_new(d, "n_operators", json_integer(it->w->n_operators));
    json_object_set_new(d, "operators", operators_of(it->w));
    int ret = jr_workflow_returned_op(it->w);
    json_object_set_new(d, "returned", json_string(ret < JR_WF_N_OPS ? jr_wf_op_name((jr_wf_op)ret) : "mixed"));
    json_object_set_new(d, "n_calls", json_integer(it->res.n_calls));
    json_object_set_new(d, "tokens", json_integer(it->res.tokens));
    json_object_set_new(d, "wall_s", json_real(it->res.wall_s));
    json_object_set_new(d, "cost", json_real((double)it->res.tokens / 1000.0 * e->o.price_per_1k));
    if (it->gold_known == 1) {
        json_object_set_new(d, "gold_correct", json_boolean(it->gold));
        json_object_set_new(d, "gold", json_string(it->gold_why));
    } else if (gold_error(it)) {
        json_object_set_new(d, "gold_error", json_string(it->gold_why));
    }
    if (it->res.trace) json_object_set(d, "trace", it->res.trace);
    return d;
}

/* Offers the flush's scored training samples (items which[0..n-1], rewards rw) to the buffer, sample k with
 * the reward of sample perm[k]: perm is the identity, or for the shuffled-reward control a permutation seeded
 * by (seed, step). */
static jr_status buffer_offer(wf_env *e, const size_t *which, const double *rw, size_t n) {
    int64_t step = e->step ? *e->step : 0;
    uint32_t *perm = jr_calloc(n + 1, sizeof *perm);
    if (!perm) return jr_fail(JR_ENOMEM, "workflow environment: out of memory");
    for (size_t k = 0; k < n; k++) perm[k] = (uint32_t)k;
    if (e->shuffle_buffer) {
        jr_rng r;
        jr_rng_seed2(&r, e->shuffle_seed ^ 0x627566666572ULL, (uint64_t)step);
        jr_rng_shuffle_idx(&r, perm, (uint32_t)n);
    }
    /* every scored sample is a try of its workflow (jr_wf_buffer_record), one transaction for the flush */
    const char **dom = jr_calloc(n + 1, sizeof *dom), **wf = jr_calloc(n + 1, sizeof *wf);
    double *r = jr_calloc(n + 1, sizeof *r);
    jr_status st = dom && wf && r ? JR_OK : jr_fail(JR_ENOMEM, "workflow environment: out of memory");
    size_t m = 0;
    for (size_t k = 0; k < n && !st; k++) {
        const wf_item *it = &e->items[which[k]];
        if (!json_string_value(json_object_get(it->row, "problem"))) continue;
        dom[m] = kDomains[domain_index(it->row)], wf[m] = it->text, r[m++] = rw[perm[k]];
    }
    if (!st) st = jr_wf_buffer_record(e->buffer, m, dom, wf, r, step);
    for (size_t k = 0; k < n && !st; k++) {
        const wf_item *it = &e->items[which[k]];
        const char *prob = json_string_value(json_object_get(it->row, "problem"));
        if (prob) st = jr_wf_buffer_add(e->buffer, kDomains[domain_index(it->row)], prob, it->text, rw[perm[k]], step, NULL);
    }
    free(perm);
    free(dom);
    free(wf);
    free(r);
    return st;
}

static jr_status we_flush(void *ctx, jr_env_queue *q) {
    wf_env *e = ctx;
    if (!e->n) return JR_OK;
    atomic_store(&e->next, 0);
    int nt = e->o.parallel < (int)e->n ? e->o.parallel : (int)e->n;
    pthread_t th[1024];
    int started = 0;
    for (int t = 0; t < nt && t < 1024; t++)
        if (!pthread_create(&th[started], NULL, worker, e)) started++;
    if (!started) worker(e);
    for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
    jr_status st = JR_OK;
    if (atomic_load(&e->canceled)) goto done;
    /* the executed items with an answer go to the registry together (judge calls run concurrently) */
    size_t na = 0;
    json_t **rows = jr_calloc(e->n + 1, sizeof *rows);
    size_t *which = jr_calloc(e->n + 1, sizeof *which), *offer = jr_calloc(e->n + 1, sizeof *offer), n_offer = 0;
    double *offer_rw = jr_calloc(e->n + 1, sizeof *offer_rw);
    jr_reward_result *rr = jr_calloc(e->n + 1, sizeof *rr);
    if (!rows || !which || !rr || !offer || !offer_rw) {
        free(rows); free(which); free(rr); free(offer); free(offer_rw);
        st = jr_fail(JR_ENOMEM, "workflow environment: out of memory");
        goto done;
    }
    for (size_t i = 0; i < e->n; i++)
        if (e->items[i].w && e->items[i].res.ok) {
            which[na] = i;
            rows[na++] = reward_row(e, &e->items[i]);
        }
    if (na) st = jr_reward_score(e->rw, (const json_t *const *)rows, na, rr);
    size_t k = 0;
    for (size_t i = 0; i < e->n; i++) {
        wf_item *it = &e->items[i];
        jr_env_result r = {.id = it->id};
        jr_env_result_parts(&r, jr_reward_n_parts(e->rw));
        r.detail = item_detail(e, it);
        r.cost.model_calls = it->res.n_calls;
        r.cost.tokens = it->res.tokens;
        r.cost.seconds = it->res.wall_s;
        if (k < na && which[k] == i) {
            jr_reward_result *x = &rr[k++];
            r.scored = x->scored;
            r.reward = x->scored ? x->reward : NAN;
            if (!x->scored) r.reason = jr_strdup(x->reason ? x->reason : "unscored");
            r.cost.model_calls += x->judge_calls;
            for (int c = 0; c < x->n_parts && c < r.n_parts; c++) {
                r.parts[c] = x->parts[c].scored ? x->parts[c].value : NAN;
                r.parts_scored[c] = (uint8_t)x->parts[c].scored;
            }
            if (r.detail) json_object_set_new(r.detail, "components", jr_reward_result_json(e->rw, x));
        } else if (it->gold_known == -1) {
            r.scored = 0; /* the row is unusable: never a score */
            r.reward = NAN;
            r.reason = jr_strdup(it->res.reason ? it->res.reason : "row unusable");
        } else {
            r.scored = 1;
            r.reward = it->w ? e->o.failed_reward : e->o.invalid_reward;
            for (int c = 0; c < r.n_parts; c++) r.parts[c] = NAN;
        }
        pthread_mutex_lock(&e->mu);
        stat_add(e, it, &r);
        pthread_mutex_unlock(&e->mu);
        if (e->buffer && r.scored && !is_heldout(it->row) && domain_index(it->row) >= 0) {
            offer[n_offer] = i;
            offer_rw[n_offer++] = r.reward;
        }
        jr_env_queue_push(q, &r);
    }
    if (n_offer) {
        jr_status bs = buffer_offer(e, offer, offer_rw, n_offer);
        if (bs && !st) st = bs;
    }
    free(offer); free(offer_rw);
    for (size_t i = 0; i < na; i++) { json_decref(rows[i]); jr_reward_result_free(&rr[i]); }
    free(rows); free(which); free(rr);
done:
    for (size_t i = 0; i < e->n; i++) item_free(&e->items[i]);
    e->n = 0;
    atomic_store(&e->canceled, 0);
    return st;
}

static void we_cancel(void *ctx) {
    wf_env *e = ctx;
    atomic_store(&e->canceled, 1);
    for (size_t i = 0; i < e->n; i++) item_free(&e->items[i]);
    e->n = 0;
    atomic_store(&e->canceled, 0);
}

static void we_close(void *ctx) {
    wf_env *e = ctx;
    if (!e) return;
    we_cancel(e);
    free(e->items);
    free(e->names);
    free(e->weights);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

static const jr_env_ops wf_ops = {"workflow", we_submit, we_flush, we_cancel, we_close};

jr_status jr_env_from_workflow(jr_env *env, jr_wf_executor *ex, jr_reward *rw, const jr_workflow_opts *wo,
                               const jr_wf_env_opts *o) {
    memset(env, 0, sizeof *env);
    if (!ex || !rw || !wo || !o) return jr_fail(JR_EINVAL, "workflow environment: needs an executor, a reward registry and options");
    wf_env *e = jr_calloc(1, sizeof *e);
    int K = jr_reward_n_parts(rw);
    if (!e) return JR_ENOMEM;
    e->ex = ex;
    e->rw = rw;
    e->wo = wo;
    e->o = *o;
    pthread_mutex_init(&e->mu, NULL);
    if (e->o.parallel < 1) e->o.parallel = 1;
    if (K > WF_MAX_PARTS) { we_close(e); return jr_fail(JR_EINVAL, "workflow environment: %d reward components (at most %d)", K, WF_MAX_PARTS); }
    e->names = jr_calloc((size_t)K + 1, sizeof *e->names);
    e->weights = jr_calloc((size_t)K + 1, sizeof *e->weights);
    if (!e->names || !e->weights) { we_close(e); return JR_ENOMEM; }
    for (int k = 0; k < K; k++) {
        e->names[k] = jr_reward_part_name(rw, k);
        e->weights[k] = jr_reward_part_weight(rw, k);
    }
    *env = (jr_env){&wf_ops, e, K, e->names, e->weights};
    return JR_OK;
}

void jr_wf_env_set_buffer(jr_env *env, struct jr_wf_buffer *b, const int64_t *step) {
    if (!env || env->ops != &wf_ops) return;
    wf_env *e = env->ctx;
    e->buffer = b;
    e->step = step;
}

void jr_wf_env_shuffle_buffer(jr_env *env, uint64_t seed) {
    if (!env || env->ops != &wf_ops) return;
    wf_env *e = env->ctx;
    e->shuffle_buffer = 1;
    e->shuffle_seed = seed;
}

double jr_wf_env_stats_flush(jr_env *env, int heldout, const char *prefix, void (*put)(void *ud, const char *key, double v),
                             void *ud) {
    if (!env || env->ops != &wf_ops) return NAN;
    wf_env *e = env->ctx;
    wf_stat st[4];
    pthread_mutex_lock(&e->mu);
    memcpy(st, e->stats[heldout ? 1 : 0], sizeof st);
    memset(e->stats[heldout ? 1 : 0], 0, sizeof st);
    pthread_mutex_unlock(&e->mu);
    char key[256];
#define PUT(name, v) do { snprintf(key, sizeof key, "%s%s/%s", prefix, kDomains[d], name); put(ud, key, v); } while (0)
    for (int d = 0; d < 4; d++) {
        const wf_stat *s = &st[d];
        if (!s->n) continue;
        PUT("n", (double)s->n);
        if (s->scored) PUT("reward", s->reward_sum / s->scored);
        for (int c = 0; c < env->n_parts && c < WF_MAX_PARTS; c++)
            if (s->comp_n[c]) PUT(env->part_names[c], s->comp_sum[c] / s->comp_n[c]);
        PUT("gold_acc", (double)s->gold_right / s->n);
        if (s->gold_errors) PUT("gold_errors", (double)s->gold_errors / s->n);
        PUT("valid_rate", (double)s->valid / s->n);
        PUT("answer_rate", (double)s->answered / s->n);
        PUT("unscored", (double)(s->n - s->scored) / s->n);
        PUT("executor_tokens", (double)s->tokens_sum / s->n);
        if (s->valid) {
            PUT("operators", (double)s->ops_sum / s->valid);
            for (int o = 0; o < JR_WF_N_OPS; o++) {
                char name[64];
                snprintf(name, sizeof name, "op/%s", jr_wf_op_name((jr_wf_op)o));
                PUT(name, (double)s->op_used[o] / s->valid);
                snprintf(name, sizeof name, "ret/%s", jr_wf_op_name((jr_wf_op)o));
                PUT(name, (double)s->op_returned[o] / s->valid);
            }
            PUT("ret/mixed", (double)s->op_returned[JR_WF_N_OPS] / s->valid);
        }
    }
#undef PUT
    return st[3].n ? (double)st[3].gold_right / st[3].n : NAN;
}
