/* grpo_rollout.c - GRPO's rollout: prompts from the data, G completions each, every completion submitted to the
 * reward environment as soon as it finishes (rewards overlap generation), dynamic sampling, one-step-ahead
 * generation on a background thread, and the held-out reward of the evaluation hook */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpo_internal.h"
#include "judgerl/evalrun.h"
#include "judgerl/fsutil.h"
#include "judgerl/generate.h"
#include "judgerl/utf8.h"

/* text[0..len) as valid UTF-8 (malloc'ed, NUL-terminated, length in *out_len): each maximal invalid
 * subsequence becomes U+FFFD, as Python's decode(errors="replace") does. */
static char *utf8_clean(const char *text, size_t len, size_t *out_len) {
    jr_strbuf b = {0};
    jr_utf8_append_lossy(&b, text, len);
    *out_len = b.n;
    return jr_strbuf_take(&b);
}

void grpo_rollout_free(grpo_rollout *r) {
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

/* A chat prompt {"messages": [...]}: rendered with the template; judges read the last user turn. */
static jr_status chat_prompt(jr_grpo_trainer *g, json_t *msgs, const jr_data_row_info *info, grpo_prompt *p,
                             int32_t **ids, int *n) {
    size_t k = json_array_size(msgs);
    const char **roles = jr_calloc(k, sizeof *roles), **contents = jr_calloc(k, sizeof *contents);
    if (!roles || !contents) { free(roles); free(contents); return JR_ENOMEM; }
    jr_status st = JR_OK;
    for (size_t i = 0; i < k && !st; i++) {
        json_t *mm = json_array_get(msgs, i);
        roles[i] = json_string_value(json_object_get(mm, "role"));
        contents[i] = json_string_value(json_object_get(mm, "content"));
        if (!roles[i] || !contents[i])
            st = jr_fail(JR_EINVAL, "%s:%lld: messages[%zu] needs string fields role and content", info->path,
                         (long long)info->line_no, i);
    }
    if (!st && (st = jr_textgen_encode_chat(&g->tg, (int)k, roles, contents, ids, n)))
        jr_fail_ctx(st, "%s:%lld", info->path, (long long)info->line_no);
    if (!st)
        for (size_t i = k; i-- > 0;)
            if (!strcmp(roles[i], "user")) { p->prompt_text = jr_strdup(contents[i]); break; }
    if (!st && !p->prompt_text) p->prompt_text = jr_strdup(contents[k - 1]);
    free(roles);
    free(contents);
    return st;
}

/* The prompt of a dataset row: "prompt" (text) or "messages" (chat), tokenised and cut to the
 * last max_prompt tokens. */
static jr_status make_prompt(jr_grpo_trainer *g, json_t *row, const jr_data_row_info *info, grpo_prompt *p) {
    json_t *pr = json_object_get(row, "prompt"), *msgs = json_object_get(row, "messages");
    jr_status st;
    int32_t *ids = NULL;
    int n = 0;
    if (json_is_string(pr)) {
        if ((st = jr_textgen_encode(&g->tg, json_string_value(pr), json_string_length(pr), &ids, &n)))
            return jr_fail_ctx(st, "%s:%lld", info->path, (long long)info->line_no);
        p->prompt_text = jr_strdup(json_string_value(pr));
    } else if (json_is_array(msgs) && json_array_size(msgs) > 0) {
        if ((st = chat_prompt(g, msgs, info, p, &ids, &n))) return st;
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

/* Generation of one batch: each completion is submitted to the environment as soon as it finishes. */
typedef struct {
    jr_grpo_trainer *g;
    grpo_rollout *r;
    jr_gen_req **reqs;
    int n_req;
    jr_env_batch *eb;
    int64_t step;
    int gen_batch, q0;      /* q0: the batch-wide index of prompt 0 (data-parallel shards) */
    double t_first_done;
    jr_status err;
} gen_ctx;

/* The environment's row for sample `index` of prompt p: every dataset field, "id", the prompt text and
 * "sample_index" (the sample's place in its prompt's group, 0..G-1). */
static json_t *env_row(const gen_ctx *x, const grpo_prompt *p, int group, int index) {
    json_t *row = json_copy(p->row);
    if (!row) return NULL;
    char id[96];
    snprintf(id, sizeof id, "s%lld-b%d-p%d-g%d", (long long)x->step, x->gen_batch, x->q0 + group, index);
    json_object_set_new(row, "id", json_string(id));
    json_object_set_new(row, "prompt", json_string(p->prompt_text));
    json_object_set_new(row, "sample_index", json_integer(index));
    return row;
}

static void on_event(void *ud, jr_gen_req *req, int index, const jr_gen_seq *seq, const char *delta, size_t len,
                     int tok_from) {
    (void)delta; (void)len; (void)tok_from;
    gen_ctx *x = ud;
    if (!seq->done || x->err) return;
    int q = -1;
    for (int i = 0; i < x->n_req; i++)
        if (x->reqs[i] == req) q = i;
    if (q < 0) return;
    int si = q * x->g->G + index;
    grpo_sample *s = &x->r->s[si];
    s->group = q;
    s->n = seq->n_tokens;
    s->toks = jr_malloc(sizeof(int32_t) * (size_t)(seq->n_tokens > 0 ? seq->n_tokens : 1));
    s->text = utf8_clean(seq->text ? seq->text : "", seq->text ? seq->text_len : 0, &s->text_len);
    if (!s->toks || !s->text) { x->err = JR_ENOMEM; return; }
    memcpy(s->toks, seq->tokens, sizeof(int32_t) * (size_t)seq->n_tokens);
    s->truncated = seq->finish_reason && !strcmp(seq->finish_reason, "length");
    if (x->t_first_done == 0) x->t_first_done = jr_now_s();
    json_t *row = env_row(x, &x->r->p[q], q, index);
    if (!row) { x->err = JR_ENOMEM; return; }
    jr_status st = jr_env_batch_submit(x->eb, (size_t)si, row, s->text, s->text_len);
    json_decref(row);
    if (st) x->err = st;
}

/* Hashes (seed, step, batch) into a generation seed. */
static uint64_t gen_seed(uint64_t seed, int64_t step, int batch) {
    jr_rng r;
    jr_rng_seed2(&r, seed, 0x67656eULL ^ ((uint64_t)step << 16) ^ (uint64_t)batch);
    return jr_rng_u64(&r);
}

/* Runs the generator until every request is done (a stop request cancels it). */
static jr_status generate_all(gen_ctx *x, jr_gen *gen) {
    jr_status st = JR_OK;
    while (!st) {
        int done = 1;
        for (int q = 0; q < x->n_req; q++)
            if (!jr_gen_req_done(x->reqs[q])) done = 0;
        if (done) break;
        if (x->g->gen_stop && *x->g->gen_stop) return jr_fail(JR_ECANCELED, "generation canceled by a stop request");
        st = jr_gen_step(gen);
        if (!st && x->err) st = x->err;
    }
    return st;
}

/* Generates r->P prompts (already filled) x G into samples, rewarded by the environment into results; prompt q
 * is prompt q0 + q of the whole batch (its sampling seed and sample ids), so a rank's shard samples what one
 * process would. */
static jr_status generate_batch(jr_grpo_trainer *g, grpo_rollout *r, int64_t step, int gen_batch, int q0, double temperature,
                                grpo_rollout_stats *rs, jr_env_result *results) {
    int np = r->P;
    gen_ctx x = {.g = g, .r = r, .n_req = np, .step = step, .gen_batch = gen_batch, .q0 = q0};
    x.reqs = jr_calloc((size_t)np, sizeof *x.reqs);
    if (!x.reqs) return JR_ENOMEM;
    jr_gen *gen = NULL;
    jr_gen_params gp = jr_gen_params_default();
    gp.sample.temperature = (float)temperature;
    gp.sample.top_p = (float)g->o.top_p;
    gp.sample.top_k = g->o.top_k;
    gp.sample.min_p = (float)g->o.min_p;
    gp.max_tokens = g->max_comp;
    gp.has_seed = 1;
    gp.constraint = g->cons;
    uint64_t base = gen_seed(g->run.ro.seed, step, gen_batch);
    jr_env_batch_opts eo = {g->o.max_in_flight, g->o.reward_deadline_s, g->gen_stop};
    double t0 = jr_now_s();
    /* the generating weights changed since the last batch (update, or the async copy): bf16 copy */
    jr_status st = jr_textgen_sync(&g->tg);
    if (!st) st = jr_env_batch_open(&x.eb, g->env, (size_t)np * g->G, results, &eo);
    if (!st) st = jr_gen_open(&gen, &g->tg.lm, &g->tg.vocab, base);
    for (int q = 0; q < np && !st; q++) {
        gp.seed = base + (uint64_t)(q0 + q);
        st = jr_gen_add(gen, r->p[q].ids, r->p[q].n_ids, g->G, &gp, on_event, &x, &x.reqs[q]);
        if (st) jr_fail_ctx(st, "generating for prompt %d", q);
    }
    if (!st) st = generate_all(&x, gen);
    double t1 = jr_now_s();
    jr_gen_close(gen);
    jr_status st2 = x.eb ? jr_env_batch_finish(x.eb) : JR_OK;
    double t2 = jr_now_s();
    free(x.reqs);
    if (!st) st = st2;
    rs->t_gen += t1 - t0;
    rs->t_judge_wait += t2 - t1;
    if (x.t_first_done > 0) rs->t_judge_span += t2 - x.t_first_done;
    rs->gen_batches++;
    return st;
}

/* Turns an environment result into the sample's reward and components (with the reward weights). */
static void take_rewards(jr_grpo_trainer *g, grpo_sample *s, jr_env_result *res) {
    int K = g->K;
    s->vals = jr_calloc((size_t)K + 1, sizeof(double));
    s->vscored = jr_calloc((size_t)K + 1, 1);
    s->scored = res->scored && s->vals && s->vscored;
    s->latency = res->cost.seconds;
    if (!s->scored) {
        s->reward = NAN;
        s->reason = jr_strdup(res->reason ? res->reason : "unscored");
        jr_reason_tally_add(g->run.why, res->reason ? res->reason : "unscored");
        return;
    }
    double sum = 0;
    int any = 0;
    for (int k = 0; k < K && k < res->n_parts; k++) {
        s->vals[k] = res->parts[k];
        s->vscored[k] = res->parts_scored[k];
        if (s->vscored[k]) { sum += g->weights[k] * s->vals[k]; any = 1; }
    }
    /* an environment without components, or a scored result none of whose components is (the workflow
     * environment's penalties: a workflow that does not parse or has no answer): its total, not 0 */
    if (K == 0 || !any) sum = res->reward;
    if (g->o.overlong_buffer) {
        s->vals[K] = jr_overlong_penalty(s->n, g->max_comp, g->o.overlong_buffer_len);
        s->vscored[K] = 1;
        sum += g->weights[K] * s->vals[K];
    }
    s->reward = sum;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A fresh rollout of P prompts x G samples (the arrays allocated, nothing filled). */
static jr_status rollout_alloc(grpo_rollout *r, int P, int G) {
    memset(r, 0, sizeof *r);
    r->P = P;
    r->G = G;
    r->n = P * G;
    r->p = jr_calloc((size_t)P, sizeof *r->p);
    r->s = jr_calloc((size_t)P * G, sizeof *r->s);
    return r->p && r->s ? JR_OK : JR_ENOMEM;
}

/* Moves the groups of tmp worth keeping into r (from r->P on): all, or with filter_groups those whose
 * scored rewards differ. */
static void keep_groups(jr_grpo_trainer *g, grpo_rollout *tmp, grpo_rollout *r, int *kept) {
    int G = g->G;
    for (int q = 0; q < tmp->P && *kept < g->P; q++) {
        if (g->o.filter_groups) {
            double lo = INFINITY, hi = -INFINITY;
            int k = 0;
            for (int j = 0; j < G; j++) {
                grpo_sample *s = &tmp->s[q * G + j];
                if (!s->scored) continue;
                k++;
                if (s->reward < lo) lo = s->reward;
                if (s->reward > hi) hi = s->reward;
            }
            if (k < 2 || hi <= lo) continue;
        }
        r->p[*kept] = tmp->p[q];
        memset(&tmp->p[q], 0, sizeof tmp->p[q]);
        for (int j = 0; j < G; j++) {
            r->s[*kept * G + j] = tmp->s[q * G + j];
            r->s[*kept * G + j].group = *kept;
            memset(&tmp->s[q * G + j], 0, sizeof tmp->s[0]);
        }
        (*kept)++;
    }
}

/* One generation batch into tmp: P prompts from the data (data-parallel: every rank reads the P_global prompts
 * of the batch and keeps its own P from p0), generated and rewarded; stats added to rs. */
static jr_status gen_batch_from_data(jr_grpo_trainer *g, grpo_rollout *tmp, int64_t step, int gb,
                                     grpo_rollout_stats *rs, jr_env_result *res, double *lat, int *n_lat, int lat_cap) {
    jr_status st = JR_OK;
    int P = g->P_global; /* every rank reads the whole batch's prompts (one data position) and keeps its own */
    json_t **hrows = g->hooks.prompts ? jr_calloc((size_t)P, sizeof *hrows) : NULL;
    if (g->hooks.prompts && !hrows) st = JR_ENOMEM;
    if (hrows && (st = g->hooks.prompts(g->hooks.ud, step, gb, P, hrows))) jr_fail_ctx(st, "step %lld prompts", (long long)step);
    for (int q = 0; q < P && !st; q++) {
        json_t *row = NULL;
        jr_data_row_info info = {.path = "<prompts hook>", .line_no = q + 1};
        if (hrows) row = json_incref(hrows[q]);
        else if ((st = jr_data_next(g->data, &row, &info))) break;
        if (q >= g->p0 && q < g->p0 + g->P)
            st = row ? make_prompt(g, row, &info, &tmp->p[q - g->p0]) : jr_fail(JR_EINVAL, "prompts hook: row %d missing", q);
        json_decref(row);
    }
    for (int q = 0; hrows && q < P; q++) json_decref(hrows[q]);
    free(hrows);
    if (!st) st = generate_batch(g, tmp, step, gb, g->p0, g->o.temperature, rs, res);
    for (int i = 0; i < tmp->n; i++) {
        if (!st) take_rewards(g, &tmp->s[i], &res[i]);
        jr_env_result_free(&res[i]);
    }
    for (int i = 0; i < tmp->n && !st; i++) {
        rs->n_generated++;
        rs->n_unscored += !tmp->s[i].scored;
        rs->gen_tokens += tmp->s[i].n;
        if (tmp->s[i].latency > 0 && *n_lat < lat_cap) lat[(*n_lat)++] = tmp->s[i].latency;
    }
    return st;
}

/* Fills a rollout of P groups: draws prompts, generates, scores; with filter_groups keeps only
 * groups whose rewards differ, generating more batches as allowed. */
jr_status grpo_do_rollout(jr_grpo_trainer *g, grpo_rollout *r, int64_t step, grpo_rollout_stats *rs) {
    memset(rs, 0, sizeof *rs);
    int P = g->P, G = g->G, max_b = g->o.max_num_gen_batches > 0 ? g->o.max_num_gen_batches : 64;
    int n_lat = 0, lat_cap = P * G * max_b, kept = 0;
    grpo_rollout tmp = {0};
    jr_env_result *res = jr_calloc((size_t)P * G, sizeof *res);
    double *lat = jr_calloc((size_t)lat_cap + 1, sizeof *lat);
    jr_status st = rollout_alloc(r, P, G);
    if (!st && (!res || !lat)) st = JR_ENOMEM;
    jr_judge_stats js0 = {0}, js1 = {0};
    if (g->judge) jr_judge_stats_get(g->judge, &js0);
    for (int gb = 0; !st && kept < P; gb++) {
        if (gb > 0 && (!g->o.filter_groups || (g->o.max_num_gen_batches > 0 && gb >= g->o.max_num_gen_batches))) break;
        if (!(st = rollout_alloc(&tmp, P, G))) st = gen_batch_from_data(g, &tmp, step, gb, rs, res, lat, &n_lat, lat_cap);
        if (!st) keep_groups(g, &tmp, r, &kept);
        grpo_rollout_free(&tmp);
    }
    r->P = kept;
    r->n = kept * G;
    if (g->judge) {
        jr_judge_stats_get(g->judge, &js1);
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

static void *rollout_thread(void *arg) {
    jr_grpo_trainer *g = arg;
    g->pend_st = grpo_do_rollout(g, &g->pend, g->pend_step, &g->pend_rs);
    if (g->pend_st) snprintf(g->pend_err, sizeof g->pend_err, "%s", jr_errmsg());
    return NULL;
}

/* Copies the policy's weights into the generation model and starts rolling out `step` in the background. */
jr_status grpo_launch_rollout(jr_grpo_trainer *g, int64_t step) {
    memcpy(g->gen_m.params, g->run.m.params, sizeof(float) * g->run.m.n_params);
    memset(&g->pend, 0, sizeof g->pend);
    g->pend_step = step;
    g->pend_st = JR_OK;
    if (pthread_create(&g->th, NULL, rollout_thread, g)) return jr_fail(JR_EIO, "cannot start the generation thread");
    g->th_running = 1;
    return JR_OK;
}

/* Waits for the background rollout; moves it into *r, *rs. */
jr_status grpo_join_rollout(jr_grpo_trainer *g, grpo_rollout *r, grpo_rollout_stats *rs) {
    if (!g->th_running) return jr_fail(JR_EINVAL, "internal: no rollout in flight");
    pthread_join(g->th, NULL);
    g->th_running = 0;
    *r = g->pend;
    *rs = g->pend_rs;
    memset(&g->pend, 0, sizeof g->pend);
    if (g->pend_st) return jr_fail(g->pend_st, "%s", g->pend_err);
    return JR_OK;
}

/* The evaluation hook: the mean reward of G completions for each validation prompt (P at a time, seeds
 * fixed by the chunk, so every evaluation of the same weights gives the same number). */
static void eval_put(void *ud, const char *key, double value) { jr_runlog_add(ud, key, value); }

/* The held-out samples the monitor sees (rows referenced, texts copied). */
typedef struct {
    jr_monitor_sample *s;
    int n, cap;
} mon_samples;

static jr_status mon_add(mon_samples *ms, const grpo_prompt *p, const grpo_sample *x) {
    if (ms->n == ms->cap) {
        int cap = ms->cap ? 2 * ms->cap : 64;
        jr_monitor_sample *ns = jr_realloc(ms->s, (size_t)cap * sizeof *ns);
        if (!ns) return JR_ENOMEM;
        ms->s = ns;
        ms->cap = cap;
    }
    char *t = jr_strdup(x->text ? x->text : "");
    if (!t) return JR_ENOMEM;
    ms->s[ms->n++] = (jr_monitor_sample){json_incref(p->row), t, x->scored, x->reward};
    return JR_OK;
}

static void mon_free(mon_samples *ms) {
    for (int i = 0; i < ms->n; i++) { json_decref((json_t *)ms->s[i].row); free((char *)ms->s[i].text); }
    free(ms->s);
}

/* The monitor's evaluation of the held-out samples: scalars in the metrics row, a newly fired alarm on the
 * progress output and the bar, and the run's stop when monitor.stop says so. */
static jr_status mon_observe(jr_grpo_trainer *g, const mon_samples *ms) {
    jr_monitor_eval ev;
    jr_run *r = &g->run;
    jr_status st = jr_monitor_observe(g->mon, r->ts.step, ms->s, ms->n, r->rl, &ev);
    if (st) return st;
    if (ev.fired && g->progress) fprintf(g->progress, "%s\n", ev.note);
    if (ev.active) {
        char names[64] = "";
        for (int a = 0; a < JR_ALARM_COUNT; a++)
            if (ev.active & (1u << a)) snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? "," : "",
                                                jr_monitor_alarm_name(a));
        jr_progress_field(r->bar, "alarm", "%s", names);
    }
    if (ev.fired && jr_monitor_wants_stop(g->mon) && !r->halt[0])
        snprintf(r->halt, sizeof r->halt, "%.480s (monitor.stop=true)", ev.note);
    return JR_OK;
}

/* The eval hook: num_generations samples of every validation prompt, tabulated as `judgerl eval` does
 * (jr_eval_acc: per-component means, pass@1 and pass@G with pass = value >= 1, per data source,
 * unscored counts) and logged under eval/; *mean is the mean reward (the harness logs eval/reward). */
jr_status grpo_eval_reward(void *ud, double *mean) { return jr_grpo_eval_pass(ud, -1, "eval/", mean); }

jr_status jr_grpo_eval_pass(jr_grpo_trainer *g, double temperature, const char *prefix, double *mean) {
    int primary = temperature < 0; /* the hook's own pass: the monitor watches it */
    size_t nv = jr_data_n_val(g->data);
    int P = g->P_global; /* the whole batch's chunks, as one process (rank 0 alone evaluates) */
    jr_env_result *res = jr_calloc((size_t)P * g->G, sizeof *res);
    int ks[2] = {1, g->G};
    jr_eval_acc *acc = jr_eval_acc_new(g->K, g->env->part_names, 1.0, ks, g->G > 1 ? 2 : 1);
    grpo_rollout_stats rs = {0};
    double sum = 0;
    long cnt = 0;
    mon_samples ms = {0};
    jr_status st = res && acc ? JR_OK : JR_ENOMEM;
    for (size_t v0 = 0; v0 < nv && !st; v0 += (size_t)P) {
        int np = nv - v0 < (size_t)P ? (int)(nv - v0) : P;
        grpo_rollout r;
        st = rollout_alloc(&r, np, g->G);
        for (int q = 0; q < np && !st; q++) {
            json_t *row = NULL;
            jr_data_row_info info;
            if (!(st = jr_data_val_get(g->data, v0 + (size_t)q, &row, &info)) && g->hooks.prepare_val) {
                json_t *prep = NULL;
                st = g->hooks.prepare_val(g->hooks.ud, row, &prep);
                json_decref(row);
                row = prep;
            }
            if (!st) st = make_prompt(g, row, &info, &r.p[q]);
            json_decref(row);
        }
        if (!st) st = generate_batch(g, &r, -1 - (int64_t)(v0 / (size_t)P), 0, 0, primary ? g->o.temperature : temperature, &rs, res);
        for (int i = 0; i < r.n; i++) {
            if (!st) take_rewards(g, &r.s[i], &res[i]);
            if (!st && r.s[i].scored) { sum += r.s[i].reward; cnt++; }
            if (!st) {
                char group[32];
                snprintf(group, sizeof group, "%zu", v0 + (size_t)r.s[i].group);
                jr_eval_score es = {.source = jr_eval_row_source(r.p[r.s[i].group].row), .group = group, .has_reward = 1,
                                    .reward_scored = r.s[i].scored, .reward = r.s[i].reward, .reason = r.s[i].reason,
                                    .vals = r.s[i].vals, .vscored = r.s[i].vscored};
                st = jr_eval_acc_add(acc, &es);
            }
            if (!st && g->mon && primary) st = mon_add(&ms, &r.p[r.s[i].group], &r.s[i]);
            jr_env_result_free(&res[i]);
        }
        grpo_rollout_free(&r);
    }
    free(res);
    if (!st) {
        json_t *summary = jr_eval_acc_summary(acc);
        jr_eval_summary_flat(summary, prefix, 1, eval_put, g->run.rl);
        json_decref(summary);
        if (g->mon && primary) st = mon_observe(g, &ms);
    }
    mon_free(&ms);
    jr_eval_acc_free(acc);
    *mean = cnt ? sum / cnt : NAN;
    return st;
}
