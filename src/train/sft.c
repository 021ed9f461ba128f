/* sft.c - the training loop: SFT on {"prompt","completion"} rows with AdamW, schedules, accumulation, checkpoints */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "judgerl/checkpoint.h"
#include "judgerl/dataset.h"
#include "judgerl/dist.h"
#include "judgerl/fsutil.h"
#include "judgerl/model.h"
#include "judgerl/nn.h"
#include "judgerl/optim.h"
#include "judgerl/progress.h"
#include "judgerl/runlog.h"
#include "judgerl/tok.h"
#include "judgerl/train.h"

/* One tokenized micro-batch: ids/targets (B,T), right-padded. */
typedef struct {
    int B, T;
    int32_t *ids, *targets;
    long n_tok;
} batch;

typedef struct {
    jr_run run;
    jr_tok tok;
    jr_data *data;
    jr_acts acts;
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
        st = jr_model_nll(&s->run.m, &s->acts, seq, tg, 1, len - 1, 0.0f, s->lp, &part, &c);
        sum += part;
        cnt += c;
    }
    free(seq); free(tg); free(lm);
    if (!st && cnt) *out = sum / cnt;
    return st;
}

static jr_status sft_eval(void *ud, double *out) { return val_loss(ud, out); }

/* One optimizer step: accum micro-batches of the training stream, cross-entropy, AdamW. Data-parallel
 * (run.ranks > 1): every rank reads and tokenizes the whole global batch (the same stream, position and
 * token count as one process) and runs forward/backward on its own micro-batches only, rank r the
 * r-th contiguous share; jr_run_update sums the gradients across ranks in a fixed order. */
static jr_status sft_step(void *ud, jr_run *r, int64_t step, double *loss, int *boundary) {
    sft *s = ud;
    (void)boundary;
    double t0 = jr_now_s(), c0;
    long n_tok = 0;
    jr_status st;
    for (int i = 0; i < s->accum; i++) {
        if ((st = next_batch(s, &s->mb[i]))) return st;
        n_tok += s->mb[i].n_tok;
    }
    jr_run_zero_grads(r);
    double nll = 0;
    float scale = n_tok ? 1.0f / (float)n_tok : 0.0f;
    int lo = (int)((long)s->accum * r->rank / r->ranks), hi = (int)((long)s->accum * (r->rank + 1) / r->ranks);
    for (int i = lo; i < hi; i++) {
        double part;
        long cnt;
        st = jr_model_nll(&r->m, &s->acts, s->mb[i].ids, s->mb[i].targets, s->mb[i].B, s->mb[i].T, scale, s->lp, &part, &cnt);
        if (st) return st;
        nll += part;
    }
    jr_dist_traffic(NULL, NULL, &c0);
    if ((st = jr_dist_sum_f64(&nll, 1, "the loss"))) return st;
    *loss = n_tok ? nll / n_tok : NAN;
    double gnorm, c1;
    if ((st = jr_run_update(r, jr_schedule_lr(&r->sch, step), &gnorm))) return st;
    double dt = jr_now_s() - t0;
    jr_dist_traffic(NULL, NULL, &c1);
    r->ts.tokens += n_tok;
    r->ts.data = jr_data_tell(s->data);
    if (r->log_now) {
        jr_runlog_add(r->rl, "loss", *loss);
        jr_runlog_add(r->rl, "grad_norm", gnorm);
        jr_runlog_add(r->rl, "tokens", (double)n_tok);
        jr_runlog_add(r->rl, "tokens_per_s", dt > 0 ? n_tok / dt : 0);
        if (r->ranks > 1) jr_runlog_add(r->rl, "comm_frac", dt > 0 ? (c1 - c0) / dt : 0); /* rank 0's share in the sums */
    }
    return JR_OK;
}

