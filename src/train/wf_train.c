/* wf_train.c - seed 2's trainer (wf_train.h): GRPO (LoRA) on a policy that writes workflows, rewarded by
 * the workflow environment; prompts are Layer-1 renders with few-shot examples from the experience
 * buffer, drawn per step by the stratified domain mix; per-domain metrics and held-out gold accuracy */
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/dataset.h"
#include "judgerl/dist.h"
#include "judgerl/fsutil.h"
#include "judgerl/grpo_trainer.h"
#include "judgerl/judge.h"
#include "judgerl/protocols.h"
#include "judgerl/rng.h"
#include "judgerl/runlog.h"
#include "judgerl/tokenizer.h"
#include "judgerl/train.h"
#include "judgerl/wf_train.h"
#include "judgerl/wfrl.h"

const jr_cfg_field *const jr_wf_train_tables[] = {jr_run_cfg,     jr_data_cfg,     jr_model_cfg,  jr_trainer_cfg,
                                                  jr_grpo_cfg,    jr_judge_cfg,    jr_tokenizer_cfg, jr_wf_env_cfg,
                                                  jr_wf_buffer_cfg, jr_wf_train_cfg, NULL};

const jr_cfg_field jr_wf_train_cfg[] = {
    {"wftrain.executor", JR_CFG_STRING, "null",
     "the executor's config (judge.*: its endpoint, retries, cache; workflow.*: budgets, templates; sandbox.*), "
     "relative to this config's directory", NULL, NULL, 0, 0},
    {"wftrain.reward", JR_CFG_STRING, "seed2_reward.yaml",
     "the reward's config (judge.*: the reference judge; reward.components), relative to this config's directory",
     NULL, NULL, 0, 0},
    {"wftrain.layer1_template", JR_CFG_STRING, "templates/workflow_layer1.txt",
     "the Layer-1 (workflow generation) prompt template", NULL, NULL, 0, 0},
    {"wftrain.constrained", JR_CFG_BOOL, "true",
     "sample workflows under the workflow grammar (constrained decoding: every sample parses)", NULL, NULL, 0, 0},
    {"wftrain.eval_greedy", JR_CFG_BOOL, "false",
     "each held-out evaluation also runs a greedy pass (temperature 0: the policy's most likely workflow, its G samples "
     "each run with the executor draws of the sampled pass's k-th sample), logged under eval_greedy/", NULL, NULL, 0, 0},
    {"data.mix", JR_CFG_ANY, "{math: 0.4, code: 0.3, qa: 0.3}",
     "share of each domain (the rows' type) in every step's prompts, stratified exactly per step", NULL, NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

static const char *const kDom[3] = {"math", "code", "qa"};

typedef struct {
    json_t *pool[3];        /* training rows per domain (arrays) */
    double mix[3];
    uint64_t seed;
    char *layer1;
    jr_wf_buffer *buf;
    int64_t cur_step;
    jr_workflow_limits limits;
    jr_env *env;
    jr_run *run;
    jr_grpo_trainer *g;
    int eval_greedy;
    jr_run_eval orig_eval;
} wf_train;

/* The training / held-out row with its Layer-1 prompt (few-shot examples retrieved now). */
static jr_status render_row(wf_train *t, const json_t *row, int heldout, json_t **out) {
    *out = NULL;
    const char *dom = json_string_value(json_object_get(row, "type"));
    const char *prob = json_string_value(json_object_get(row, "problem"));
    jr_wf_example *ex = NULL;
    int n = 0;
    jr_status st = JR_OK;
    if (t->buf && dom && prob) st = jr_wf_buffer_retrieve(t->buf, dom, prob, &ex, &n);
    char *prompt = NULL;
    if (!st) st = jr_wf_layer1_render(t->layer1, row, ex, n, &prompt);
    jr_wf_examples_free(ex, n);
    if (st) return st;
    json_t *r = json_deep_copy(row);
    if (!r) { free(prompt); return JR_ENOMEM; }
    json_object_set_new(r, "prompt", json_string(prompt));
    json_object_set_new(r, "n_examples", json_integer(n));
    if (heldout) json_object_set_new(r, "split", json_string("heldout"));
    free(prompt);
    *out = r;
    return JR_OK;
}

static jr_status hook_prompts(void *ud, int64_t step, int gb, int n, json_t **rows) {
    wf_train *t = ud;
    t->cur_step = step;
    int counts[3];
    jr_status st = jr_wf_mix_counts(t->mix, 3, n, t->seed, step * 64 + gb, counts);
    int k = 0;
    for (int d = 0; d < 3 && !st; d++) {
        jr_rng r;
        jr_rng_seed2(&r, t->seed ^ 0x7766747261696eULL, (uint64_t)(step * 64 + gb) * 4 + (uint64_t)d);
        for (int j = 0; j < counts[d] && !st; j++) {
            size_t np = json_array_size(t->pool[d]);
            const json_t *row = json_array_get(t->pool[d], (size_t)jr_rng_below(&r, np));
            st = render_row(t, row, 0, &rows[k++]);
        }
    }
    return st;
}

static jr_status hook_prepare_val(void *ud, const json_t *row, json_t **out) { return render_row(ud, row, 1, out); }

static jr_status hook_constraint(void *ud, const jr_token_bytes *v, jr_constraint **out) {
    wf_train *t = ud;
    return jr_workflow_constraint(out, v, &t->limits);
}

static void put(void *ud, const char *key, double v) { jr_runlog_add(ud, key, v); }

static jr_status hook_log(void *ud, jr_runlog *rl, int64_t step) {
    (void)step;
    wf_train *t = ud;
    jr_wf_env_stats_flush(t->env, 0, "train/", put, rl);
    for (int d = 0; d < 3 && t->buf; d++) {
        int64_t n = 0;
        char key[64];
        jr_status st = jr_wf_buffer_count(t->buf, kDom[d], &n);
        if (st) return st;
        snprintf(key, sizeof key, "buffer/%s", kDom[d]);
        jr_runlog_add(rl, key, (double)n);
    }
    return JR_OK;
}

/* The evaluation: the trainer's (mean reward of G samples per held-out prompt), then the held-out
 * per-domain statistics; the value is the verifier's overall gold accuracy. */
static jr_status eval_gold(void *ud, double *value) {
    wf_train *t = ud;
    double mean = NAN;
    jr_status st = t->orig_eval.score(t->orig_eval.ud, &mean);
    if (st) return st;
    if (!isnan(mean)) jr_runlog_add(t->run->rl, "eval/reward", mean);
    *value = jr_wf_env_stats_flush(t->env, 1, "eval/", put, t->run->rl);
    if (t->eval_greedy) {
        if ((st = jr_grpo_eval_pass(t->g, 0, "eval_greedy/", &mean))) return st;
        if (!isnan(mean)) jr_runlog_add(t->run->rl, "eval_greedy/reward", mean);
        double g = jr_wf_env_stats_flush(t->env, 1, "eval_greedy/", put, t->run->rl);
        if (!isnan(g)) jr_runlog_add(t->run->rl, "eval_greedy/gold_acc", g);
    }
    return JR_OK;
}

/* A config file named by `key`: as given, else relative to cfg_dir. New string. */
static char *config_path(const char *p, const char *cfg_dir) {
    if (!p) return NULL;
    if (p[0] == '/' || jr_path_exists(p) || !cfg_dir) return jr_strdup(p);
    return jr_path_join(cfg_dir, p);
}

static jr_status load_pools(wf_train *t, const char *path) {
    for (int d = 0; d < 3; d++) t->pool[d] = json_array();
    jr_jsonl_reader *r = NULL;
    jr_status st = jr_jsonl_open(&r, path, JR_BAD_LINE_FAIL, NULL, NULL);
    int64_t line = 0;
    for (json_t *row = NULL; !st && (st = jr_jsonl_next(r, &row, &line, NULL)) == JR_OK && row; json_decref(row)) {
        const char *ty = json_string_value(json_object_get(row, "type"));
        int d = -1;
        for (int k = 0; ty && k < 3; k++)
            if (!strcmp(ty, kDom[k])) d = k;
        if (d < 0 || !json_is_string(json_object_get(row, "problem")))
            st = jr_fail(JR_EINVAL, "%s:%lld: a workflow task row needs a string 'problem' and 'type' math, code or qa", path,
                         (long long)line);
        else json_array_append(t->pool[d], row);
    }
    jr_jsonl_close(r);
    for (int d = 0; d < 3 && !st; d++)
        if (t->mix[d] > 0 && !json_array_size(t->pool[d]))
            st = jr_fail(JR_EINVAL, "%s: data.mix gives %s a share of %g but the file has no %s rows", path, kDom[d],
                         t->mix[d], kDom[d]);
    return st;
}

static jr_status read_mix(wf_train *t, const jr_config *c) {
    const json_t *m = jr_cfg_json(c, "data.mix");
    if (!json_is_object(m)) return jr_fail(JR_EINVAL, "%s: data.mix must be a mapping {math: w, code: w, qa: w}", c->source);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)m, k, v) {
        int d = -1;
        for (int i = 0; i < 3; i++)
            if (!strcmp(k, kDom[i])) d = i;
        if (d < 0) return jr_fail(JR_EINVAL, "%s: data.mix.%s: unknown domain (math, code, qa)", c->source, k);
        if (!json_is_number(v) || json_number_value(v) < 0)
            return jr_fail(JR_EINVAL, "%s: data.mix.%s must be a number >= 0", c->source, k);
        t->mix[d] = json_number_value(v);
    }
    return t->mix[0] + t->mix[1] + t->mix[2] > 0 ? JR_OK : jr_fail(JR_EINVAL, "%s: data.mix: every share is 0", c->source);
}

