/* grpo_train.c - the GRPO family trainer (grpo, rloo): group generation, rewards overlapped with it, advantages,
 * the clipped policy update with old and reference log-probs, LoRA, logging, checkpoints and exact resume */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "judgerl/checkpoint.h"
#include "judgerl/dataset.h"
#include "judgerl/fsutil.h"
#include "judgerl/generate.h"
#include "judgerl/grpo.h"
#include "judgerl/lora.h"
#include "judgerl/model.h"
#include "judgerl/nn.h"
#include "judgerl/optim.h"
#include "judgerl/progress.h"
#include "judgerl/reward.h"
#include "judgerl/runlog.h"
#include "judgerl/textgen.h"
#include "judgerl/train.h"

const jr_cfg_field jr_grpo_cfg[] = {
    {"grpo.num_generations", JR_CFG_INT, "8", "G: completions sampled per prompt (TRL num_generations)", NULL, NULL, 2, 4096},
    {"grpo.prompts_per_step", JR_CFG_INT, "4",
     "prompts per generation batch (TRL generation_batch_size / num_generations; verl data.train_batch_size)", NULL,
     NULL, 1, 1e6},
    {"grpo.max_prompt_length", JR_CFG_INT, "256", "prompt tokens kept (longer prompts keep their last tokens)", NULL,
     NULL, 1, 1e7},
    {"grpo.max_completion_length", JR_CFG_INT, "256", "tokens sampled per completion at most", NULL, NULL, 1, 1e7},
    {"grpo.temperature", JR_CFG_FLOAT, "1.0", "sampling temperature; log-probs use logits / temperature as TRL does",
     NULL, NULL, 1e-4, 100},
    {"grpo.top_p", JR_CFG_FLOAT, "1.0", "nucleus sampling mass (1 = off)", NULL, NULL, 1e-6, 1},
    {"grpo.top_k", JR_CFG_INT, "0", "keep the k most likely tokens (0 = off)", NULL, NULL, 0, 1e9},
    {"grpo.min_p", JR_CFG_FLOAT, "0.0", "drop tokens below min_p x the top probability (0 = off)", NULL, NULL, 0, 1},
    {"grpo.beta", JR_CFG_FLOAT, "0.0",
     "KL coefficient toward the reference policy (k3 estimator); 0 skips the reference pass", NULL, NULL, 0, 1e6},
    {"grpo.epsilon", JR_CFG_FLOAT, "0.2", "lower clip range: ratios below 1 - epsilon are clipped", NULL, NULL, 0, 10},
    {"grpo.epsilon_high", JR_CFG_FLOAT, "-1",
     "upper clip range 1 + epsilon_high (DAPO clip-higher); -1 = same as epsilon", NULL, NULL, -1, 10},
    {"grpo.num_iterations", JR_CFG_INT, "1",
     "mu: optimizer steps per generation batch (old log-probs are kept per batch); trainer.steps counts optimizer steps",
     NULL, NULL, 1, 1024},
    {"grpo.loss_type", JR_CFG_ENUM, "dapo", "loss normalisation (TRL loss_type)", "grpo|bnpo|dr_grpo|dapo", NULL, 0, 0},
    {"grpo.scale_rewards", JR_CFG_ENUM, "group", "advantage scaling after the group mean (TRL scale_rewards)",
     "group|batch|none", NULL, 0, 0},
    {"grpo.reward_weights", JR_CFG_LIST, "[]",
     "weight of each reward.components entry, in order ([] = the components' own weights)", NULL, NULL, 0, 0},
    {"grpo.multi_objective_aggregation", JR_CFG_ENUM, "sum_then_normalize",
     "combine reward components before (sum_then_normalize) or after (normalize_then_sum) group normalisation",
     "sum_then_normalize|normalize_then_sum", NULL, 0, 0},
    {"grpo.mask_truncated_completions", JR_CFG_BOOL, "false",
     "completions cut at max_completion_length take no part in the loss", NULL, NULL, 0, 0},
    {"grpo.filter_groups", JR_CFG_BOOL, "false",
     "dynamic sampling (verl algorithm.filter_groups): drop groups whose rewards all agree and generate more", NULL,
     NULL, 0, 0},
    {"grpo.max_num_gen_batches", JR_CFG_INT, "4",
     "with filter_groups: generation batches per step at most (verl max_num_gen_batches; 0 = no limit)", NULL, NULL, 0,
     1e6},
    {"grpo.overlong_buffer", JR_CFG_BOOL, "false",
     "DAPO overlong penalty (verl reward_model.overlong_buffer.enable)", NULL, NULL, 0, 0},
    {"grpo.overlong_buffer_len", JR_CFG_INT, "16", "tokens before max_completion_length where the penalty starts",
     NULL, NULL, 1, 1e7},
    {"grpo.overlong_penalty_factor", JR_CFG_FLOAT, "1.0", "weight of the overlong penalty (reaches -factor)", NULL,
     NULL, 0, 1e6},
    {"grpo.log_completions_every", JR_CFG_INT, "0",
     "every N steps print a table of sample completions with their rewards and append them to samples.jsonl (0 = off)",
     NULL, NULL, 0, 1e12},
    {"grpo.log_completions_n", JR_CFG_INT, "4", "completions in that table", NULL, NULL, 1, 1e6},
    {"grpo.shuffle_rewards", JR_CFG_BOOL, "false",
     "control experiment: permute the rewards across the step's scored samples before the advantages", NULL, NULL,
     0, 0},
    {"grpo.async_generation", JR_CFG_BOOL, "false",
     "one-step-ahead generation (TRL async GRPO, verl async rollout): the next batch is sampled by the weights "
     "before this update while the update runs; off-policy by one step, importance-corrected by the generating "
     "weights' log-probs; a resumed run then regenerates its first batch on-policy (not bit-exact)", NULL, NULL, 0,
     0},
    {"lora.enabled", JR_CFG_BOOL, "false", "train LoRA adapters instead of every weight", NULL, NULL, 0, 0},
    {"lora.rank", JR_CFG_INT, "8", "adapter rank r", NULL, NULL, 1, 65536},
    {"lora.alpha", JR_CFG_FLOAT, "16", "adapter scale alpha (updates are scaled by alpha / r)", NULL, NULL, 0, 1e6},
    {"lora.dropout", JR_CFG_FLOAT, "0.0",
     "dropout on the adapter input; only 0 is supported (log-prob ratios need it off)", NULL, NULL, 0, 1},
    {"lora.target_modules", JR_CFG_STRING, "q,k,v,o,gate,up,down",
     "projections that get adapters (q, k, v, o, gate, up, down; or all)", NULL, NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* text[0..len) as valid UTF-8 (malloc'ed, NUL-terminated, length in *out_len): each byte that does
 * not start a well-formed sequence becomes U+FFFD, as Python's decode(errors="replace") does. */
static char *utf8_clean(const char *text, size_t len, size_t *out_len) {
    char *o = jr_malloc(3 * len + 1);
    if (!o) return NULL;
    size_t k = 0;
    const unsigned char *u = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        unsigned c = u[i];
        int n = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
        int ok = n > 0 && i + (size_t)n <= len;
        for (int j = 1; ok && j < n; j++) ok = (u[i + j] & 0xC0) == 0x80;
        if (ok && n == 3) ok = !(c == 0xE0 && u[i + 1] < 0xA0) && !(c == 0xED && u[i + 1] > 0x9F);
        if (ok && n == 4) ok = !(c == 0xF0 && u[i + 1] < 0x90) && !(c == 0xF4 && u[i + 1] > 0x8F);
        if (ok) {
            memcpy(o + k, u + i, (size_t)n);
            k += (size_t)n;
            i += (size_t)n;
        } else {
            memcpy(o + k, "\xEF\xBF\xBD", 3);
            k += 3;
            i++;
        }
    }
    o[k] = 0;
    *out_len = k;
    return o;
}

/* One completion. */
typedef struct {
    int group;              /* index of its prompt in the batch */
    int32_t *toks;          /* completion tokens (eos included when it ended so) */
    int n;
    int truncated;          /* finish_reason "length" */
    char *text;             /* valid UTF-8 (invalid bytes replaced) */
    size_t text_len;
    int scored;
    double reward;          /* NAN when unscored */
    double *vals;           /* per component (K), and the overlong penalty as component K */
    uint8_t *vscored;
    char *reason;           /* why unscored */
    double judge_latency;
} sample;

/* One prompt of the batch. */
typedef struct {
    json_t *row;            /* the dataset row (all fields reach the rewards) */
    char *prompt_text;      /* the prompt as text (for judges and logs) */
    int32_t *ids;
    int n_ids;
} prompt;

typedef struct {
    int P, G, n;            /* prompts, generations, samples */
    prompt *p;
    sample *s;
} rollout;

typedef struct {
    double t_gen, t_judge_wait, t_judge_span;
    long gen_tokens;
    int n_generated, n_unscored;   /* over every generation batch of the step */
    int gen_batches;
    double lat_p50, lat_p95;
    uint64_t cache_lookups, cache_hits;
    jr_data_pos data_after;        /* the data position after the rollout's prompts */
} rollout_stats;

typedef struct {
    const jr_config *c;
    int rloo;
    int G, P, max_prompt, max_comp, mu, B;
    double beta, eps_low, eps_high, temperature;
    jr_loss_type loss_type;
    jr_scale_rewards scale;
    int nts;                /* normalize_then_sum */
    int mask_trunc, filter_groups, max_gen_batches, overlong, overlong_len;
    double overlong_factor, max_unscored;
    int K;                  /* reward components */
    float *weights;         /* K + 1 (the overlong penalty last) */
    jr_model m, ref;        /* ref: full fine-tuning with beta > 0 only */
    int has_ref;
    jr_lora lora;
    int use_lora;
    jr_model *trained;      /* &m or &lora.ad */
    jr_adamw opt;
    jr_textgen tg;
    jr_reward *rw;
    jr_data *data;
    jr_acts acts;           /* logits in chunks (jr_acts_opts), never B x T x V at once */
    float *ent;             /* (B, T_max) entropies of the micro-batch in the update */
    int T_max;
    FILE *progress;
    /* one-step-ahead generation: gen_m holds the weights the background rollout samples from */
    int async;
    jr_model gen_m;
    int has_gen;
    pthread_t th;
    int th_running;
    rollout pend;
    rollout_stats pend_rs;
    int64_t pend_step;
    jr_status pend_st;
    char pend_err[600];
} grpo;

static void *rollout_thread(void *arg);

static void rollout_free(rollout *r) {
    if (r->p)
        for (int i = 0; i < r->P; i++) {
            json_decref(r->p[i].row);
            free(r->p[i].prompt_text);
            free(r->p[i].ids);
        }
    if (r->s)
        for (int i = 0; i < r->n; i++) {
            free(r->s[i].toks);
            free(r->s[i].text);
            free(r->s[i].vals);
            free(r->s[i].vscored);
            free(r->s[i].reason);
        }
    free(r->p);
    free(r->s);
    memset(r, 0, sizeof *r);
}

/* The prompt of a dataset row: "prompt" (text) or "messages" (chat), tokenised and cut to the
 * last max_prompt tokens. */
static jr_status make_prompt(grpo *g, json_t *row, const jr_data_row_info *info, prompt *p) {
    json_t *pr = json_object_get(row, "prompt"), *msgs = json_object_get(row, "messages");
    jr_status st;
    int32_t *ids = NULL;
    int n = 0;
    if (json_is_string(pr)) {
        if ((st = jr_textgen_encode(&g->tg, json_string_value(pr), json_string_length(pr), &ids, &n)))
            return jr_fail_ctx(st, "%s:%lld", info->path, (long long)info->line_no);
        p->prompt_text = jr_strdup(json_string_value(pr));
    } else if (json_is_array(msgs) && json_array_size(msgs) > 0) {
        size_t k = json_array_size(msgs);
        const char **roles = jr_calloc(k, sizeof *roles), **contents = jr_calloc(k, sizeof *contents);
        if (!roles || !contents) { free(roles); free(contents); return JR_ENOMEM; }
        st = JR_OK;
        for (size_t i = 0; i < k && !st; i++) {
            json_t *mm = json_array_get(msgs, i);
            roles[i] = json_string_value(json_object_get(mm, "role"));
            contents[i] = json_string_value(json_object_get(mm, "content"));
            if (!roles[i] || !contents[i])
                st = jr_fail(JR_EINVAL, "%s:%lld: messages[%zu] needs string fields role and content", info->path,
                             (long long)info->line_no, i);
        }
        if (!st && (st = jr_textgen_encode_chat(&g->tg, (int)k, roles, contents, &ids, &n)))
            jr_fail_ctx(st, "%s:%lld", info->path, (long long)info->line_no);
        /* judges read the last user turn as the prompt */
        if (!st)
            for (size_t i = k; i-- > 0;)
                if (!strcmp(roles[i], "user")) { p->prompt_text = jr_strdup(contents[i]); break; }
        if (!st && !p->prompt_text) p->prompt_text = jr_strdup(contents[k - 1]);
        free(roles);
        free(contents);
        if (st) return st;
    } else {
        return jr_fail(JR_EINVAL, "%s:%lld: row needs a string field \"prompt\" or a list \"messages\" of {role, "
                                  "content}", info->path, (long long)info->line_no);
    }
    if (n > g->max_prompt) {
        memmove(ids, ids + (n - g->max_prompt), sizeof(int32_t) * (size_t)g->max_prompt);
        n = g->max_prompt;
    }
    p->ids = ids;
    p->n_ids = n;
    p->row = json_incref(row);
    return p->prompt_text ? JR_OK : JR_ENOMEM;
}

/* Generation of one batch: the reward row of each completion is submitted as soon as it finishes. */
typedef struct {
    grpo *g;
    rollout *r;
    int s0;                 /* first sample of this generation batch */
    jr_gen_req **reqs;
    int n_req;
    jr_reward_batch *rb;
    int64_t step;
    int gen_batch;
    double t_first_done;
    jr_status err;
} gen_ctx;

static void on_event(void *ud, jr_gen_req *req, int index, const jr_gen_seq *seq, const char *delta, size_t len,
                     int tok_from) {
    (void)delta; (void)len; (void)tok_from;
    gen_ctx *x = ud;
    if (!seq->done || x->err) return;
    int q = -1;
    for (int i = 0; i < x->n_req; i++)
        if (x->reqs[i] == req) q = i;
    if (q < 0) return;
    int si = x->s0 + q * x->g->G + index;
    sample *s = &x->r->s[si];
    s->group = x->s0 / x->g->G + q;
    s->n = seq->n_tokens;
    s->toks = jr_malloc(sizeof(int32_t) * (size_t)(seq->n_tokens > 0 ? seq->n_tokens : 1));
    s->text = utf8_clean(seq->text ? seq->text : "", seq->text ? seq->text_len : 0, &s->text_len);
    if (!s->toks || !s->text) { x->err = JR_ENOMEM; return; }
    memcpy(s->toks, seq->tokens, sizeof(int32_t) * (size_t)seq->n_tokens);
    s->truncated = seq->finish_reason && !strcmp(seq->finish_reason, "length");
    if (x->t_first_done == 0) x->t_first_done = now_s();
    /* the reward row: every dataset field, the prompt text and the response */
    prompt *p = &x->r->p[s->group];
    json_t *row = json_copy(p->row);
    if (!row) { x->err = JR_ENOMEM; return; }
    char id[96];
    snprintf(id, sizeof id, "s%lld-b%d-p%d-g%d", (long long)x->step, x->gen_batch, s->group, index);
    json_object_set_new(row, "id", json_string(id));
    json_object_set_new(row, "prompt", json_string(p->prompt_text));
    json_object_set_new(row, "response", json_stringn(s->text, s->text_len));
    jr_status st = jr_reward_batch_add(x->rb, (size_t)si, row);
    json_decref(row);
    if (st) x->err = st;
}

/* Hashes (seed, step, batch) into a generation seed. */
static uint64_t gen_seed(uint64_t seed, int64_t step, int batch) {
    jr_rng r;
    jr_rng_seed2(&r, seed, 0x67656eULL ^ ((uint64_t)step << 16) ^ (uint64_t)batch);
    return jr_rng_u64(&r);
}


/* Generates prompts r->p[p0 .. p0+np) (already filled) into samples and scores them. */
static jr_status generate_batch(grpo *g, rollout *r, int p0, int np, int64_t step, int gen_batch, rollout_stats *rs,
                                jr_reward_result *results) {
    gen_ctx x = {.g = g, .r = r, .s0 = p0 * g->G, .n_req = np, .step = step, .gen_batch = gen_batch};
    x.reqs = jr_calloc((size_t)np, sizeof *x.reqs);
    if (!x.reqs) return JR_ENOMEM;
    jr_gen *gen = NULL;
    jr_gen_params gp = jr_gen_params_default();
    gp.sample.temperature = (float)g->temperature;
    gp.sample.top_p = (float)jr_cfg_float(g->c, "grpo.top_p");
    gp.sample.top_k = (int)jr_cfg_int(g->c, "grpo.top_k");
    gp.sample.min_p = (float)jr_cfg_float(g->c, "grpo.min_p");
    gp.max_tokens = g->max_comp;
    gp.has_seed = 1;
    uint64_t base = gen_seed((uint64_t)jr_cfg_int(g->c, "run.seed"), step, gen_batch);
    double t0 = now_s();
    jr_status st = jr_reward_batch_open(g->rw, (size_t)np * g->G, results, &x.rb);
    if (!st) st = jr_gen_open(&gen, &g->tg.lm, &g->tg.vocab, base);
    for (int q = 0; q < np && !st; q++) {
        gp.seed = base + (uint64_t)q;
        st = jr_gen_add(gen, r->p[p0 + q].ids, r->p[p0 + q].n_ids, g->G, &gp, on_event, &x, &x.reqs[q]);
        if (st) jr_fail_ctx(st, "generating for prompt %d", q);
    }
    while (!st) {
        int done = 1;
        for (int q = 0; q < np; q++)
            if (!jr_gen_req_done(x.reqs[q])) done = 0;
        if (done) break;
        st = jr_gen_step(gen);
        if (!st && x.err) st = x.err;
    }
    double t1 = now_s();
    jr_gen_close(gen);
    jr_status st2 = x.rb ? jr_reward_batch_finish(x.rb) : JR_OK;
    double t2 = now_s();
    free(x.reqs);
    if (!st) st = st2;
    rs->t_gen += t1 - t0;
    rs->t_judge_wait += t2 - t1;
    if (x.t_first_done > 0) rs->t_judge_span += t2 - x.t_first_done;
    rs->gen_batches++;
    return st;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Turns reward results into per-sample rewards and components (with the grpo.reward_weights). */
static void take_rewards(grpo *g, sample *s, jr_reward_result *res) {
    int K = g->K;
    s->vals = jr_calloc((size_t)K + 1, sizeof(double));
    s->vscored = jr_calloc((size_t)K + 1, 1);
    s->scored = res->scored && s->vals && s->vscored;
    s->judge_latency = res->judge_latency_s;
    if (!s->scored) {
        s->reward = NAN;
        s->reason = jr_strdup(res->reason ? res->reason : "unscored");
        return;
    }
    double sum = 0;
    for (int k = 0; k < K && k < res->n_parts; k++) {
        s->vals[k] = res->parts[k].value;
        s->vscored[k] = (uint8_t)res->parts[k].scored;
        if (s->vscored[k]) sum += g->weights[k] * s->vals[k];
    }
    if (g->overlong) {
        s->vals[K] = jr_overlong_penalty(s->n, g->max_comp, g->overlong_len);
        s->vscored[K] = 1;
        sum += g->weights[K] * s->vals[K];
    }
    s->reward = sum;
}

/* Fills a rollout of P groups: draws prompts, generates, scores; with filter_groups keeps only
 * groups whose rewards differ, generating more batches as allowed. */
static jr_status do_rollout(grpo *g, rollout *r, int64_t step, rollout_stats *rs) {
    memset(rs, 0, sizeof *rs);
    int P = g->P, G = g->G;
    rollout tmp = {0};
    tmp.P = P;
    tmp.G = G;
    tmp.n = P * G;
    tmp.p = jr_calloc((size_t)P, sizeof *tmp.p);
    tmp.s = jr_calloc((size_t)P * G, sizeof *tmp.s);
    r->p = jr_calloc((size_t)P, sizeof *r->p);
    r->s = jr_calloc((size_t)P * G, sizeof *r->s);
    r->G = G;
    jr_reward_result *res = jr_calloc((size_t)P * G, sizeof *res);
    double *lat = jr_calloc((size_t)P * G * (g->max_gen_batches > 0 ? g->max_gen_batches : 64) + 1, sizeof *lat);
    int n_lat = 0, lat_cap = P * G * (g->max_gen_batches > 0 ? g->max_gen_batches : 64);
    jr_status st = tmp.p && tmp.s && r->p && r->s && res && lat ? JR_OK : JR_ENOMEM;
    jr_judge *jd = jr_reward_judge(g->rw);
    jr_judge_stats js0 = {0}, js1 = {0};
    if (jd) jr_judge_stats_get(jd, &js0);
    int kept = 0;
    for (int gb = 0; !st && kept < P; gb++) {
        if (gb > 0 && (!g->filter_groups || (g->max_gen_batches > 0 && gb >= g->max_gen_batches))) break;
        for (int q = 0; q < P && !st; q++) {
            json_t *row = NULL;
            jr_data_row_info info;
            if ((st = jr_data_next(g->data, &row, &info))) break;
            st = make_prompt(g, row, &info, &tmp.p[q]);
            json_decref(row);
        }
        if (!st) st = generate_batch(g, &tmp, 0, P, step, gb, rs, res);
        for (int i = 0; i < P * G; i++) {
            if (!st) take_rewards(g, &tmp.s[i], &res[i]);
            jr_reward_result_free(&res[i]);
        }
        if (st) break;
        /* stats over everything generated */
        for (int i = 0; i < P * G; i++) {
            rs->n_generated++;
            rs->n_unscored += !tmp.s[i].scored;
            rs->gen_tokens += tmp.s[i].n;
            if (tmp.s[i].judge_latency > 0 && n_lat < lat_cap) lat[n_lat++] = tmp.s[i].judge_latency;
        }
        /* keep groups: all when not filtering, else those whose scored rewards differ */
        for (int q = 0; q < P && kept < P; q++) {
            int keep = 1;
            if (g->filter_groups) {
                double lo = INFINITY, hi = -INFINITY;
                int k = 0;
                for (int j = 0; j < G; j++) {
                    sample *s = &tmp.s[q * G + j];
                    if (!s->scored) continue;
                    k++;
                    if (s->reward < lo) lo = s->reward;
                    if (s->reward > hi) hi = s->reward;
                }
                keep = k >= 2 && hi > lo;
            }
            if (!keep) continue;
            r->p[kept] = tmp.p[q];
            memset(&tmp.p[q], 0, sizeof tmp.p[q]);
            for (int j = 0; j < G; j++) {
                r->s[kept * G + j] = tmp.s[q * G + j];
                r->s[kept * G + j].group = kept;
                memset(&tmp.s[q * G + j], 0, sizeof tmp.s[0]);
            }
            kept++;
        }
        rollout_free(&tmp);
        tmp.P = P;
        tmp.n = P * G;
        tmp.p = jr_calloc((size_t)P, sizeof *tmp.p);
        tmp.s = jr_calloc((size_t)P * G, sizeof *tmp.s);
        if (!tmp.p || !tmp.s) st = JR_ENOMEM;
    }
    rollout_free(&tmp);
    r->P = kept;
    r->n = kept * G;
    if (jd) {
        jr_judge_stats_get(jd, &js1);
        rs->cache_lookups = js1.cache_lookups - js0.cache_lookups;
        rs->cache_hits = js1.cache_hits - js0.cache_hits;
    }
    if (n_lat) {
        qsort(lat, (size_t)n_lat, sizeof *lat, cmp_double);
        rs->lat_p50 = lat[(n_lat - 1) / 2];
        rs->lat_p95 = lat[(int)ceil(0.95 * n_lat) - 1];
    }
    free(lat);
    free(res);
    rs->data_after = jr_data_tell(g->data);
    return st;
}

/* One micro-batch of training rows: ids (B,T), targets (-1 outside completions), mask (B,T). */
typedef struct {
    int i0, nb, T;
    int32_t *ids, *targets;
    float *mask, *adv, *old, *ref, *lp, *dlp;
    uint8_t *active;
} micro;

static void micro_free(micro *mb, int n) {
    if (!mb) return;
    for (int i = 0; i < n; i++) {
        free(mb[i].ids); free(mb[i].targets); free(mb[i].mask); free(mb[i].adv);
        free(mb[i].old); free(mb[i].ref); free(mb[i].lp); free(mb[i].dlp); free(mb[i].active);
    }
    free(mb);
}

static jr_status build_micro(grpo *g, const rollout *r, const float *adv, const uint8_t *active, micro **out, int *n_out) {
    int n_mb = (r->n + g->B - 1) / g->B;
    micro *mb = jr_calloc((size_t)(n_mb > 0 ? n_mb : 1), sizeof *mb);
    if (!mb) return JR_ENOMEM;
    int32_t pad = g->tg.tok.pad_id >= 0 ? g->tg.tok.pad_id : 0;
    for (int k = 0; k < n_mb; k++) {
        micro *x = &mb[k];
        x->i0 = k * g->B;
        x->nb = r->n - x->i0 < g->B ? r->n - x->i0 : g->B;
        int T = 1;
        for (int b = 0; b < x->nb; b++) {
            const sample *s = &r->s[x->i0 + b];
            int L = r->p[s->group].n_ids + s->n - 1;
            if (L > T) T = L;
        }
        x->T = T;
        size_t nt = (size_t)x->nb * T;
        x->ids = jr_malloc(sizeof(int32_t) * nt);
        x->targets = jr_malloc(sizeof(int32_t) * nt);
        x->mask = jr_calloc(nt, sizeof(float));
        x->lp = jr_calloc(nt, sizeof(float));
        x->dlp = jr_calloc(nt, sizeof(float));
        x->adv = jr_calloc((size_t)x->nb, sizeof(float));
        x->active = jr_calloc((size_t)x->nb, 1);
        if (!x->ids || !x->targets || !x->mask || !x->lp || !x->dlp || !x->adv || !x->active) {
            micro_free(mb, n_mb);
            return JR_ENOMEM;
        }
        for (int b = 0; b < x->nb; b++) {
            const sample *s = &r->s[x->i0 + b];
            const prompt *p = &r->p[s->group];
            int np = p->n_ids;
            for (int t = 0; t < T; t++) {
                int32_t id = t < np ? p->ids[t] : t - np < s->n ? s->toks[t - np] : pad;
                int32_t tg = -1;
                if (t + 1 >= np && t + 1 - np < s->n) tg = s->toks[t + 1 - np];
                x->ids[(size_t)b * T + t] = id;
                x->targets[(size_t)b * T + t] = tg;
                x->mask[(size_t)b * T + t] = tg >= 0 ? 1.0f : 0.0f;
            }
            x->adv[b] = adv[x->i0 + b];
            x->active[b] = active[x->i0 + b] && !(g->mask_trunc && s->truncated) && s->n > 0;
        }
    }
    *out = mb;
    *n_out = n_mb;
    return JR_OK;
}

/* Log-probs of micro-batch x's targets under model m into lp (B,T); with ent (B,T) also the entropy
 * of softmax(logits / T) at every target (the logits are chunked: jr_acts_opts). */
static jr_status micro_logprobs(grpo *g, jr_model *m, micro *x, float *lp, float *ent) {
    jr_status st = jr_model_forward(m, &g->acts, x->ids, x->nb, x->T);
    if (st) return st;
    return jr_model_logprobs_ent(m, &g->acts, x->targets, (float)g->temperature, lp, ent);
}

/* Entropy over the masked positions of active rows (summed into *sum, counted into *cnt). */
static void entropy_sum(const micro *x, const float *ent, double *sum, double *cnt) {
    for (int b = 0; b < x->nb; b++) {
        if (!x->active[b]) continue;
        for (int t = 0; t < x->T; t++) {
            size_t k = (size_t)b * x->T + t;
            if (x->mask[k] == 0) continue;
            *sum += ent[k];
            *cnt += 1;
        }
    }
}

typedef struct {
    double loss, kl, clip_low, clip_high, clip_region, entropy, tokens, gnorm;
} update_stats;

/* One optimizer step over every micro-batch. */
static jr_status policy_step(grpo *g, micro *mb, int n_mb, int use_old, double lr, update_stats *us) {
    memset(us, 0, sizeof *us);
    double tokens = 0, seqs = 0;
    for (int k = 0; k < n_mb; k++)
        for (int b = 0; b < mb[k].nb; b++) {
            if (!mb[k].active[b]) continue;
            seqs += 1;
            for (int t = 0; t < mb[k].T; t++) tokens += mb[k].mask[(size_t)b * mb[k].T + t];
        }
    if (seqs == 0 || tokens == 0) return JR_OK; /* nothing to learn from: no update */
    jr_policy_loss_cfg pc = {g->loss_type, g->eps_low, g->eps_high, g->beta, g->max_comp, tokens, seqs};
    jr_model_zero_grads(&g->m);
    double ent = 0, ent_n = 0, w_sum = 0;
    for (int k = 0; k < n_mb; k++) {
        micro *x = &mb[k];
        int any = 0;
        for (int b = 0; b < x->nb; b++) any |= x->active[b];
        if (!any) continue;
        jr_status st = micro_logprobs(g, &g->m, x, x->lp, g->ent);
        if (st) return st;
        entropy_sum(x, g->ent, &ent, &ent_n);
        jr_policy_loss_stats ps;
        st = jr_policy_loss(&ps, x->dlp, x->lp, use_old ? x->old : NULL, g->beta > 0 ? x->ref : NULL, x->mask, x->adv,
                            x->active, x->nb, x->T, &pc);
        if (st) return st;
        if (g->loss_type == JR_LOSS_BNPO) { /* per micro-batch mean, averaged over micro-batches */
            float f = 1.0f / (float)n_mb;
            for (size_t i = 0; i < (size_t)x->nb * x->T; i++) x->dlp[i] *= f;
            ps.loss *= f;
        }
        jr_model_backward(&g->m, &g->acts, x->targets, (float)g->temperature, x->dlp);
        us->loss += ps.loss;
        us->kl += ps.kl * ps.tokens;
        us->clip_low += ps.clip_low * ps.tokens;
        us->clip_high += ps.clip_high * ps.tokens;
        us->clip_region += ps.clip_region * ps.tokens;
        w_sum += ps.tokens;
    }
    if (w_sum > 0) {
        us->kl /= w_sum; us->clip_low /= w_sum; us->clip_high /= w_sum; us->clip_region /= w_sum;
    }
    us->entropy = ent_n > 0 ? ent / ent_n : 0;
    us->tokens = tokens;
    if (g->use_lora) jr_lora_grads(&g->lora);
    us->gnorm = jr_clip_grad_norm(g->trained, jr_cfg_float(g->c, "trainer.max_grad_norm"));
    jr_adamw_step(&g->opt, g->trained, lr);
    if (g->use_lora) jr_lora_on(&g->lora);
    return JR_OK;
}

static jr_status write_adapter(void *ud, const char *dir) {
    grpo *g = ud;
    return jr_lora_save_peft(&g->lora, dir, jr_cfg_str(g->c, "model.path"), jr_cfg_float(g->c, "lora.dropout"));
}

/* Prints the sample table and appends the rows to run_dir/samples.jsonl. */
static void log_samples(grpo *g, const rollout *r, const float *adv, int64_t step, const char *out_dir) {
    int n = (int)jr_cfg_int(g->c, "grpo.log_completions_n");
    if (n > r->n) n = r->n;
    char *path = jr_path_join(out_dir, "samples.jsonl");
    jr_jsonl_writer *w = NULL;
    if (path) jr_jsonl_writer_open(&w, path, 0);
    if (g->progress) fprintf(g->progress, "\nstep %lld samples:\n  %-8s %-8s %-28s %s\n", (long long)step, "reward", "adv", "prompt", "completion");
    for (int i = 0; i < n; i++) {
        const sample *s = &r->s[i];
        const char *pt = r->p[s->group].prompt_text;
        if (g->progress) {
            char rb[32];
            if (s->scored) snprintf(rb, sizeof rb, "%.3f", s->reward);
            else snprintf(rb, sizeof rb, "unscored");
            fprintf(g->progress, "  %-8s %-8.3f %-28.28s %.60s\n", rb, adv[i], pt, s->text);
        }
        if (w) {
            json_t *o = json_object(), *comps = json_object();
            json_object_set_new(o, "step", json_integer(step));
            json_object_set_new(o, "prompt", json_string(pt));
            json_object_set_new(o, "completion", json_stringn(s->text, s->text_len));
            json_object_set_new(o, "reward", s->scored ? json_real(s->reward) : json_null());
            if (!s->scored && s->reason) json_object_set_new(o, "reason", json_string(s->reason));
            json_object_set_new(o, "advantage", json_real(adv[i]));
            for (int k = 0; k < g->K && s->vals; k++)
                json_object_set_new(comps, jr_reward_part_name(g->rw, k),
                                    s->vscored[k] ? json_real(s->vals[k]) : json_null());
            json_object_set_new(o, "components", comps);
            jr_jsonl_writer_append(w, o);
            json_decref(o);
        }
    }
    jr_jsonl_writer_close(w);
    free(path);
}

static jr_status do_rollout(grpo *g, rollout *r, int64_t step, rollout_stats *rs);

static void *rollout_thread(void *arg) {
    grpo *g = arg;
    g->pend_st = do_rollout(g, &g->pend, g->pend_step, &g->pend_rs);
    if (g->pend_st) snprintf(g->pend_err, sizeof g->pend_err, "%s", jr_errmsg());
    return NULL;
}

/* Copies the policy's weights into the generation model and starts rolling out `step` in the background. */
static jr_status launch_rollout(grpo *g, int64_t step) {
    memcpy(g->gen_m.params, g->m.params, sizeof(float) * g->m.n_params);
    memset(&g->pend, 0, sizeof g->pend);
    g->pend_step = step;
    g->pend_st = JR_OK;
    if (pthread_create(&g->th, NULL, rollout_thread, g)) return jr_fail(JR_EIO, "cannot start the generation thread");
    g->th_running = 1;
    return JR_OK;
}

/* Waits for the background rollout; moves it into *r, *rs. */
static jr_status join_rollout(grpo *g, rollout *r, rollout_stats *rs) {
    if (!g->th_running) return jr_fail(JR_EINVAL, "internal: no rollout in flight");
    pthread_join(g->th, NULL);
    g->th_running = 0;
    *r = g->pend;
    *rs = g->pend_rs;
    memset(&g->pend, 0, sizeof g->pend);
    if (g->pend_st) return jr_fail(g->pend_st, "%s", g->pend_err);
    return JR_OK;
}

static void grpo_free(grpo *g) {
    if (g->th_running) {
        pthread_join(g->th, NULL);
        g->th_running = 0;
    }
    rollout_free(&g->pend);
    if (g->has_gen) jr_model_free(&g->gen_m);
    jr_acts_free(&g->acts);
    free(g->ent);
    jr_textgen_close(&g->tg);
    jr_reward_close(g->rw);
    jr_data_close(g->data);
    jr_adamw_free(&g->opt);
    if (g->use_lora) jr_lora_free(&g->lora);
    jr_model_free(&g->m);
    if (g->has_ref) jr_model_free(&g->ref);
    free(g->weights);
}

static void on_bad_line(void *ud, const char *msg) {
    FILE *f = ud;
    if (f) fprintf(f, "warning: %s (skipped)\n", msg);
}

static int parse_enum(const char *v, const char *const *names) {
    for (int i = 0; names[i]; i++)
        if (!strcmp(v, names[i])) return i;
    return 0;
}

jr_status jr_grpo_run(const jr_config *c, FILE *progress, volatile sig_atomic_t *stop, jr_train_result *res) {
    memset(res, 0, sizeof *res);
    res->last_val_loss = NAN;
    grpo g;
    memset(&g, 0, sizeof g);
    g.c = c;
    g.progress = progress;
    const char *algo = jr_cfg_str(c, "trainer.algo");
    g.rloo = !strcmp(algo, "rloo");
    g.G = (int)jr_cfg_int(c, "grpo.num_generations");
    g.P = (int)jr_cfg_int(c, "grpo.prompts_per_step");
    g.max_prompt = (int)jr_cfg_int(c, "grpo.max_prompt_length");
    g.max_comp = (int)jr_cfg_int(c, "grpo.max_completion_length");
    g.mu = (int)jr_cfg_int(c, "grpo.num_iterations");
    g.B = (int)jr_cfg_int(c, "trainer.batch_size");
    g.beta = jr_cfg_float(c, "grpo.beta");
    g.eps_low = jr_cfg_float(c, "grpo.epsilon");
    g.eps_high = jr_cfg_float(c, "grpo.epsilon_high");
    if (g.eps_high < 0) g.eps_high = g.eps_low;
    g.temperature = jr_cfg_float(c, "grpo.temperature");
    g.loss_type = (jr_loss_type)parse_enum(jr_cfg_str(c, "grpo.loss_type"), (const char *const[]){"grpo", "bnpo", "dr_grpo", "dapo", NULL});
    g.scale = (jr_scale_rewards)parse_enum(jr_cfg_str(c, "grpo.scale_rewards"), (const char *const[]){"group", "batch", "none", NULL});
    g.nts = !strcmp(jr_cfg_str(c, "grpo.multi_objective_aggregation"), "normalize_then_sum");
    g.mask_trunc = jr_cfg_bool(c, "grpo.mask_truncated_completions");
    g.filter_groups = jr_cfg_bool(c, "grpo.filter_groups");
    g.max_gen_batches = (int)jr_cfg_int(c, "grpo.max_num_gen_batches");
    g.overlong = jr_cfg_bool(c, "grpo.overlong_buffer");
    g.overlong_len = (int)jr_cfg_int(c, "grpo.overlong_buffer_len");
    g.overlong_factor = jr_cfg_float(c, "grpo.overlong_penalty_factor");
    g.max_unscored = jr_cfg_float(c, "judge.max_unscored_frac");
    g.use_lora = jr_cfg_bool(c, "lora.enabled");
    g.async = jr_cfg_bool(c, "grpo.async_generation");
    const char *out_dir = jr_cfg_str(c, "run.out_dir");
    int64_t steps = jr_cfg_int(c, "trainer.steps"), save_every = jr_cfg_int(c, "trainer.save_every");
    int64_t log_every = jr_cfg_int(c, "trainer.log_every"), samples_every = jr_cfg_int(c, "grpo.log_completions_every");
    int keep = (int)jr_cfg_int(c, "trainer.keep_checkpoints");
    double b1 = jr_cfg_float(c, "trainer.beta1"), b2 = jr_cfg_float(c, "trainer.beta2");
    double eps = jr_cfg_float(c, "trainer.eps"), wd = jr_cfg_float(c, "trainer.weight_decay");
    jr_schedule sch = {jr_sched_parse(jr_cfg_str(c, "trainer.lr_schedule")), jr_cfg_float(c, "trainer.lr"),
                       jr_cfg_int(c, "trainer.warmup_steps"), steps};
    int shuffle = jr_cfg_bool(c, "grpo.shuffle_rewards");
    jr_train_state ts;
    memset(&ts, 0, sizeof ts);
    jr_rng_seed2(&ts.rng, (uint64_t)jr_cfg_int(c, "run.seed"), 0x6772706fULL);
    jr_runlog *rl = NULL;
    jr_progress *bar = NULL;
    char *ckpt = NULL;
    rollout ro = {0};
    micro *mb = NULL;
    int n_mb = 0;
    float *adv = NULL;
    uint8_t *active = NULL;
    jr_status st = JR_OK;

    if (!out_dir) return jr_fail(JR_EINVAL, "%s: run.out_dir must be set", c->source);
    if (g.use_lora && jr_cfg_float(c, "lora.dropout") != 0)
        return jr_fail(JR_EUNSUPPORTED, "%s: lora.dropout=%g: only 0 is supported (adapters are merged into the "
                                        "effective weights)", c->source, jr_cfg_float(c, "lora.dropout"));
    unsigned targets = 0;
    if (g.use_lora && jr_lora_parse_targets(jr_cfg_str(c, "lora.target_modules"), &targets))
        return jr_fail_ctx(JR_EINVAL, "%s: lora.target_modules", c->source);
    json_t *rwl = jr_cfg_json(c, "grpo.reward_weights");
    size_t n_comp = json_array_size(jr_cfg_json(c, "reward.components"));
    if (json_array_size(rwl) && json_array_size(rwl) != n_comp)
        return jr_fail(JR_EINVAL, "%s: grpo.reward_weights has %zu entries but reward.components has %zu", c->source,
                       json_array_size(rwl), n_comp);

    jr_data_opts dopt;
    jr_data_opts_from_config(&dopt, c);
    dopt.on_bad = on_bad_line;
    dopt.ud = progress;
    if (!dopt.train) return jr_fail(JR_EINVAL, "%s: data.train must name a JSONL file of prompts", c->source);
    if ((st = jr_data_open(&g.data, &dopt))) goto done;
    if ((st = jr_reward_open(&g.rw, c))) goto done;
    g.K = jr_reward_n_parts(g.rw);
    g.weights = jr_calloc((size_t)g.K + 1, sizeof *g.weights);
    if (!g.weights) { st = JR_ENOMEM; goto done; }
    for (int k = 0; k < g.K; k++)
        g.weights[k] = (float)(json_array_size(rwl) ? json_number_value(json_array_get(rwl, (size_t)k)) : jr_reward_part_weight(g.rw, k));
    g.weights[g.K] = (float)g.overlong_factor;
    if (g.rloo && g.nts) {
        st = jr_fail(JR_EINVAL, "%s: trainer.algo=rloo works on the summed reward: use "
                                "grpo.multi_objective_aggregation=sum_then_normalize", c->source);
        goto done;
    }

    /* the model (and adapters): the latest checkpoint when resuming, else model.path / model.init */
    if (jr_cfg_bool(c, "trainer.resume") && (st = jr_ckpt_latest(out_dir, &ckpt))) goto done;
    if (ckpt && !g.use_lora) {
        if ((st = jr_ckpt_load(ckpt, &g.m, &g.opt, &ts, b1, b2, eps, wd))) goto done;
        g.m.compute = jr_model_compute_from_config(c);
    } else {
        if ((st = jr_model_from_config(&g.m, c))) goto done;
    }
    if (g.use_lora) {
        if ((st = jr_lora_init(&g.lora, &g.m, (int)jr_cfg_int(c, "lora.rank"), jr_cfg_float(c, "lora.alpha"), targets,
                               (uint64_t)jr_cfg_int(c, "run.seed"))))
            goto done;
        g.trained = &g.lora.ad;
        if (ckpt) {
            if ((st = jr_lora_load_peft(&g.lora, ckpt))) goto done;
            if ((st = jr_ckpt_load_state(ckpt, g.trained, &g.opt, &ts, b1, b2, eps, wd))) goto done;
        }
    } else {
        g.trained = &g.m;
    }
    if (!ckpt && (st = jr_adamw_init(&g.opt, g.trained, b1, b2, eps, wd))) goto done;
    if (ckpt) {
        if ((st = jr_data_seek(g.data, ts.data))) goto done;
        res->resumed = 1;
    }
    if (g.beta > 0 && !g.use_lora) { /* the reference policy: the starting model, a second copy */
        if ((st = jr_model_from_config(&g.ref, c))) goto done;
        g.has_ref = 1;
    }
    g.T_max = g.max_prompt + g.max_comp;
    if (g.T_max + 1 > g.m.cfg.max_position_embeddings) {
        st = jr_fail(JR_EINVAL, "%s: grpo.max_prompt_length + grpo.max_completion_length = %d exceeds the model's "
                                "max_position_embeddings=%d - 1", c->source, g.T_max, g.m.cfg.max_position_embeddings);
        goto done;
    }
    {
        int threads = (int)jr_cfg_int(c, "trainer.threads");
        if (threads > 0) jr_nn_set_threads(threads);
        else if (jr_model_train_flops(&g.m, g.B, g.T_max) * ((g.P * g.G + g.B - 1) / g.B) < 2e9) jr_nn_set_threads(1);
    }
    if ((st = jr_model_alloc_grads(&g.m))) goto done;
    if ((st = jr_acts_init_opts(&g.acts, &g.m, g.B, g.T_max, &(jr_acts_opts){JR_LOGIT_ROWS_AUTO, 1}))) goto done;
    if (!(g.ent = jr_malloc(sizeof(float) * (size_t)g.B * g.T_max))) { st = JR_ENOMEM; goto done; }
    if (g.async) { /* the generation weights: a second copy of the model, refreshed before each rollout */
        if ((st = jr_model_from_config(&g.gen_m, c))) goto done;
        g.has_gen = 1;
    }
    if ((st = jr_textgen_open_model(&g.tg, g.async ? &g.gen_m : &g.m, jr_cfg_str(c, "trainer.tokenizer"), g.P * g.G,
                                    g.T_max + 1)))
        goto done;
    if (g.m.cfg.vocab_size < g.tg.tok.n_vocab) {
        st = jr_fail(JR_EINVAL, "model vocab_size=%d is smaller than the %s tokenizer's %d ids", g.m.cfg.vocab_size,
                     g.tg.tok.kind, g.tg.tok.n_vocab);
        goto done;
    }
    adv = jr_calloc((size_t)g.P * g.G, sizeof *adv);
    active = jr_calloc((size_t)g.P * g.G, 1);
    if (!adv || !active) { st = JR_ENOMEM; goto done; }
    if ((st = jr_runlog_open(&rl, out_dir, res->resumed ? ts.step : -1, jr_cfg_bool(c, "trainer.tensorboard"))))
        goto done;
    res->first_step = ts.step + 1;

    rollout_stats rs = {0};
    jr_adv_stats as = {0};
    double t_ref = 0, t_wait = 0;
    for (int64_t step = ts.step; step < steps; step++) {
        double t0 = now_s();
        int fresh = step % g.mu == 0 || !ro.s;
        t_ref = 0;
        if (fresh) {
            rollout_free(&ro);
            micro_free(mb, n_mb);
            mb = NULL;
            n_mb = 0;
            jr_train_state prev = ts; /* the state before this step, for a stop below */
            double tw0 = now_s();
            if (g.async) {
                if (!g.th_running && (st = launch_rollout(&g, step))) goto done;
                if ((st = join_rollout(&g, &ro, &rs))) goto done;
            } else if ((st = do_rollout(&g, &ro, step, &rs))) {
                goto done;
            }
            t_wait = now_s() - tw0;
            ts.data = rs.data_after;
            double unscored = rs.n_generated ? (double)rs.n_unscored / rs.n_generated : 0;
            if (unscored > g.max_unscored) {
                /* stop cleanly: log what happened, keep a checkpoint of the state before this step */
                jr_runlog_add(rl, "unscored_frac", unscored);
                jr_runlog_commit(rl, step + 1);
                jr_status s2 = jr_ckpt_save_with(out_dir, g.trained, &g.opt, &prev, keep,
                                  g.use_lora ? write_adapter : NULL, &g);
                if (s2) goto done;
                st = jr_fail(JR_EIO, "step %lld: %d of %d samples unscored (%.0f%% > judge.max_unscored_frac=%g); "
                                     "stopped with a checkpoint at step %lld: fix the judge and resume with "
                                     "trainer.resume=true", (long long)(step + 1), rs.n_unscored, rs.n_generated,
                             100 * unscored, g.max_unscored, (long long)step);
                goto done;
            }
            /* rewards -> advantages */
            int n = ro.n;
            float *rw = jr_calloc((size_t)n + 1, sizeof *rw), *vals = jr_calloc((size_t)n * (g.K + 1) + 1, sizeof *vals);
            uint8_t *sc = jr_calloc((size_t)n + 1, 1), *vsc = jr_calloc((size_t)n * (g.K + 1) + 1, 1);
            if (!rw || !sc || !vals || !vsc) { free(rw); free(sc); free(vals); free(vsc); st = JR_ENOMEM; goto done; }
            for (int i = 0; i < n; i++) {
                sc[i] = (uint8_t)ro.s[i].scored;
                rw[i] = sc[i] ? (float)ro.s[i].reward : 0.0f;
                for (int k = 0; k <= g.K && ro.s[i].vals; k++) {
                    vals[(size_t)i * (g.K + 1) + k] = (float)ro.s[i].vals[k];
                    vsc[(size_t)i * (g.K + 1) + k] = ro.s[i].vscored[k];
                }
            }
            if (shuffle) { /* control: rewards moved to random other samples */
                for (int i = n - 1; i > 0; i--) {
                    int j = (int)jr_rng_below(&ts.rng, (uint64_t)i + 1);
                    float t = rw[i]; rw[i] = rw[j]; rw[j] = t;
                    uint8_t u = sc[i]; sc[i] = sc[j]; sc[j] = u;
                }
            }
            if (g.rloo) jr_rloo_advantages(adv, active, &as, rw, sc, ro.P, g.G);
            else if (g.nts) jr_grpo_advantages_nts(adv, active, &as, vals, vsc, g.weights, g.K + (g.overlong ? 1 : 0), rw, sc, ro.P, g.G);
            else jr_grpo_advantages(adv, active, &as, rw, sc, ro.P, g.G, g.scale);
            free(rw); free(sc); free(vals); free(vsc);
            if ((st = build_micro(&g, &ro, adv, active, &mb, &n_mb))) goto done;
            /* old log-probs (num_iterations > 1, or the generating weights with async generation) */
            double tr0 = now_s();
            for (int k = 0; k < n_mb && !st && (g.mu > 1 || g.async); k++) {
                micro *x = &mb[k];
                if (!(x->old = jr_malloc(sizeof(float) * (size_t)x->nb * x->T))) st = JR_ENOMEM;
                else st = micro_logprobs(&g, g.async ? &g.gen_m : &g.m, x, x->old, NULL);
            }
            /* the next generation batch starts now, from the weights before this update */
            if (!st && g.async && step + g.mu < steps) st = launch_rollout(&g, step + g.mu);
            /* reference log-probs (beta > 0) */
            for (int k = 0; k < n_mb && !st; k++) {
                micro *x = &mb[k];
                size_t nt = (size_t)x->nb * x->T;
                if (!st && g.beta > 0) {
                    if (!(x->ref = jr_malloc(sizeof(float) * nt))) { st = JR_ENOMEM; break; }
                    if (g.use_lora) jr_lora_off(&g.lora);
                    st = micro_logprobs(&g, g.use_lora ? &g.m : &g.ref, x, x->ref, NULL);
                    if (g.use_lora) jr_lora_on(&g.lora);
                }
            }
            if (st) goto done;
            t_ref = now_s() - tr0;
        }
        double t_up0 = now_s();
        double lr = jr_schedule_lr(&sch, step);
        update_stats us;
        if ((st = policy_step(&g, mb, n_mb, g.mu > 1 || g.async, lr, &us))) goto done;
        double t_end = now_s();
        ts.step = step + 1;
        ts.tokens += (int64_t)us.tokens;
        if (step + 1 == res->first_step) res->first_loss = as.reward_mean;
        res->last_loss = as.reward_mean;
        res->last_step = ts.step;
        int last = ts.step == steps;
        if (ts.step % log_every == 0 || last) {
            jr_runlog_add(rl, "reward", as.reward_mean);
            jr_runlog_add(rl, "reward_std", as.reward_std);
            for (int k = 0; k < g.K; k++) {
                double s1 = 0, s2 = 0;
                int m = 0;
                for (int i = 0; i < ro.n; i++)
                    if (ro.s[i].vals && ro.s[i].vscored[k]) { s1 += ro.s[i].vals[k]; s2 += ro.s[i].vals[k] * ro.s[i].vals[k]; m++; }
                char key[160];
                double mean = m ? s1 / m : 0;
                snprintf(key, sizeof key, "rewards/%s/mean", jr_reward_part_name(g.rw, k));
                jr_runlog_add(rl, key, mean);
                snprintf(key, sizeof key, "rewards/%s/std", jr_reward_part_name(g.rw, k));
                jr_runlog_add(rl, key, m > 1 ? sqrt(fmax(0, (s2 - m * mean * mean) / (m - 1))) : 0);
            }
            double len_sum = 0, len_max = 0, trunc = 0;
            for (int i = 0; i < ro.n; i++) {
                len_sum += ro.s[i].n;
                if (ro.s[i].n > len_max) len_max = ro.s[i].n;
                trunc += ro.s[i].truncated;
            }
            jr_runlog_add(rl, "unscored_frac", rs.n_generated ? (double)rs.n_unscored / rs.n_generated : 0);
            jr_runlog_add(rl, "frac_reward_zero_std", as.frac_zero_std);
            jr_runlog_add(rl, "groups_used", as.groups_used);
            jr_runlog_add(rl, "loss", us.loss);
            jr_runlog_add(rl, "kl", us.kl);
            jr_runlog_add(rl, "clip_ratio/low_mean", us.clip_low);
            jr_runlog_add(rl, "clip_ratio/high_mean", us.clip_high);
            jr_runlog_add(rl, "clip_ratio/region_mean", us.clip_region);
            jr_runlog_add(rl, "entropy", us.entropy);
            jr_runlog_add(rl, "completions/mean_length", ro.n ? len_sum / ro.n : 0);
            jr_runlog_add(rl, "completions/max_length", len_max);
            jr_runlog_add(rl, "completions/clipped_ratio", ro.n ? trunc / ro.n : 0);
            jr_runlog_add(rl, "grad_norm", us.gnorm);
            jr_runlog_add(rl, "lr", lr);
            jr_runlog_add(rl, "tokens_per_s", t_end > t0 ? (double)rs.gen_tokens * fresh / (t_end - t0) : 0);
            if (fresh) {
                jr_runlog_add(rl, "gen_batches", rs.gen_batches);
                jr_runlog_add(rl, "time/generate", rs.t_gen);
                jr_runlog_add(rl, "time/judge_wait", rs.t_judge_wait);
                jr_runlog_add(rl, "time/reference", t_ref);
                jr_runlog_add(rl, "time/rollout_wait", t_wait);
                if (rs.t_judge_span > 0)
                    jr_runlog_add(rl, "judge/hidden_frac", fmax(0, 1 - rs.t_judge_wait / rs.t_judge_span));
            }
            jr_runlog_add(rl, "time/update", t_end - t_up0);
            if (jr_reward_judge(g.rw)) {
                jr_runlog_add(rl, "judge/latency_p50", rs.lat_p50);
                jr_runlog_add(rl, "judge/latency_p95", rs.lat_p95);
                jr_runlog_add(rl, "judge/cache_hit_rate", rs.cache_lookups ? (double)rs.cache_hits / rs.cache_lookups : 0);
            }
            if ((st = jr_runlog_commit(rl, ts.step))) goto done;
        }
        if (fresh && samples_every > 0 && ts.step % samples_every == 0) log_samples(&g, &ro, adv, ts.step, out_dir);
        if (progress && !bar) bar = jr_progress_new(algo, steps, progress, JR_PROGRESS_AUTO);
        jr_progress_field(bar, "reward", "%.3f", as.reward_mean);
        jr_progress_field(bar, "unscored", "%.2f", rs.n_generated ? (double)rs.n_unscored / rs.n_generated : 0);
        jr_progress_set(bar, ts.step);
        /* checkpoints only at generation boundaries: a resumed run then regenerates nothing it needs */
        int boundary = ts.step % g.mu == 0;
        int stopping = stop && *stop && boundary;
        if (last || stopping || (save_every > 0 && ts.step % save_every == 0 && boundary)) {
            st = jr_ckpt_save_with(out_dir, g.trained, &g.opt, &ts, keep,
                                  g.use_lora ? write_adapter : NULL, &g);
            if (st) goto done;
        }
        if (stopping && !last) {
            st = jr_fail(JR_ECANCELED, "stopped by a signal after step %lld; checkpoint written in %s/checkpoints "
                                       "(resume with trainer.resume=true)", (long long)ts.step, out_dir);
            goto done;
        }
    }
    /* the final policy: an HF directory (full fine-tuning) or a PEFT adapter (LoRA) */
    if (ts.step == steps)
        st = jr_ckpt_save_final(out_dir, g.use_lora ? "adapter" : "model", &g.m, g.use_lora ? write_adapter : NULL, &g,
                                &g.tg.tok);
done:
    jr_progress_finish(bar);
    if (rl) {
        jr_status st2 = jr_runlog_close(rl);
        if (!st) st = st2;
    }
    micro_free(mb, n_mb);
    rollout_free(&ro);
    free(adv);
    free(active);
    free(ckpt);
    grpo_free(&g);
    return st;
}
