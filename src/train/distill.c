/* distill.c - trainer.algo distill (seed 1's method): a judge labels each prompt with one of N labels and a
 * confidence, verdicts below the threshold are rejected, the policy learns the label's tokens by cross-entropy */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/checkpoint.h"
#include "judgerl/dataset.h"
#include "judgerl/fsutil.h"
#include "judgerl/lora.h"
#include "judgerl/model.h"
#include "judgerl/nn.h"
#include "judgerl/optim.h"
#include "judgerl/progress.h"
#include "judgerl/reward.h"
#include "judgerl/runlog.h"
#include "judgerl/tok.h"
#include "judgerl/run.h"
#include "judgerl/train.h"

const jr_cfg_field jr_distill_cfg[] = {
    {"distill.label_prefix", JR_CFG_STRING, "\" \"",
     "text put before the label in the training target (prompt, then prefix + label, then eos)", NULL, NULL, 0, 0},
    {"distill.max_prompt_length", JR_CFG_INT, "256", "prompt tokens kept (longer prompts keep their last tokens)", NULL,
     NULL, 1, 1e7},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

/* distill.* plus what distill reads of judge.* */
typedef struct {
    const char *label_prefix;
    int max_prompt_length;
    double max_unscored;     /* judge.max_unscored_frac */
    const json_t *labels;    /* judge.label.labels (borrowed from the config) */
} distill_opts;

static void distill_opts_from_config(distill_opts *o, const jr_config *c) {
    o->label_prefix = jr_cfg_str(c, "distill.label_prefix");
    if (!o->label_prefix) o->label_prefix = "";
    o->max_prompt_length = (int)jr_cfg_int(c, "distill.max_prompt_length");
    o->max_unscored = jr_cfg_float(c, "judge.max_unscored_frac");
    o->labels = jr_cfg_json(c, "judge.label.labels");
}

typedef struct {
    jr_run run;
    distill_opts o;
    jr_tok tok;
    jr_data *data;
    jr_reward *rw;
    int comp;                /* the reward component with fn label */
    jr_acts acts;
    int B, cap;
    json_t **rows;
    jr_reward_result *results;
    int32_t *seq, *ids, *tg;
    int *len;
    float *lp;
} distill;

/* The label chosen for a result of component k: its text from judge.label.labels, or NULL. */
static const char *label_of(const distill *d, const jr_reward_result *r, int k) {
    if (!r->scored || k >= r->n_parts) return NULL;
    json_t *sc = json_object_get(json_object_get(r->parts[k].detail, "scores"), "label_index");
    if (!json_is_integer(sc)) return NULL;
    return json_string_value(json_array_get(d->o.labels, (size_t)json_integer_value(sc)));
}

/* The next B rows {"prompt"} into d->rows (an "id" added when missing). */
static jr_status next_rows(distill *d, int64_t step) {
    for (int i = 0; i < d->B; i++) {
        json_t *row = NULL;
        jr_data_row_info info;
        jr_status st = jr_data_next(d->data, &row, &info);
        if (st) return st;
        if (!json_is_string(json_object_get(row, "prompt"))) {
            json_decref(row);
            return jr_fail(JR_EINVAL, "%s:%lld: distill rows need a string field \"prompt\"", info.path,
                           (long long)info.line_no);
        }
        d->rows[i] = json_copy(row);
        json_decref(row);
        if (!d->rows[i]) return JR_ENOMEM;
        if (!json_object_get(d->rows[i], "id")) {
            char id[64];
            snprintf(id, sizeof id, "d%lld-%d", (long long)step, i);
            json_object_set_new(d->rows[i], "id", json_string(id));
        }
    }
    return JR_OK;
}

/* Row `kept`'s sequence [bos] prompt (last max_prompt tokens) prefix+label [eos] into d->seq, its
 * targets (loss on prefix+label+eos) into d->tg; *T grows to the longest. */
static jr_status label_target(distill *d, const char *prompt, const char *lab, int kept, int *T) {
    int32_t *pi = NULL, *li = NULL;
    size_t np = 0, nl = 0, tl = strlen(d->o.label_prefix) + strlen(lab);
    char *text = jr_malloc(tl + 1);
    if (!text) return JR_ENOMEM;
    snprintf(text, tl + 1, "%s%s", d->o.label_prefix, lab);
    jr_status st = d->tok.encode(d->tok.ctx, prompt, strlen(prompt), &pi, &np);
    if (!st) st = d->tok.encode(d->tok.ctx, text, strlen(text), &li, &nl);
    free(text);
    if (st) { free(pi); free(li); return st; }
    size_t mp = (size_t)d->o.max_prompt_length;
    if (np > mp) { memmove(pi, pi + (np - mp), sizeof(int32_t) * mp); np = mp; }
    if (nl > 62) nl = 62;
    int32_t *q = d->seq + (size_t)kept * d->cap;
    int n = 0;
    if (d->tok.bos_id >= 0) q[n++] = d->tok.bos_id;
    for (size_t j = 0; j < np; j++) q[n++] = pi[j];
    int start = n;
    for (size_t j = 0; j < nl; j++) q[n++] = li[j];
    if (d->tok.eos_id >= 0) q[n++] = d->tok.eos_id;
    free(pi); free(li);
    d->len[kept] = n;
    /* the first label token is predicted at position start - 1 */
    for (int t = 0; t < d->cap; t++) d->tg[(size_t)kept * d->cap + t] = (t + 1 >= start && t + 1 < n) ? q[t + 1] : -1;
    if (n - 1 > *T) *T = n - 1;
    return JR_OK;
}

/* Cross-entropy on the kept rows (packed to (kept, T)) and one update: *loss, *n_tok, *gnorm. */
static jr_status train_kept(distill *d, int kept, int T, double lr, double *loss, long *n_tok, double *gnorm) {
    jr_run *r = &d->run;
    int32_t pad = d->tok.pad_id >= 0 ? d->tok.pad_id : 0;
    int32_t *tt = jr_malloc(sizeof(int32_t) * (size_t)kept * T);
    if (!tt) return JR_ENOMEM;
    *n_tok = 0;
    for (int b = 0; b < kept; b++)
        for (int t = 0; t < T; t++) {
            d->ids[(size_t)b * T + t] = t < d->len[b] ? d->seq[(size_t)b * d->cap + t] : pad;
            tt[(size_t)b * T + t] = d->tg[(size_t)b * d->cap + t];
            d->lp[(size_t)b * T + t] = 0;
            *n_tok += tt[(size_t)b * T + t] >= 0;
        }
    jr_run_zero_grads(r);
    double nll;
    long cnt;
    jr_status st = jr_model_nll(&r->m, &d->acts, d->ids, tt, kept, T, 1.0f / (float)*n_tok, d->lp, &nll, &cnt);
    free(tt);
    if (st) return st;
    *loss = nll / (double)*n_tok;
    return jr_run_update(r, lr, gnorm);
}

static void free_rows(distill *d) {
    for (int i = 0; d->rows && i < d->B; i++) {
        json_decref(d->rows[i]);
        d->rows[i] = NULL;
    }
    for (int i = 0; d->results && i < d->B; i++) jr_reward_result_free(&d->results[i]);
}

/* One step: B prompts labelled by the judge, rejected ones dropped, cross-entropy on the labels. */
static jr_status distill_step(void *ud, jr_run *r, int64_t step, double *loss, int *boundary) {
    distill *d = ud;
    (void)boundary;
    jr_train_state prev = r->ts;
    double t0 = jr_now_s(), lat = 0, gnorm = 0;
    jr_status st = next_rows(d, step);
    if (!st) {
        r->ts.data = jr_data_tell(d->data);
        st = jr_reward_score(d->rw, (const json_t *const *)d->rows, (size_t)d->B, d->results);
    }
    double t_judge = jr_now_s() - t0;
    int kept = 0, T = 1;
    for (int i = 0; i < d->B && !st; i++) {
        const char *lab = label_of(d, &d->results[i], d->comp);
        if (d->results[i].judge_latency_s > lat) lat = d->results[i].judge_latency_s;
        if (lab) st = label_target(d, json_string_value(json_object_get(d->rows[i], "prompt")), lab, kept++, &T);
        else jr_reason_tally_add(r->why, d->results[i].reason ? d->results[i].reason : "no accepted label");
    }
    free_rows(d);
    if (st) return st;
    double unscored = (double)(d->B - kept) / d->B;
    if (unscored > d->o.max_unscored)
        return jr_run_stop_unscored(r, &prev, step, d->B - kept, d->B, "prompts without an accepted label",
                                    d->o.max_unscored);
    long n_tok = 0;
    *loss = 0;
    if (kept > 0 && (st = train_kept(d, kept, T, jr_schedule_lr(&r->sch, step), loss, &n_tok, &gnorm))) return st;
    r->ts.tokens += n_tok;
    if (r->log_now) {
        jr_runlog_add(r->rl, "loss", *loss);
        jr_runlog_add(r->rl, "kept", kept);
        jr_runlog_add(r->rl, "unscored_frac", unscored);
        jr_runlog_add(r->rl, "label_tokens", (double)n_tok);
        jr_runlog_add(r->rl, "grad_norm", gnorm);
        jr_runlog_add(r->rl, "time/judge_wait", t_judge);
        jr_runlog_add(r->rl, "time/update", jr_now_s() - t0 - t_judge);
        jr_runlog_add(r->rl, "judge/latency_max", lat);
    }
    jr_progress_field(r->bar, "rejected", "%.2f", unscored);
    return JR_OK;
}

/* The reward component with fn label, data, buffers, over an opened run. */
static jr_status distill_open(distill *d, const jr_data_opts *dopt) {
    jr_run *r = &d->run;
    jr_status st;
    d->comp = -1;
    for (int k = 0; k < jr_reward_n_parts(d->rw) && d->comp < 0; k++)
        if (!strcmp(jr_reward_part_fn(d->rw, k), "label")) d->comp = k;
    if (d->comp < 0)
        return jr_fail(JR_EINVAL, "trainer.algo=distill needs a reward.components entry with fn: label (the judge "
                                  "labels each prompt; judge.label.labels lists the labels)");
    if ((st = jr_data_open(&d->data, dopt))) return st;
    if (r->resumed && (st = jr_data_seek(d->data, r->ts.data))) return st;
    d->B = r->to.batch_size;
    d->cap = d->o.max_prompt_length + 64;
    if ((st = jr_run_start(r, jr_model_train_flops(&r->m, d->B, d->cap), &d->tok))) return st;
    size_t n = (size_t)d->B * d->cap;
    d->rows = jr_calloc((size_t)d->B, sizeof *d->rows);
    d->results = jr_calloc((size_t)d->B, sizeof *d->results);
    d->seq = jr_malloc(sizeof(int32_t) * n);
    d->ids = jr_malloc(sizeof(int32_t) * n);
    d->tg = jr_malloc(sizeof(int32_t) * n);
    d->len = jr_calloc((size_t)d->B, sizeof *d->len);
    d->lp = jr_malloc(sizeof(float) * n);
    if (!d->rows || !d->results || !d->seq || !d->ids || !d->tg || !d->len || !d->lp) return JR_ENOMEM;
    jr_acts_opts ao = {JR_LOGIT_ROWS_AUTO, 1, r->to.checkpoint_activations};
    return jr_acts_init_opts(&d->acts, &r->m, d->B, d->cap, &ao);
}

static jr_status distill_close(distill *d, jr_status st) {
    free_rows(d);
    free(d->rows); free(d->results); free(d->seq); free(d->ids); free(d->tg); free(d->len); free(d->lp);
    jr_acts_free(&d->acts);
    jr_reward_close(d->rw);
    jr_data_close(d->data);
    st = jr_run_close(&d->run, st);
    jr_tok_close(&d->tok);
    return st;
}

jr_status jr_distill_run(const jr_config *c, FILE *progress, volatile sig_atomic_t *stop, jr_train_result *res) {
    distill d;
    memset(&d, 0, sizeof d);
    jr_run_opts ro;
    jr_trainer_opts to;
    jr_lora_opts lo;
    jr_data_opts dopt;
    jr_run_opts_from_config(&ro, c);
    jr_trainer_opts_from_config(&to, c);
    jr_lora_opts_from_config(&lo, c);
    jr_data_opts_from_config(&dopt, c);
    distill_opts_from_config(&d.o, c);
    jr_model_source src;
    jr_model_source_opts_from_config(&src, c);
    jr_status st = jr_tok_open(&d.tok, to.tokenizer);
    if (st) return jr_fail_ctx(st, "trainer.tokenizer");
    if (!dopt.train) st = jr_fail(JR_EINVAL, "%s: data.train must name a JSONL file of prompts", c->source);
    if (!st) st = jr_reward_open(&d.rw, c);
    if (!st) st = jr_run_open(&d.run, &ro, &to, &lo, &src, 0x64697374ULL, progress, stop);
    if (!st) st = distill_open(&d, &dopt);
    if (!st) {
        jr_run_algo algo = {"distill", distill_step, &d, "loss"};
        st = jr_run_loop(&d.run, &algo);
    }
    jr_run_result(&d.run, res);
    return distill_close(&d, st);
}