/* The executor, the reward registry and the workflow environment of a wftrain config. */
typedef struct {
    jr_config ecfg, rcfg;
    int have_e, have_r;
    jr_wf_executor *ex;
    jr_reward *rw;
    jr_env env;
    jr_workflow_opts wo;
    jr_judge_opts jo;
    jr_wf_env_opts eo;
    char *epath, *rpath;
} wf_envset;

static jr_status envset_open(wf_envset *e, const jr_config *c, const char *cfg_dir) {
    memset(e, 0, sizeof *e);
    e->epath = config_path(jr_cfg_str(c, "wftrain.executor"), cfg_dir);
    e->rpath = config_path(jr_cfg_str(c, "wftrain.reward"), cfg_dir);
    if (!e->epath) return jr_fail(JR_EINVAL, "%s: wftrain.executor must name the executor's config", c->source);
    const jr_cfg_field *et[] = {jr_judge_cfg, jr_workflow_cfg, jr_sandbox_cfg, NULL};
    jr_status st = jr_config_load(&e->ecfg, e->epath, 0, NULL, et);
    e->have_e = !st;
    if (!st) {
        jr_workflow_opts_from_config(&e->wo, &e->ecfg);
        st = jr_judge_opts_from_config(&e->jo, &e->ecfg);
    }
    if (!st) {
        char *d = jr_strdup(e->epath);
        st = d ? jr_wf_executor_open(&e->ex, &e->jo, dirname(d), &e->wo) : JR_ENOMEM;
        free(d);
    }
    if (!st) st = jr_wf_reward_register();
    if (!st) {
        const jr_cfg_field *rt[] = {jr_judge_cfg, jr_protocols_cfg, jr_reward_cfg, jr_sandbox_cfg, NULL};
        st = jr_config_load(&e->rcfg, e->rpath, 0, NULL, rt);
        e->have_r = !st;
    }
    if (!st) st = jr_reward_open(&e->rw, &e->rcfg);
    if (!st) {
        jr_wf_env_opts_from_config(&e->eo, c);
        st = jr_env_from_workflow(&e->env, e->ex, e->rw, &e->wo, &e->eo);
    }
    return st;
}

