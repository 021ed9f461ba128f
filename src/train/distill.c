/* distill.c - trainer.algo distill (seed 1's method): a judge labels each prompt with one of N labels and a
 * confidence, verdicts below the threshold are rejected, the policy learns the label's tokens by cross-entropy */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
#include "judgerl/train.h"

const jr_cfg_field jr_distill_cfg[] = {
    {"distill.label_prefix", JR_CFG_STRING, "\" \"",
     "text put before the label in the training target (prompt, then prefix + label, then eos)", NULL, NULL, 0, 0},
    {"distill.max_prompt_length", JR_CFG_INT, "256", "prompt tokens kept (longer prompts keep their last tokens)", NULL,
     NULL, 1, 1e7},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct {
    jr_model m;
    jr_lora lora;
    int use_lora;
    jr_model *trained;
    jr_adamw opt;
    jr_tok tok;
    jr_data *data;
    jr_reward *rw;
    jr_acts acts;
    const jr_config *c;
} distill;

static jr_status write_adapter(void *ud, const char *dir) {
    distill *d = ud;
    return jr_lora_save_peft(&d->lora, dir, jr_cfg_str(d->c, "model.path"), 0.0);
}

/* The label chosen for a result of component k: its text from judge.label.labels, or NULL. */
static const char *label_of(const distill *d, const jr_reward_result *r, int k) {
    if (!r->scored || k >= r->n_parts) return NULL;
    json_t *sc = json_object_get(json_object_get(r->parts[k].detail, "scores"), "label_index");
    if (!json_is_integer(sc)) return NULL;
    return json_string_value(json_array_get(jr_cfg_json(d->c, "judge.label.labels"), (size_t)json_integer_value(sc)));
}

jr_status jr_distill_run(const jr_config *c, FILE *progress, volatile sig_atomic_t *stop, jr_train_result *res) {
    memset(res, 0, sizeof *res);
    res->last_val_loss = NAN;
    distill d;
    memset(&d, 0, sizeof d);
    d.c = c;
    int B = (int)jr_cfg_int(c, "trainer.batch_size");
    int max_prompt = (int)jr_cfg_int(c, "distill.max_prompt_length");
    const char *prefix = jr_cfg_str(c, "distill.label_prefix");
    const char *out_dir = jr_cfg_str(c, "run.out_dir");
    int64_t steps = jr_cfg_int(c, "trainer.steps"), save_every = jr_cfg_int(c, "trainer.save_every");
    int keep = (int)jr_cfg_int(c, "trainer.keep_checkpoints");
    double b1 = jr_cfg_float(c, "trainer.beta1"), b2 = jr_cfg_float(c, "trainer.beta2");
    double eps = jr_cfg_float(c, "trainer.eps"), wd = jr_cfg_float(c, "trainer.weight_decay");
    double max_unscored = jr_cfg_float(c, "judge.max_unscored_frac");
    jr_schedule sch = {jr_sched_parse(jr_cfg_str(c, "trainer.lr_schedule")), jr_cfg_float(c, "trainer.lr"),
                       jr_cfg_int(c, "trainer.warmup_steps"), steps};
    d.use_lora = jr_cfg_bool(c, "lora.enabled");
    jr_train_state ts;
    memset(&ts, 0, sizeof ts);
    jr_rng_seed2(&ts.rng, (uint64_t)jr_cfg_int(c, "run.seed"), 0x64697374ULL);
    jr_runlog *rl = NULL;
    jr_progress *bar = NULL;
    char *ckpt = NULL;
    json_t **rows = NULL;
    jr_reward_result *results = NULL;
    int32_t *seq = NULL, *ids = NULL, *tg = NULL;
    int *len = NULL;
    float *lp = NULL;
    jr_status st = JR_OK;
    int comp = -1;
    unsigned targets = 0;

    if (!out_dir) return jr_fail(JR_EINVAL, "%s: run.out_dir must be set", c->source);
    if (d.use_lora && jr_cfg_float(c, "lora.dropout") != 0)
        return jr_fail(JR_EUNSUPPORTED, "%s: lora.dropout=%g: only 0 is supported", c->source, jr_cfg_float(c, "lora.dropout"));
    if (d.use_lora && jr_lora_parse_targets(jr_cfg_str(c, "lora.target_modules"), &targets))
        return jr_fail_ctx(JR_EINVAL, "%s: lora.target_modules", c->source);
    if ((st = jr_tok_open(&d.tok, jr_cfg_str(c, "trainer.tokenizer")))) return jr_fail_ctx(st, "trainer.tokenizer");
    jr_data_opts dopt;
    jr_data_opts_from_config(&dopt, c);
    if (!dopt.train) { st = jr_fail(JR_EINVAL, "%s: data.train must name a JSONL file of prompts", c->source); goto done; }
    if ((st = jr_data_open(&d.data, &dopt))) goto done;
    if ((st = jr_reward_open(&d.rw, c))) goto done;
    for (int k = 0; k < jr_reward_n_parts(d.rw); k++) {
        json_t *e = json_array_get(jr_cfg_json(c, "reward.components"), (size_t)k);
        const char *fn = json_string_value(json_object_get(e, "fn"));
        if (fn && !strcmp(fn, "label")) { comp = k; break; }
    }
    if (comp < 0) {
        st = jr_fail(JR_EINVAL, "%s: trainer.algo=distill needs a reward.components entry with fn: label (the judge "
                                "labels each prompt; judge.label.labels lists the labels)", c->source);
        goto done;
    }
    if (jr_cfg_bool(c, "trainer.resume") && (st = jr_ckpt_latest(out_dir, &ckpt))) goto done;
    if (ckpt && !d.use_lora) {
        if ((st = jr_ckpt_load(ckpt, &d.m, &d.opt, &ts, b1, b2, eps, wd))) goto done;
        d.m.compute = jr_model_compute_from_config(c);
    } else if ((st = jr_model_from_config(&d.m, c))) {
        goto done;
    }
    if (d.use_lora) {
        if ((st = jr_lora_init(&d.lora, &d.m, (int)jr_cfg_int(c, "lora.rank"), jr_cfg_float(c, "lora.alpha"), targets,
                               (uint64_t)jr_cfg_int(c, "run.seed"))))
            goto done;
        d.trained = &d.lora.ad;
        if (ckpt && ((st = jr_lora_load_peft(&d.lora, ckpt)) ||
                     (st = jr_ckpt_load_state(ckpt, d.trained, &d.opt, &ts, b1, b2, eps, wd))))
            goto done;
    } else {
        d.trained = &d.m;
    }
    if (!ckpt && (st = jr_adamw_init(&d.opt, d.trained, b1, b2, eps, wd))) goto done;
    if (ckpt) {
        if ((st = jr_data_seek(d.data, ts.data))) goto done;
        res->resumed = 1;
    }
    if (d.m.cfg.vocab_size < d.tok.n_vocab) {
        st = jr_fail(JR_EINVAL, "model vocab_size=%d is smaller than the %s tokenizer's %d ids", d.m.cfg.vocab_size,
                     d.tok.kind, d.tok.n_vocab);
        goto done;
    }
    int cap = max_prompt + 64;
    if (jr_cfg_int(c, "trainer.threads") > 0) jr_nn_set_threads((int)jr_cfg_int(c, "trainer.threads"));
    else if (jr_model_train_flops(&d.m, B, cap) < 2e9) jr_nn_set_threads(1);
    rows = jr_calloc((size_t)B, sizeof *rows);
    results = jr_calloc((size_t)B, sizeof *results);
    seq = jr_malloc(sizeof(int32_t) * (size_t)B * cap);
    ids = jr_malloc(sizeof(int32_t) * (size_t)B * cap);
    tg = jr_malloc(sizeof(int32_t) * (size_t)B * cap);
    len = jr_calloc((size_t)B, sizeof *len);
    lp = jr_malloc(sizeof(float) * (size_t)B * cap);
    if (!rows || !results || !seq || !ids || !tg || !len || !lp) { st = JR_ENOMEM; goto done; }
    if ((st = jr_model_alloc_grads(&d.m))) goto done;
    if ((st = jr_acts_init_opts(&d.acts, &d.m, B, cap, &(jr_acts_opts){JR_LOGIT_ROWS_AUTO, 1}))) goto done;
    if ((st = jr_runlog_open(&rl, out_dir, res->resumed ? ts.step : -1, jr_cfg_bool(c, "trainer.tensorboard")))) goto done;
    res->first_step = ts.step + 1;

    for (int64_t step = ts.step; step < steps; step++) {
        jr_train_state prev = ts;
        double t0 = now_s();
        for (int i = 0; i < B && !st; i++) {
            json_t *row = NULL;
            jr_data_row_info info;
            if ((st = jr_data_next(d.data, &row, &info))) break;
            if (!json_is_string(json_object_get(row, "prompt"))) {
                st = jr_fail(JR_EINVAL, "%s:%lld: distill rows need a string field \"prompt\"", info.path,
                             (long long)info.line_no);
                json_decref(row);
                break;
            }
            rows[i] = json_copy(row);
            json_decref(row);
            if (!rows[i]) { st = JR_ENOMEM; break; }
            if (!json_object_get(rows[i], "id")) {
                char id[64];
                snprintf(id, sizeof id, "d%lld-%d", (long long)step, i);
                json_object_set_new(rows[i], "id", json_string(id));
            }
        }
        if (st) goto done;
        ts.data = jr_data_tell(d.data);
        st = jr_reward_score(d.rw, (const json_t *const *)rows, (size_t)B, results);
        double t_judge = now_s() - t0;
        if (st) goto done;
        /* targets: [bos] prompt (last max_prompt tokens) prefix+label [eos]; loss on prefix+label+eos */
        int kept = 0, T = 1;
        double lat = 0;
        for (int i = 0; i < B; i++) {
            const char *lab = label_of(&d, &results[i], comp);
            if (results[i].judge_latency_s > lat) lat = results[i].judge_latency_s;
            if (!lab) continue;
            const char *pt = json_string_value(json_object_get(rows[i], "prompt"));
            int32_t *pi = NULL, *li = NULL;
            size_t np = 0, nl = 0;
            size_t tl = strlen(prefix ? prefix : "") + strlen(lab);
            char *text = jr_malloc(tl + 1);
            if (!text) { st = JR_ENOMEM; goto done; }
            snprintf(text, tl + 1, "%s%s", prefix ? prefix : "", lab);
            st = d.tok.encode(d.tok.ctx, pt, strlen(pt), &pi, &np);
            if (!st) st = d.tok.encode(d.tok.ctx, text, strlen(text), &li, &nl);
            free(text);
            if (st) { free(pi); free(li); goto done; }
            if (np > (size_t)max_prompt) { memmove(pi, pi + (np - (size_t)max_prompt), sizeof(int32_t) * (size_t)max_prompt); np = (size_t)max_prompt; }
            if (nl > 62) nl = 62;
            int32_t *q = seq + (size_t)kept * cap;
            int n = 0;
            if (d.tok.bos_id >= 0) q[n++] = d.tok.bos_id;
            for (size_t j = 0; j < np; j++) q[n++] = pi[j];
            int start = n;
            for (size_t j = 0; j < nl; j++) q[n++] = li[j];
            if (d.tok.eos_id >= 0) q[n++] = d.tok.eos_id;
            free(pi); free(li);
            len[kept] = n;
            /* the first label token is predicted at position start - 1 */
            for (int t = 0; t < cap; t++) tg[(size_t)kept * cap + t] = (t + 1 >= start && t + 1 < n) ? q[t + 1] : -1;
            if (n - 1 > T) T = n - 1;
            kept++;
        }
        double unscored = (double)(B - kept) / B;
        if (unscored > max_unscored) {
            jr_runlog_add(rl, "unscored_frac", unscored);
            jr_runlog_commit(rl, step + 1);
            jr_status s2 = jr_ckpt_save_with(out_dir, d.trained, &d.opt, &prev, keep,
                                  d.use_lora ? write_adapter : NULL, &d);
            if (s2) { st = s2; goto done; }
            st = jr_fail(JR_EIO, "step %lld: %d of %d prompts without an accepted label (%.0f%% > "
                                 "judge.max_unscored_frac=%g); stopped with a checkpoint at step %lld: fix the judge "
                                 "and resume with trainer.resume=true", (long long)(step + 1), B - kept, B,
                         100 * unscored, max_unscored, (long long)step);
            goto done;
        }
        double loss = 0;
        long n_tok = 0;
        double gnorm = 0, lr = jr_schedule_lr(&sch, step);
        if (kept > 0) {
            for (int b = 0; b < kept; b++)
                for (int t = 0; t < T; t++) {
                    ids[(size_t)b * T + t] = t < len[b] ? seq[(size_t)b * cap + t] : (d.tok.pad_id >= 0 ? d.tok.pad_id : 0);
                    int32_t x = tg[(size_t)b * cap + t];
                    lp[(size_t)b * T + t] = 0;
                    n_tok += x >= 0;
                }
            /* targets packed to (kept, T) */
            int32_t *tt = jr_malloc(sizeof(int32_t) * (size_t)kept * T);
            if (!tt) { st = JR_ENOMEM; goto done; }
            for (int b = 0; b < kept; b++)
                for (int t = 0; t < T; t++) tt[(size_t)b * T + t] = tg[(size_t)b * cap + t];
            jr_model_zero_grads(&d.m);
            double nll;
            long cnt;
            st = jr_model_nll(&d.m, &d.acts, ids, tt, kept, T, 1.0f / (float)n_tok, lp, &nll, &cnt);
            free(tt);
            if (st) goto done;
            loss = nll / (double)n_tok;
            if (d.use_lora) jr_lora_grads(&d.lora);
            gnorm = jr_clip_grad_norm(d.trained, jr_cfg_float(c, "trainer.max_grad_norm"));
            jr_adamw_step(&d.opt, d.trained, lr);
            if (d.use_lora) jr_lora_on(&d.lora);
        }
        ts.step = step + 1;
        ts.tokens += n_tok;
        if (step + 1 == res->first_step) res->first_loss = loss;
        res->last_loss = loss;
        res->last_step = ts.step;
        int last = ts.step == steps;
        jr_runlog_add(rl, "loss", loss);
        jr_runlog_add(rl, "kept", kept);
        jr_runlog_add(rl, "unscored_frac", unscored);
        jr_runlog_add(rl, "label_tokens", (double)n_tok);
        jr_runlog_add(rl, "grad_norm", gnorm);
        jr_runlog_add(rl, "lr", lr);
        jr_runlog_add(rl, "time/judge_wait", t_judge);
        jr_runlog_add(rl, "time/update", now_s() - t0 - t_judge);
        jr_runlog_add(rl, "judge/latency_max", lat);
        if ((st = jr_runlog_commit(rl, ts.step))) goto done;
        for (int i = 0; i < B; i++) {
            jr_reward_result_free(&results[i]);
            json_decref(rows[i]);
            rows[i] = NULL;
        }
        if (progress && !bar) bar = jr_progress_new("distill", steps, progress, JR_PROGRESS_AUTO);
        jr_progress_field(bar, "loss", "%.4f", loss);
        jr_progress_field(bar, "rejected", "%.2f", unscored);
        jr_progress_set(bar, ts.step);
        int stopping = stop && *stop;
        if (last || stopping || (save_every > 0 && ts.step % save_every == 0)) {
            st = jr_ckpt_save_with(out_dir, d.trained, &d.opt, &ts, keep,
                                  d.use_lora ? write_adapter : NULL, &d);
            if (st) goto done;
        }
        if (stopping && !last) {
            st = jr_fail(JR_ECANCELED, "stopped by a signal after step %lld; checkpoint written in %s/checkpoints "
                                       "(resume with trainer.resume=true)", (long long)ts.step, out_dir);
            goto done;
        }
    }
    if (ts.step == steps)
        st = jr_ckpt_save_final(out_dir, d.use_lora ? "adapter" : "model", &d.m, d.use_lora ? write_adapter : NULL, &d,
                                &d.tok);
done:
    jr_progress_finish(bar);
    if (rl) {
        jr_status st2 = jr_runlog_close(rl);
        if (!st) st = st2;
    }
    for (int i = 0; rows && i < B; i++) json_decref(rows[i]);
    for (int i = 0; results && i < B; i++) jr_reward_result_free(&results[i]);
    free(rows); free(results); free(seq); free(ids); free(tg); free(len); free(lp);
    free(ckpt);
    jr_acts_free(&d.acts);
    jr_reward_close(d.rw);
    jr_data_close(d.data);
    jr_adamw_free(&d.opt);
    if (d.use_lora) jr_lora_free(&d.lora);
    jr_model_free(&d.m);
    jr_tok_close(&d.tok);
    return st;
}
