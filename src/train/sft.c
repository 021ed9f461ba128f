/* sft.c - the training loop: SFT on {"prompt","completion"} rows with AdamW, schedules, accumulation, checkpoints */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "judgerl/checkpoint.h"
#include "judgerl/dataset.h"
#include "judgerl/fsutil.h"
#include "judgerl/model.h"
#include "judgerl/nn.h"
#include "judgerl/optim.h"
#include "judgerl/progress.h"
#include "judgerl/runlog.h"
#include "judgerl/tok.h"
#include "judgerl/train.h"

const jr_cfg_field jr_trainer_cfg[] = {
    {"trainer.algo", JR_CFG_ENUM, "sft", "training algorithm", "sft|grpo|rloo|distill", NULL, 0, 0},
    {"trainer.steps", JR_CFG_INT, "100", "optimizer steps to run in total", NULL, NULL, 1, 1e12},
    {"trainer.batch_size", JR_CFG_INT, "8", "rows per micro-batch", NULL, NULL, 1, 1e6},
    {"trainer.grad_accum", JR_CFG_INT, "1", "micro-batches accumulated per optimizer step", NULL, NULL, 1, 1e6},
    {"trainer.max_seq_len", JR_CFG_INT, "256", "tokens per row (prompt + completion); longer rows are cut", NULL, NULL,
     2, 1e7},
    {"trainer.tokenizer", JR_CFG_STRING, "byte", "tokenizer: byte (256 bytes + specials), a tokenizer.json file or a model directory holding one", NULL, NULL, 0, 0},
    {"trainer.lr", JR_CFG_FLOAT, "1e-3", "peak learning rate", NULL, NULL, 0, 10},
    {"trainer.lr_schedule", JR_CFG_ENUM, "cosine", "learning-rate schedule after warmup", "constant|linear|cosine",
     NULL, 0, 0},
    {"trainer.warmup_steps", JR_CFG_INT, "0", "linear warmup from 0 over this many steps", NULL, NULL, 0, 1e12},
    {"trainer.beta1", JR_CFG_FLOAT, "0.9", "AdamW beta1", NULL, NULL, 0, 0.999999},
    {"trainer.beta2", JR_CFG_FLOAT, "0.999", "AdamW beta2", NULL, NULL, 0, 0.999999999},
    {"trainer.eps", JR_CFG_FLOAT, "1e-8", "AdamW epsilon", NULL, NULL, 0, 1},
    {"trainer.weight_decay", JR_CFG_FLOAT, "0.0", "AdamW decoupled weight decay (never on norms and biases)", NULL,
     NULL, 0, 10},
    {"trainer.max_grad_norm", JR_CFG_FLOAT, "1.0", "clip gradients to this global L2 norm (0 = no clipping)", NULL,
     NULL, 0, 1e9},
    {"trainer.save_every", JR_CFG_INT, "0", "write a checkpoint every N steps (0 = only at the end)", NULL, NULL, 0,
     1e12},
    {"trainer.keep_checkpoints", JR_CFG_INT, "2", "keep the newest N checkpoints (0 = all)", NULL, NULL, 0, 1e6},
    {"trainer.resume", JR_CFG_BOOL, "false", "continue from run.out_dir's latest checkpoint when there is one", NULL,
     NULL, 0, 0},
    {"trainer.eval_every", JR_CFG_INT, "0", "validation loss every N steps and at the end (0 = only at the end)", NULL,
     NULL, 0, 1e12},
    {"trainer.log_every", JR_CFG_INT, "1", "metrics row every N steps", NULL, NULL, 1, 1e12},
    {"trainer.threads", JR_CFG_INT, "0",
     "threads for the engine (0 = auto: 1 when a step is under 2 GFLOP, where thread barriers cost more than "
     "they save; else OMP_NUM_THREADS or all cores)", NULL, NULL, 0, 4096},
    {"trainer.tensorboard", JR_CFG_BOOL, "true", "also write a TensorBoard event file in run.out_dir", NULL, NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

/* One tokenized micro-batch: ids/targets (B,T), right-padded. */
typedef struct {
    int B, T;
    int32_t *ids, *targets;
    long n_tok;
} batch;

typedef struct {
    const jr_config *c;
    jr_tok tok;
    jr_data *data;
    jr_model m;
    jr_acts acts;
    jr_adamw opt;
    int B, accum, max_len;
    int thinking;       /* tokenizer.enable_thinking for chat rows: -1, 0, 1 */
    batch *mb;          /* accum micro-batches */
    float *lp;
} sft;

/* Tokenizes a {"messages": [...]} row with the chat template: loss on the assistant spans. */
static jr_status chat_tokens(sft *s, json_t *msgs, const jr_data_row_info *info, int32_t *seq, uint8_t *lm, int *len) {
    size_t n = json_array_size(msgs);
    jr_chat_msg *m = calloc(n ? n : 1, sizeof *m);
    if (!m) return JR_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(msgs, i), *r = json_object_get(e, "role"), *c = json_object_get(e, "content");
        if (!json_is_string(r) || !(json_is_string(c) || json_is_null(c))) {
            free(m);
            return jr_fail(JR_EINVAL, "%s:%lld: messages[%zu] needs a string \"role\" and a string \"content\"",
                           info->path, (long long)info->line_no, i);
        }
        m[i].role = json_string_value(r);
        m[i].content = json_string_value(c);
    }
    int32_t *ids = NULL;
    uint8_t *loss = NULL;
    size_t ni = 0;
    jr_status st = jr_tok_encode_chat(&s->tok, m, n, s->thinking, &ids, &loss, &ni);
    free(m);
    if (st) return jr_fail_ctx(st, "%s:%lld", info->path, (long long)info->line_no);
    int k = 0;
    for (size_t i = 0; i < ni && k < s->max_len + 1; i++, k++) { seq[k] = ids[i]; lm[k] = loss[i]; }
    free(ids);
    free(loss);
    *len = k;
    return JR_OK;
}

/* Tokenizes one row into seq (max_len + 1 tokens at most) and lm (1: the token is a loss target):
 * {"prompt","completion"} rows are [bos] prompt completion [eos] with the loss on completion [eos];
 * {"messages": [...]} rows are rendered with the chat template (chat_tokens). */
static jr_status row_tokens(sft *s, json_t *row, const jr_data_row_info *info, int32_t *seq, uint8_t *lm, int *len) {
    json_t *msgs = json_object_get(row, "messages");
    if (json_is_array(msgs)) return chat_tokens(s, msgs, info, seq, lm, len);
    const char *f[2] = {"prompt", "completion"};
    int n = 0, cap = s->max_len + 1;
    if (s->tok.bos_id >= 0) { lm[n] = 0; seq[n++] = s->tok.bos_id; }
    for (int k = 0; k < 2; k++) {
        json_t *v = json_object_get(row, f[k]);
        if (!json_is_string(v))
            return jr_fail(JR_EINVAL, "%s:%lld: row has no string field \"%s\" (SFT rows are {\"prompt\": ..., "
                                      "\"completion\": ...} or {\"messages\": [...]})", info->path, (long long)info->line_no, f[k]);
        int32_t *ids;
        size_t ni;
        jr_status st = s->tok.encode(s->tok.ctx, json_string_value(v), json_string_length(v), &ids, &ni);
        if (st) return jr_fail_ctx(st, "%s:%lld", info->path, (long long)info->line_no);
        for (size_t i = 0; i < ni && n < cap; i++) { lm[n] = (uint8_t)k; seq[n++] = ids[i]; }
        free(ids);
    }
    if (s->tok.eos_id >= 0 && n < cap) { lm[n] = 1; seq[n++] = s->tok.eos_id; }
    *len = n;
    return JR_OK;
}

/* Fills micro-batch b with the next B rows of the training stream. */
static jr_status next_batch(sft *s, batch *b) {
    int cap = s->max_len + 1;
    int32_t *seq = jr_malloc(sizeof(int32_t) * (size_t)cap * s->B);
    uint8_t *lm = jr_malloc((size_t)cap * s->B);
    int *len = jr_malloc(sizeof(int) * s->B);
    jr_status st = seq && len && lm ? JR_OK : JR_ENOMEM;
    int T = 1;
    for (int r = 0; r < s->B && !st; r++) {
        json_t *row = NULL;
        jr_data_row_info info;
        if ((st = jr_data_next(s->data, &row, &info))) break;
        st = row_tokens(s, row, &info, seq + (size_t)r * cap, lm + (size_t)r * cap, &len[r]);
        json_decref(row);
        if (!st && len[r] - 1 > T) T = len[r] - 1;
    }
    if (!st) {
        b->B = s->B; b->T = T; b->n_tok = 0;
        int32_t pad = s->tok.pad_id >= 0 ? s->tok.pad_id : 0;
        for (int r = 0; r < s->B; r++)
            for (int t = 0; t < T; t++) {
                const int32_t *q = seq + (size_t)r * cap;
                int32_t id = t < len[r] ? q[t] : pad, tg = -1;
                if (t + 1 < len[r] && lm[(size_t)r * cap + t + 1]) tg = q[t + 1];
                b->ids[r * T + t] = id;
                b->targets[r * T + t] = tg;
                b->n_tok += tg >= 0;
            }
    }
    free(seq); free(len); free(lm);
    return st;
}

/* Mean NLL over the validation rows (NAN when there are none). */
static jr_status val_loss(sft *s, double *out) {
    size_t nv = jr_data_n_val(s->data);
    *out = NAN;
    if (!nv) return JR_OK;
    int cap = s->max_len + 1;
    int32_t *seq = jr_malloc(sizeof(int32_t) * (size_t)cap), *tg = jr_malloc(sizeof(int32_t) * (size_t)cap);
    uint8_t *lm = jr_malloc((size_t)cap);
    jr_status st = seq && tg && lm ? JR_OK : JR_ENOMEM;
    double sum = 0;
    long cnt = 0;
    for (size_t i = 0; i < nv && !st; i++) {
        json_t *row = NULL;
        jr_data_row_info info;
        int len;
        if ((st = jr_data_val_get(s->data, i, &row, &info))) break;
        st = row_tokens(s, row, &info, seq, lm, &len);
        json_decref(row);
        if (st || len < 2) continue;
        for (int t = 0; t < len - 1; t++) tg[t] = lm[t + 1] ? seq[t + 1] : -1;
        double part;
        long c;
        st = jr_model_nll(&s->m, &s->acts, seq, tg, 1, len - 1, 0.0f, s->lp, &part, &c);
        sum += part;
        cnt += c;
    }
    free(seq); free(tg); free(lm);
    if (!st && cnt) *out = sum / cnt;
    return st;
}

static void sft_free(sft *s) {
    if (s->mb)
        for (int i = 0; i < s->accum; i++) { free(s->mb[i].ids); free(s->mb[i].targets); }
    free(s->mb);
    free(s->lp);
    jr_adamw_free(&s->opt);
    jr_acts_free(&s->acts);
    jr_model_free(&s->m);
    jr_data_close(s->data);
    jr_tok_close(&s->tok);
}

static void on_bad_line(void *ud, const char *msg) {
    FILE *f = ud;
    if (f) fprintf(f, "warning: %s (skipped)\n", msg);
}

jr_status jr_train_run(const jr_config *c, FILE *progress, volatile sig_atomic_t *stop, jr_train_result *res) {
    memset(res, 0, sizeof *res);
    res->last_val_loss = NAN;
    const char *algo = jr_cfg_str(c, "trainer.algo");
    if (!strcmp(algo, "grpo") || !strcmp(algo, "rloo")) return jr_grpo_run(c, progress, stop, res);
    if (!strcmp(algo, "distill")) return jr_distill_run(c, progress, stop, res);
    if (strcmp(algo, "sft"))
        return jr_fail(JR_EUNSUPPORTED, "%s: trainer.algo=%s is not implemented yet (available: sft, grpo, rloo, distill)", c->source, algo);
    sft s;
    memset(&s, 0, sizeof s);
    s.c = c;
    s.B = (int)jr_cfg_int(c, "trainer.batch_size");
    s.accum = (int)jr_cfg_int(c, "trainer.grad_accum");
    s.max_len = (int)jr_cfg_int(c, "trainer.max_seq_len");
    const char *out_dir = jr_cfg_str(c, "run.out_dir");
    int64_t steps = jr_cfg_int(c, "trainer.steps"), save_every = jr_cfg_int(c, "trainer.save_every");
    int64_t eval_every = jr_cfg_int(c, "trainer.eval_every"), log_every = jr_cfg_int(c, "trainer.log_every");
    int keep = (int)jr_cfg_int(c, "trainer.keep_checkpoints");
    double b1 = jr_cfg_float(c, "trainer.beta1"), b2 = jr_cfg_float(c, "trainer.beta2");
    double eps = jr_cfg_float(c, "trainer.eps"), wd = jr_cfg_float(c, "trainer.weight_decay");
    double max_norm = jr_cfg_float(c, "trainer.max_grad_norm");
    jr_schedule sch = {jr_sched_parse(jr_cfg_str(c, "trainer.lr_schedule")), jr_cfg_float(c, "trainer.lr"),
                       jr_cfg_int(c, "trainer.warmup_steps"), steps};
    jr_train_state ts;
    memset(&ts, 0, sizeof ts);
    jr_rng_seed2(&ts.rng, (uint64_t)jr_cfg_int(c, "run.seed"), 0x747261696eULL);
    jr_runlog *rl = NULL;
    jr_progress *bar = NULL;
    char *ckpt = NULL;
    jr_status st;

    if (!out_dir) return jr_fail(JR_EINVAL, "%s: run.out_dir must be set", c->source);
    if ((st = jr_tok_open(&s.tok, jr_cfg_str(c, "trainer.tokenizer")))) return jr_fail_ctx(st, "trainer.tokenizer");
    s.thinking = -1;
    if (json_object_get(c->root, "tokenizer")) { /* the command has the tokenizer.* table */
        s.thinking = jr_tok_cfg_thinking(c);
        if (s.tok.hf && (st = jr_tok_apply_config(s.tok.hf, c))) goto done;
    }
    jr_data_opts dopt;
    jr_data_opts_from_config(&dopt, c);
    dopt.on_bad = on_bad_line;
    dopt.ud = progress;
    if (!dopt.train) { st = jr_fail(JR_EINVAL, "%s: data.train must name a JSONL file of SFT rows", c->source); goto done; }
    if ((st = jr_data_open(&s.data, &dopt))) goto done;

    /* the model: the latest checkpoint when resuming, else model.path / model.init */
    if (jr_cfg_bool(c, "trainer.resume") && (st = jr_ckpt_latest(out_dir, &ckpt))) goto done;
    if (ckpt) {
        if ((st = jr_ckpt_load(ckpt, &s.m, &s.opt, &ts, b1, b2, eps, wd))) goto done;
        s.m.compute = jr_model_compute_from_config(c); /* a checkpoint keeps weights, not the compute type */
        if ((st = jr_data_seek(s.data, ts.data))) goto done;
        res->resumed = 1;
    } else {
        if ((st = jr_model_from_config(&s.m, c))) goto done;
        if ((st = jr_adamw_init(&s.opt, &s.m, b1, b2, eps, wd))) goto done;
    }
    if (s.m.cfg.vocab_size < s.tok.n_vocab) {
        st = jr_fail(JR_EINVAL, "model vocab_size=%d is smaller than the %s tokenizer's %d ids", s.m.cfg.vocab_size,
                     s.tok.kind, s.tok.n_vocab);
        goto done;
    }
    int threads = (int)jr_cfg_int(c, "trainer.threads");
    if (threads > 0) jr_nn_set_threads(threads);
    else if (jr_model_train_flops(&s.m, s.B, s.max_len) * s.accum < 2e9) jr_nn_set_threads(1);
    if ((st = jr_model_alloc_grads(&s.m))) goto done;
    if ((st = jr_acts_init_opts(&s.acts, &s.m, s.B, s.max_len, &(jr_acts_opts){JR_LOGIT_ROWS_AUTO, 1}))) goto done;
    s.mb = jr_calloc((size_t)s.accum, sizeof *s.mb);
    s.lp = jr_malloc(sizeof(float) * (size_t)s.B * s.max_len);
    if (!s.mb || !s.lp) { st = JR_ENOMEM; goto done; }
    for (int i = 0; i < s.accum; i++) {
        s.mb[i].ids = jr_malloc(sizeof(int32_t) * (size_t)s.B * s.max_len);
        s.mb[i].targets = jr_malloc(sizeof(int32_t) * (size_t)s.B * s.max_len);
        if (!s.mb[i].ids || !s.mb[i].targets) { st = JR_ENOMEM; goto done; }
    }
    if ((st = jr_runlog_open(&rl, out_dir, res->resumed ? ts.step : -1, jr_cfg_bool(c, "trainer.tensorboard"))))
        goto done;
    res->first_step = ts.step + 1;

    struct timespec t0, t1;
    for (int64_t step = ts.step; step < steps; step++) {
        clock_gettime(CLOCK_MONOTONIC, &t0);
        long n_tok = 0;
        for (int i = 0; i < s.accum; i++) {
            if ((st = next_batch(&s, &s.mb[i]))) goto done;
            n_tok += s.mb[i].n_tok;
        }
        jr_model_zero_grads(&s.m);
        double nll = 0;
        float scale = n_tok ? 1.0f / (float)n_tok : 0.0f;
        for (int i = 0; i < s.accum; i++) {
            double part;
            long cnt;
            st = jr_model_nll(&s.m, &s.acts, s.mb[i].ids, s.mb[i].targets, s.mb[i].B, s.mb[i].T, scale, s.lp, &part, &cnt);
            if (st) goto done;
            nll += part;
        }
        double loss = n_tok ? nll / n_tok : NAN;
        double gnorm = jr_clip_grad_norm(&s.m, max_norm);
        double lr = jr_schedule_lr(&sch, step);
        jr_adamw_step(&s.opt, &s.m, lr);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double dt = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        ts.step = step + 1;
        ts.tokens += n_tok;
        ts.data = jr_data_tell(s.data);
        if (step + 1 == res->first_step) res->first_loss = loss;
        res->last_loss = loss;
        res->last_step = ts.step;

        int last = ts.step == steps;
        double vl = NAN;
        if (jr_data_n_val(s.data) && (last || (eval_every > 0 && ts.step % eval_every == 0))) {
            if ((st = val_loss(&s, &vl))) goto done;
            res->last_val_loss = vl;
        }
        if (ts.step % log_every == 0 || last || !isnan(vl)) {
            jr_runlog_add(rl, "loss", loss);
            jr_runlog_add(rl, "lr", lr);
            jr_runlog_add(rl, "grad_norm", gnorm);
            jr_runlog_add(rl, "tokens", (double)n_tok);
            jr_runlog_add(rl, "tokens_per_s", dt > 0 ? n_tok / dt : 0);
            if (!isnan(vl)) jr_runlog_add(rl, "val_loss", vl);
            if ((st = jr_runlog_commit(rl, ts.step))) goto done;
        }
        /* the bar starts after the first step, so a bad first batch prints its error line alone */
        if (progress && !bar) bar = jr_progress_new("train", steps, progress, JR_PROGRESS_AUTO);
        jr_progress_field(bar, "loss", "%.4f", loss);
        jr_progress_set(bar, ts.step);
        int stopping = stop && *stop;
        if (last || stopping || (save_every > 0 && ts.step % save_every == 0))
            if ((st = jr_ckpt_save(out_dir, &s.m, &s.opt, &ts, keep))) goto done;
        if (stopping && !last) {
            st = jr_fail(JR_ECANCELED, "stopped by a signal after step %lld; checkpoint written in %s/checkpoints "
                                       "(continue with trainer.resume=true)", (long long)ts.step, out_dir);
            goto done;
        }
    }
    /* the final model as a plain HF directory: written beside, then renamed over run.out_dir/model */
    if (res->last_step == steps || ts.step == steps) st = jr_ckpt_save_final(out_dir, "model", &s.m, NULL, NULL, &s.tok);
done:
    jr_progress_finish(bar);
    if (rl) {
        jr_status st2 = jr_runlog_close(rl);
        if (!st) st = st2;
    }
    free(ckpt);
    sft_free(&s);
    return st;
}