static void envset_close(wf_envset *e) {
    jr_env_close(&e->env);
    jr_reward_close(e->rw);
    jr_wf_executor_close(e->ex);
    if (e->have_e) jr_config_free(&e->ecfg);
    if (e->have_r) jr_config_free(&e->rcfg);
    free(e->epath);
    free(e->rpath);
}

jr_status jr_wf_eval_texts(const jr_config *c, const char *cfg_dir, const json_t *rows, const char *const *texts, size_t n,
                           const char *prefix, void (*put)(void *ud, const char *key, double v), void *ud, double *gold) {
    *gold = NAN;
    wf_envset e;
    jr_status st = envset_open(&e, c, cfg_dir);
    jr_env_result *res = st ? NULL : calloc(n ? n : 1, sizeof *res);
    if (!st && !res) st = jr_fail(JR_ENOMEM, "out of memory");
    jr_env_batch *b = NULL;
    if (!st) st = jr_env_batch_open(&b, &e.env, n, res, &(jr_env_batch_opts){0});
    for (size_t i = 0; i < n && !st; i++) {
        json_t *r = json_deep_copy(json_array_get(rows, i));
        if (!json_is_object(r)) { json_decref(r); st = jr_fail(JR_EINVAL, "workflow evaluation: row %zu is not an object", i); break; }
        char id[32];
        snprintf(id, sizeof id, "eval-%zu", i);
        json_object_set_new(r, "id", json_string(id));
        json_object_set_new(r, "split", json_string("heldout"));
        st = jr_env_batch_submit(b, i, r, texts[i], strlen(texts[i]));
        json_decref(r);
    }
    if (b) {
        jr_status st2 = jr_env_batch_finish(b);
        if (!st) st = st2;
    }
    if (!st) *gold = jr_wf_env_stats_flush(&e.env, 1, prefix, put, ud);
    for (size_t i = 0; res && i < n; i++) jr_env_result_free(&res[i]);
    free(res);
    envset_close(&e);
    return st;
}

