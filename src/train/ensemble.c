/* ensemble.c - a judge ensemble as a reward environment: each sample scored by every member's reward
 * registry (its own judge), combined by mean or majority vote */
#include "judgerl/ensemble.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/judge.h"
#include "judgerl/protocols.h"
#include "judgerl/reward.h"
#include "judgerl/sandbox.h"
#include "judgerl/strbuf.h"

const jr_cfg_field jr_ensemble_cfg[] = {
    {"ensemble.judges", JR_CFG_LIST, "[]", "mitigation: a judge ensemble, YAML files each with judge.* and reward.components; every sample is scored by each and reward.components is not used ([]: off)", NULL, NULL, 0, 0},
    {"ensemble.aggregate", JR_CFG_ENUM, "mean", "mean of the members' rewards, or majority vote (reward >= ensemble.vote_threshold)", "mean|majority", NULL, 0, 0},
    {"ensemble.vote_threshold", JR_CFG_FLOAT, "0.5", "majority: a member votes for the sample when its reward is >= this", NULL, NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

jr_status jr_ensemble_opts_from_config(jr_ensemble_opts *o, const jr_config *c) {
    memset(o, 0, sizeof *o);
    if (!jr_cfg_has(c, "ensemble.judges")) return JR_OK;
    json_t *files = jr_cfg_json(c, "ensemble.judges");
    o->majority = !strcmp(jr_cfg_str(c, "ensemble.aggregate"), "majority");
    o->vote_threshold = jr_cfg_float(c, "ensemble.vote_threshold");
    jr_status st = jr_cfg_check(c);
    if (st) return st;
    size_t i;
    json_t *v;
    json_array_foreach(files, i, v) {
        if (o->n == JR_ENSEMBLE_MAX) return jr_fail(JR_EINVAL, "%s: ensemble.judges: more than %d files", c->source, JR_ENSEMBLE_MAX);
        if (!json_is_string(v)) return jr_fail(JR_EINVAL, "%s: ensemble.judges[%zu]: expected a file name", c->source, i);
        o->files[o->n++] = json_string_value(v);
    }
    if (o->n == 1)
        return jr_fail(JR_EINVAL, "%s: ensemble.judges has one file: an ensemble needs two or more (or use reward.components)",
                       c->source);
    return JR_OK;
}

struct jr_ensemble {
    jr_ensemble_opts o;
    int n;
    jr_config cfg[JR_ENSEMBLE_MAX];
    jr_reward *rw[JR_ENSEMBLE_MAX];
    char *names[JR_ENSEMBLE_MAX];
};

/* The stem of a path: "configs/judge-a.yaml" -> "judge-a". */
static char *stem(const char *path) {
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strcspn(b, ".");
    return jr_strfmt("%.*s", (int)n, b);
}

jr_status jr_ensemble_open(jr_ensemble **out, const jr_ensemble_opts *o) {
    *out = NULL;
    jr_ensemble *e = jr_calloc(1, sizeof *e);
    if (!e) return JR_ENOMEM;
    e->o = *o;
    const jr_cfg_field *const tables[] = {jr_reward_cfg, jr_judge_cfg, jr_protocols_cfg, jr_sandbox_cfg, NULL};
    jr_status st = JR_OK;
    for (int k = 0; k < o->n && !st; k++) {
        if ((st = jr_config_load(&e->cfg[k], o->files[k], 0, NULL, tables))) break;
        e->n = k + 1;
        st = jr_reward_open(&e->rw[k], &e->cfg[k]);
        if (!st && !(e->names[k] = stem(o->files[k]))) st = JR_ENOMEM;
        for (int j = 0; !st && j < k; j++)
            if (!strcmp(e->names[j], e->names[k]))
                st = jr_fail(JR_EINVAL, "ensemble.judges: %s and %s have the same name '%s' (the file stem)", o->files[j],
                             o->files[k], e->names[k]);
        if (st) st = jr_fail_ctx(st, "ensemble.judges[%d] %s", k, o->files[k]);
    }
    if (st) { jr_ensemble_close(e); return st; }
    *out = e;
    return JR_OK;
}

void jr_ensemble_close(jr_ensemble *e) {
    if (!e) return;
    for (int k = 0; k < e->n; k++) {
        jr_reward_close(e->rw[k]);
        jr_config_free(&e->cfg[k]);
        free(e->names[k]);
    }
    free(e);
}

/* ---- the environment ---- */

typedef struct {
    jr_ensemble *e;
    size_t cap;
    jr_reward_batch *batch[JR_ENSEMBLE_MAX]; /* open while samples are pending */
    jr_reward_result *res[JR_ENSEMBLE_MAX];  /* (cap) per member */
    uint8_t *added;
    const char *names[JR_ENSEMBLE_MAX + 1];   /* "ensemble", then the members */
    double weights[JR_ENSEMBLE_MAX + 1];      /* 1 for the combined reward, 0 for the members (logged only) */
} ens_env;

static jr_status ens_submit(void *ctx, const json_t *row, const char *completion, size_t len, uint64_t id,
                            jr_env_queue *q) {
    ens_env *x = ctx;
    (void)q;
    if (id >= x->cap) return jr_fail(JR_EINVAL, "ensemble environment: sample id %llu >= %zu", (unsigned long long)id, x->cap);
    json_t *r = json_copy((json_t *)row);
    if (!r) return JR_ENOMEM;
    json_object_set_new(r, "response", json_stringn(completion, len));
    jr_status st = JR_OK;
    for (int k = 0; k < x->e->n && !st; k++) {
        if (!x->batch[k]) st = jr_reward_batch_open(x->e->rw[k], x->cap, x->res[k], &x->batch[k]);
        if (!st) st = jr_reward_batch_add(x->batch[k], (size_t)id, r);
    }
    json_decref(r);
    if (!st) x->added[id] = 1;
    return st;
}

/* Sample i's result from the members' results. */
static void combine(const ens_env *x, size_t i, jr_env_result *r) {
    int n = x->e->n, m = 0, votes = 0;
    double sum = 0, lat = 0;
    const char *why = NULL;
    jr_env_result_parts(r, n + 1);
    for (int k = 0; k < n; k++) {
        const jr_reward_result *y = &x->res[k][i];
        r->cost.model_calls += y->judge_calls;
        if (y->judge_latency_s > lat) lat = y->judge_latency_s;
        if (!y->scored) { if (!why) why = y->reason; continue; }
        if (r->parts) { r->parts[k + 1] = y->reward; r->parts_scored[k + 1] = 1; }
        sum += y->reward;
        votes += y->reward >= x->e->o.vote_threshold;
        m++;
    }
    r->cost.seconds = lat;
    r->scored = m > 0;
    if (!m) {
        r->reward = NAN;
        r->reason = jr_strfmt("every ensemble member unscored (%s)", why ? why : "no reason");
    } else if (x->e->o.majority) r->reward = 2 * votes > m ? 1.0 : 2 * votes == m ? 0.5 : 0.0;
    else r->reward = sum / m;
    if (m && r->parts) { r->parts[0] = r->reward; r->parts_scored[0] = 1; }
}

static jr_status ens_flush(void *ctx, jr_env_queue *q) {
    ens_env *x = ctx;
    jr_status st = JR_OK;
    for (int k = 0; k < x->e->n; k++) {
        if (!x->batch[k]) continue;
        jr_status s2 = jr_reward_batch_finish(x->batch[k]);
        x->batch[k] = NULL;
        if (s2 && !st) st = jr_fail_ctx(s2, "ensemble member %s", x->e->names[k]);
    }
    for (size_t i = 0; i < x->cap; i++) {
        if (x->added[i]) {
            jr_env_result r = {.id = i};
            combine(x, i, &r);
            jr_env_queue_push(q, &r);
        }
        for (int k = 0; k < x->e->n; k++) jr_reward_result_free(&x->res[k][i]);
        x->added[i] = 0;
    }
    return st;
}

static void ens_cancel(void *ctx) {
    ens_env *x = ctx;
    for (int k = 0; k < x->e->n; k++) {
        if (x->batch[k]) jr_reward_batch_finish(x->batch[k]);
        x->batch[k] = NULL;
        for (size_t i = 0; x->res[k] && i < x->cap; i++) jr_reward_result_free(&x->res[k][i]);
    }
    memset(x->added, 0, x->cap);
}

static void ens_close(void *ctx) {
    ens_env *x = ctx;
    ens_cancel(x);
    for (int k = 0; k < x->e->n; k++) free(x->res[k]);
    free(x->added);
    free(x);
}

static const jr_env_ops ens_ops = {"ensemble", ens_submit, ens_flush, ens_cancel, ens_close};

jr_status jr_env_from_ensemble(jr_env *env, jr_ensemble *e, size_t cap) {
    memset(env, 0, sizeof *env);
    ens_env *x = jr_calloc(1, sizeof *x);
    if (!x) return JR_ENOMEM;
    x->e = e;
    x->cap = cap;
    x->added = jr_calloc(cap + 1, 1);
    int ok = x->added != NULL;
    x->names[0] = "ensemble";
    x->weights[0] = 1;
    for (int k = 0; k < e->n; k++) {
        x->res[k] = jr_calloc(cap + 1, sizeof *x->res[k]);
        ok = ok && x->res[k];
        x->names[k + 1] = e->names[k];
        x->weights[k + 1] = 0;
    }
    if (!ok) { ens_close(x); return JR_ENOMEM; }
    *env = (jr_env){&ens_ops, x, e->n + 1, x->names, x->weights};
    return JR_OK;
}