/* Opens SFT's data and buffers over an opened run (model, tokenizer). */
static jr_status sft_open(sft *s, const jr_data_opts *dopt) {
    jr_run *r = &s->run;
    jr_status st;
    if (!dopt->train) return jr_fail(JR_EINVAL, "data.train must name a JSONL file of SFT rows");
    if ((st = jr_data_open(&s->data, dopt))) return st;
    if (r->resumed && (st = jr_data_seek(s->data, r->ts.data))) return st;
    s->B = r->to.batch_size;
    s->accum = r->to.grad_accum;
    s->max_len = r->to.max_seq_len;
    if (s->accum < 1 || s->max_len < 2)
        return jr_fail(JR_EINVAL, "trainer options: grad_accum=%d must be >= 1 and max_seq_len=%d >= 2", s->accum,
                       s->max_len);
    if (s->accum < r->ranks)
        return jr_fail(JR_EINVAL, "trainer.grad_accum=%d is below the %d ranks: each rank takes whole micro-batches "
                                  "of the global batch (batch_size x grad_accum rows), so set trainer.grad_accum to a "
                                  "multiple of the ranks", s->accum, r->ranks);
    if ((st = jr_run_start(r, jr_model_train_flops(&r->m, s->B, s->max_len) * s->accum, &s->tok))) return st;
    jr_acts_opts ao = {JR_LOGIT_ROWS_AUTO, 1, r->to.checkpoint_activations};
    if ((st = jr_acts_init_opts(&s->acts, &r->m, s->B, s->max_len, &ao))) return st;
    s->mb = jr_calloc((size_t)s->accum, sizeof *s->mb);
    s->lp = jr_malloc(sizeof(float) * (size_t)s->B * s->max_len);
    if (!s->mb || !s->lp) return JR_ENOMEM;
    for (int i = 0; i < s->accum; i++) {
        s->mb[i].ids = jr_malloc(sizeof(int32_t) * (size_t)s->B * s->max_len);
        s->mb[i].targets = jr_malloc(sizeof(int32_t) * (size_t)s->B * s->max_len);
        if (!s->mb[i].ids || !s->mb[i].targets) return JR_ENOMEM;
    }
    s->run.eval = (jr_run_eval){r->to.eval_every, 1, "val_loss", jr_data_n_val(s->data) ? sft_eval : NULL, s};
    return JR_OK;
}

static jr_status sft_close(sft *s, jr_status st) {
    if (s->mb)
        for (int i = 0; i < s->accum; i++) { free(s->mb[i].ids); free(s->mb[i].targets); }
    free(s->mb);
    free(s->lp);
    jr_acts_free(&s->acts);
    jr_data_close(s->data);
    st = jr_run_close(&s->run, st);
    jr_tok_close(&s->tok);
    return st;
}

static void on_bad_line(void *ud, const char *msg) {
    FILE *f = ud;
    if (f) fprintf(f, "warning: %s (skipped)\n", msg);
}

jr_status jr_sft_run(const jr_config *c, FILE *progress, volatile sig_atomic_t *stop, jr_train_result *res) {
    sft s;
    memset(&s, 0, sizeof s);
    jr_run_opts ro;
    jr_trainer_opts to;
    jr_lora_opts lo;
    jr_data_opts dopt;
    jr_run_opts_from_config(&ro, c);
    jr_trainer_opts_from_config(&to, c);
    jr_lora_opts_from_config(&lo, c);
    jr_data_opts_from_config(&dopt, c);
    dopt.on_bad = on_bad_line;
    dopt.ud = progress;
    jr_model_source src;
    jr_model_source_opts_from_config(&src, c);
    jr_status st = jr_tok_open(&s.tok, to.tokenizer);
    if (st) return jr_fail_ctx(st, "trainer.tokenizer");
    s.thinking = -1;
    if (json_object_get(c->root, "tokenizer")) { /* the command has the tokenizer.* table */
        s.thinking = jr_tok_cfg_thinking(c);
        if (s.tok.hf) st = jr_tok_apply_config(s.tok.hf, c);
    }
    if (!st && !dopt.train) st = jr_fail(JR_EINVAL, "%s: data.train must name a JSONL file of SFT rows", c->source);
    if (!st) st = jr_run_open(&s.run, &ro, &to, &lo, &src, 0x747261696eULL, progress, stop);
    if (!st) st = sft_open(&s, &dopt);
    if (!st) {
        jr_run_algo algo = {"train", sft_step, &s, "loss"};
        st = jr_run_loop(&s.run, &algo);
    }
    jr_run_result(&s.run, res);
    return sft_close(&s, st);
}