jr_status jr_wf_train_run(const jr_config *c, const char *cfg_dir, FILE *progress, volatile sig_atomic_t *stop,
                          jr_train_result *res) {
    memset(res, 0, sizeof *res);
    res->last_val_loss = NAN;
    wf_train t;
    memset(&t, 0, sizeof t);
    jr_grpo_setup s;
    jr_status st = jr_grpo_setup_from_config(&s, c, progress, stop);
    t.seed = s.run.seed;
    wf_envset e;
    memset(&e, 0, sizeof e);
    jr_grpo_trainer *g = NULL;
    if (!st && !s.data.train) st = jr_fail(JR_EINVAL, "%s: data.train must name a JSONL file of workflow tasks", c->source);
    if (!st) st = read_mix(&t, c);
    if (!st) st = load_pools(&t, s.data.train);
    if (!st) st = jr_template_load(jr_cfg_str(c, "wftrain.layer1_template"), cfg_dir, &t.layer1);
    /* as jr_train_run: a used run.out_dir is refused unless resumed or overwritten (the old run's metrics and
     * experience buffer go with it: a fresh run that read them would start from another run's examples) */
    if (!st && !jr_dist_rank()) st = jr_run_dir_prepare(&s.run, s.trainer.resume, 0);
    if (!st) st = envset_open(&e, c, cfg_dir);
    t.limits = e.wo.limits;
    t.env = &e.env;
    s.env = &e.env;
    s.hooks = (jr_grpo_hooks){&t, hook_prompts, hook_prepare_val, jr_cfg_bool(c, "wftrain.constrained") ? hook_constraint : NULL,
                              hook_log};
    if (!st) st = jr_grpo_open(&g, &s);
    if (!st) {
        t.run = jr_grpo_run_of(g);
        t.g = g;
        t.eval_greedy = jr_cfg_bool(c, "wftrain.eval_greedy");
        jr_wf_buffer_opts bo;
        jr_wf_buffer_opts_from_config(&bo, c);
        char *bp = bo.path ? jr_strdup(bo.path) : jr_path_join(s.run.out_dir, "buffer.sqlite");
        bo.path = bp;
        st = bp ? jr_wf_buffer_open(&t.buf, &bo) : JR_ENOMEM;
        free(bp);
        /* a resumed run redoes the steps after its checkpoint: what they added goes first */
        if (!st && t.run->resumed) st = jr_wf_buffer_truncate(t.buf, t.run->ts.step);
        if (!st) jr_wf_env_set_buffer(&e.env, t.buf, &t.cur_step);
        if (!st && s.grpo.shuffle_rewards) jr_wf_env_shuffle_buffer(&e.env, (uint64_t)s.run.seed); /* the control's buffer too */
    }
    if (!st && t.run->eval.score) {
        t.orig_eval = t.run->eval;
        t.run->eval.score = eval_gold;
        t.run->eval.ud = &t;
        t.run->eval.metric = "eval/gold_acc";
        t.run->eval.at_end = 1;
    }
    while (!st && !jr_grpo_done(g)) st = jr_grpo_step(g);
    if (g) jr_run_result(jr_grpo_run_of(g), res);
    st = jr_grpo_close(g, st);
    envset_close(&e);
    jr_wf_buffer_close(t.buf);
    for (int d = 0; d < 3; d++) json_decref(t.pool[d]);
    free(t.layer1);
    return st;
}
