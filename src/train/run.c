/* run.c - the run harness (run.h): typed run / trainer / LoRA options, resume, model + LoRA + AdamW, threads,
 * run log, progress, checkpoint cadence, stop signals, the evaluation hook */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "judgerl/clock.h"
#include "judgerl/cpu.h"
#include "judgerl/dataset.h"
#include "judgerl/dist.h"
#include "judgerl/fsutil.h"
#include "judgerl/nn.h"
#include "judgerl/run.h"
#include "judgerl/train.h"

const jr_cfg_field jr_trainer_cfg[] = {
    {"trainer.algo", JR_CFG_ENUM, "sft", "training algorithm", "sft|grpo|rloo|distill", NULL, 0, 0},
    {"trainer.steps", JR_CFG_INT, "100", "optimizer steps to run in total", NULL, NULL, 1, 1e12},
    {"trainer.batch_size", JR_CFG_INT, "8", "rows per micro-batch", NULL, NULL, 1, 1e6},
    {"trainer.grad_accum", JR_CFG_INT, "1", "micro-batches accumulated per optimizer step", NULL, NULL, 1, 1e6},
    {"trainer.max_seq_len", JR_CFG_INT, "256", "tokens per row (prompt + completion); longer rows are cut", NULL, NULL,
     2, 1e7},
    {"trainer.tokenizer", JR_CFG_STRING, "null",
     "tokenizer: byte (256 bytes + specials), a tokenizer.json file or a model directory holding one; unset: "
     "model.path's tokenizer.json when it has one, else byte", NULL, NULL, 0, 0},
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
    {"trainer.eval_every", JR_CFG_INT, "0",
     "evaluate every N steps (SFT: validation loss, also at the end; GRPO/RLOO: mean reward on the validation "
     "prompts; 0 = SFT only at the end, GRPO never)", NULL, NULL, 0, 1e12},
    {"trainer.eval_at_start", JR_CFG_BOOL, "false",
     "also evaluate before the first step of a fresh run (a metrics row of step 0: the policy before training); "
     "needs an evaluation (held-out rows: data.validation or data.validation_frac; else the run fails at its start); monitor.enabled turns it on (its baseline)", NULL, NULL, 0, 0},
    {"trainer.log_every", JR_CFG_INT, "1", "metrics row every N steps", NULL, NULL, 1, 1e12},
    {"trainer.threads", JR_CFG_INT, "0",
     "threads for the engine (0 = auto: 1 when a step is under 2 GFLOP, where thread barriers cost more than "
     "they save; else OMP_NUM_THREADS or all cores)", NULL, NULL, 0, 4096},
    {"trainer.tensorboard", JR_CFG_BOOL, "true", "also write a TensorBoard event file in run.out_dir", NULL, NULL, 0, 0},
    {"trainer.checkpoint_activations", JR_CFG_BOOL, "false",
     "keep only each layer's input for the backward and recompute the layer there (the same gradients; about one "
     "more forward's matmuls per step for a fraction of the activation memory)", NULL, NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

/* ---- options ---- */

void jr_run_opts_from_config(jr_run_opts *o, const jr_config *c) {
    o->seed = (uint64_t)jr_cfg_int(c, "run.seed");
    o->out_dir = jr_cfg_str(c, "run.out_dir");
    o->overwrite = jr_cfg_has(c, "run.overwrite") && jr_cfg_bool(c, "run.overwrite");
}

/* A previous run's own files (what overwrite removes). */
static int run_file(const char *name) {
    static const char *const own[] = {"checkpoints", "model", "adapter", "metrics.jsonl", "samples.jsonl",
                                      "unscored.json", "report.html", "config.yaml", NULL};
    for (int i = 0; own[i]; i++)
        if (!strcmp(name, own[i])) return 1;
    /* the workflow trainer's experience buffer (and SQLite's -wal / -shm / -journal beside it) */
    return !strncmp(name, "events.out.tfevents.", 20) || !strncmp(name, "buffer.sqlite", 13);
}

jr_status jr_run_dir_prepare(const jr_run_opts *o, int resume, int dry) {
    if (!o->out_dir) return jr_fail(JR_EINVAL, "run.out_dir must be set");
    DIR *d = opendir(o->out_dir);
    if (!d) return JR_OK; /* absent (created later) or not a directory (the first write says so) */
    char seen[160] = "";
    size_t n = 0;
    struct dirent *e;
    jr_status st = JR_OK;
    while (!st && (e = readdir(d))) {
        const char *nm = e->d_name;
        /* not a run's work: the judge cache, and the config a start that then failed left (rewritten) */
        if (!strcmp(nm, ".") || !strcmp(nm, "..") || !strncmp(nm, "judge_cache.sqlite", 18) || !strncmp(nm, "config.yaml", 11))
            continue;
        if (n++ < 4 && strlen(seen) + strlen(nm) + 3 < sizeof seen)
            snprintf(seen + strlen(seen), sizeof seen - strlen(seen), "%s%.60s", *seen ? ", " : "", nm);
        if (o->overwrite && !resume && !dry && run_file(nm)) {
            char *p = jr_path_join(o->out_dir, nm);
            if (!p) st = JR_ENOMEM;
            else if (!st) st = jr_rmtree(p);
            free(p);
        }
    }
    closedir(d);
    if (st || !n || resume || o->overwrite) return st;
    return jr_fail(JR_EINVAL, "run.out_dir=%s is not empty (it holds %s%s): continue that run with "
                   "trainer.resume=true, replace it with run.overwrite=true, or choose another run.out_dir",
                   o->out_dir, seen, n > 4 ? ", ..." : "");
}

/* trainer.tokenizer unset: the model directory's tokenizer.json when it has one, else bytes. */
static void resolve_tokenizer(jr_trainer_opts *o, const char *spec, const char *model_dir) {
    char *tj = model_dir ? jr_path_join(model_dir, "tokenizer.json") : NULL;
    int has = tj && jr_path_exists(tj);
    o->tokenizer = spec;
    o->tokenizer_loud = 0;
    if (!spec && has) {
        o->tokenizer = model_dir;
        o->tokenizer_shown = 1;
        snprintf(o->tokenizer_note, sizeof o->tokenizer_note,
                 "tokenizer: %s (the model directory's; trainer.tokenizer is unset)", tj);
    } else if (!spec) {
        o->tokenizer = "byte";
        o->tokenizer_shown = model_dir != NULL;
        snprintf(o->tokenizer_note, sizeof o->tokenizer_note,
                 "tokenizer: byte (trainer.tokenizer is unset and %s)",
                 model_dir ? "model.path holds no tokenizer.json" : "the model is a fresh model.init");
    } else if (!strcmp(spec, "byte") && has) {
        o->tokenizer_loud = 1;
        snprintf(o->tokenizer_note, sizeof o->tokenizer_note,
                 "WARNING: trainer.tokenizer=byte although %s exists: the model is trained on raw bytes, not on "
                 "its own tokenizer (unset trainer.tokenizer to use it)", tj);
    } else {
        snprintf(o->tokenizer_note, sizeof o->tokenizer_note, "tokenizer: %s (trainer.tokenizer)", spec);
    }
    free(tj);
}

void jr_trainer_opts_from_config(jr_trainer_opts *o, const jr_config *c) {
    memset(o, 0, sizeof *o);
    o->algo = jr_cfg_str(c, "trainer.algo");
    o->steps = jr_cfg_int(c, "trainer.steps");
    o->batch_size = (int)jr_cfg_int(c, "trainer.batch_size");
    o->grad_accum = (int)jr_cfg_int(c, "trainer.grad_accum");
    o->max_seq_len = (int)jr_cfg_int(c, "trainer.max_seq_len");
    resolve_tokenizer(o, jr_cfg_str(c, "trainer.tokenizer"), jr_cfg_str(c, "model.path"));
    o->lr = jr_cfg_float(c, "trainer.lr");
    o->lr_schedule = (jr_sched_kind)jr_sched_parse(jr_cfg_str(c, "trainer.lr_schedule"));
    o->warmup_steps = jr_cfg_int(c, "trainer.warmup_steps");
    o->beta1 = jr_cfg_float(c, "trainer.beta1");
    o->beta2 = jr_cfg_float(c, "trainer.beta2");
    o->eps = jr_cfg_float(c, "trainer.eps");
    o->weight_decay = jr_cfg_float(c, "trainer.weight_decay");
    o->max_grad_norm = jr_cfg_float(c, "trainer.max_grad_norm");
    o->save_every = jr_cfg_int(c, "trainer.save_every");
    o->keep_checkpoints = (int)jr_cfg_int(c, "trainer.keep_checkpoints");
    o->resume = jr_cfg_bool(c, "trainer.resume");
    o->eval_every = jr_cfg_int(c, "trainer.eval_every");
    o->eval_at_start = jr_cfg_bool(c, "trainer.eval_at_start");
    o->log_every = jr_cfg_int(c, "trainer.log_every");
    o->threads = (int)jr_cfg_int(c, "trainer.threads");
    o->tensorboard = jr_cfg_bool(c, "trainer.tensorboard");
    o->checkpoint_activations = jr_cfg_bool(c, "trainer.checkpoint_activations");
}

void jr_lora_opts_from_config(jr_lora_opts *o, const jr_config *c) {
    o->enabled = jr_cfg_bool(c, "lora.enabled");
    o->rank = (int)jr_cfg_int(c, "lora.rank");
    o->alpha = jr_cfg_float(c, "lora.alpha");
    o->dropout = jr_cfg_float(c, "lora.dropout");
    o->target_modules = jr_cfg_str(c, "lora.target_modules");
}

static jr_status load_from_config(void *ud, jr_model *m) { return jr_model_from_config(m, ud); }

void jr_model_source_opts_from_config(jr_model_source *s, const jr_config *c) {
    *s = (jr_model_source){load_from_config, (void *)c, jr_cfg_str(c, "model.path"),
                           jr_model_compute_resolve(jr_cfg_str(c, "model.compute"))};
}

/* ---- the harness ---- */

/* A checkpoint's (or the final adapter's) model files: the weights or the PEFT adapter, plus the
 * tokenizer files, so every checkpoint directory is a complete model directory. */
static jr_status write_model(void *ud, const char *dir) {
    jr_run *r = ud;
    jr_status st = r->use_lora ? jr_lora_save_peft(&r->lora, dir, r->src.name, r->lo.dropout)
                               : jr_model_save(&r->m, dir, NULL);
    if (!st && r->tok) st = jr_textcodec_copy_files(r->tok, dir);
    return st;
}

/* The model, adapters and moments: from the latest checkpoint when resuming, else from src. */
static jr_status load_state(jr_run *r, const char *ckpt, unsigned targets) {
    const jr_trainer_opts *t = &r->to;
    jr_status st;
    if (ckpt && !r->use_lora) {
        st = jr_ckpt_load(ckpt, &r->m, &r->opt, &r->ts, t->beta1, t->beta2, t->eps, t->weight_decay);
        r->m.compute = r->src.compute;
    } else {
        st = r->src.load(r->src.ud, &r->m);
    }
    if (st) return st;
    r->trained = &r->m;
    if (r->use_lora) {
        if ((st = jr_lora_init(&r->lora, &r->m, r->lo.rank, r->lo.alpha, targets, r->ro.seed)) ||
            (st = jr_lora_direct(&r->lora, 1)))
            return st;
        r->trained = &r->lora.ad;
        if (ckpt && ((st = jr_lora_load_peft(&r->lora, ckpt)) ||
                     (st = jr_ckpt_load_state(ckpt, r->trained, &r->opt, &r->ts, t->beta1, t->beta2, t->eps,
                                              t->weight_decay))))
            return st;
    }
    if (!ckpt) st = jr_adamw_init(&r->opt, r->trained, t->beta1, t->beta2, t->eps, t->weight_decay);
    r->resumed = ckpt != NULL;
    return st;
}

/* Typed options built in C skip the config's range checks: the ones a zeroed field would get wrong. */
static jr_status check_trainer_opts(const jr_trainer_opts *t) {
    if (t->steps < 1 || t->batch_size < 1 || t->log_every < 1)
        return jr_fail(JR_EINVAL, "trainer options: steps=%lld, batch_size=%d and log_every=%lld must be >= 1",
                       (long long)t->steps, t->batch_size, (long long)t->log_every);
    if (!(t->beta1 >= 0 && t->beta1 < 1 && t->beta2 > 0 && t->beta2 < 1 && t->eps > 0 && t->lr >= 0))
        return jr_fail(JR_EINVAL, "trainer options: AdamW needs 0 <= beta1 < 1, 0 < beta2 < 1, eps > 0, lr >= 0 "
                                  "(got %g, %g, %g, %g)", t->beta1, t->beta2, t->eps, t->lr);
    if (!t->tokenizer) return jr_fail(JR_EINVAL, "trainer options: tokenizer is not set (\"byte\" or a tokenizer.json)");
    return JR_OK;
}

jr_status jr_run_open(jr_run *r, const jr_run_opts *ro, const jr_trainer_opts *to, const jr_lora_opts *lo,
                      const jr_model_source *src, uint64_t rng_tag, FILE *progress, volatile sig_atomic_t *stop) {
    memset(r, 0, sizeof *r);
    r->ro = *ro;
    r->to = *to;
    if (lo) r->lo = *lo;
    r->src = *src;
    r->rank = jr_dist_rank();
    r->ranks = jr_dist_size();
    r->progress = r->rank ? NULL : progress; /* rank 0 alone shows progress */
    r->stop = stop;
    r->last_eval = NAN;
    if (!(r->why = jr_reason_tally_new())) return JR_ENOMEM;
    r->use_lora = r->lo.enabled;
    r->sch = (jr_schedule){to->lr_schedule, to->lr, to->warmup_steps, to->steps};
    jr_rng_seed2(&r->ts.rng, ro->seed, rng_tag);
    if (!ro->out_dir) return jr_fail(JR_EINVAL, "run.out_dir must be set");
    jr_status st = check_trainer_opts(to);
    if (st) return st;
    if (!src || !src->load) return jr_fail(JR_EINVAL, "no model source: the policy's load function is not set");
    unsigned targets = 0;
    if (r->use_lora && r->lo.dropout != 0)
        return jr_fail(JR_EUNSUPPORTED, "lora.dropout=%g: only 0 is supported (adapters are merged into the "
                                        "effective weights)", r->lo.dropout);
    if (r->use_lora && jr_lora_parse_targets(r->lo.target_modules, &targets))
        return jr_fail_ctx(JR_EINVAL, "lora.target_modules");
    char *ckpt = NULL;
    st = to->resume ? jr_ckpt_latest(ro->out_dir, &ckpt) : JR_OK;
    if (!st) st = load_state(r, ckpt, targets);
    free(ckpt);
    return st;
}

jr_status jr_run_start(jr_run *r, double step_flops, const jr_textcodec *tok) {
    r->tok = tok;
    if (tok && r->m.cfg.vocab_size < tok->n_vocab)
        return jr_fail(JR_EINVAL, "model vocab_size=%d is smaller than the %s tokenizer's %d ids", r->m.cfg.vocab_size,
                       tok->kind, tok->n_vocab);
    if (r->to.threads > 0) jr_nn_set_threads(r->to.threads);
    else if (step_flops < 2e9) jr_nn_set_threads(1);
    jr_status st = jr_model_alloc_grads(&r->m);
    /* rank 0 alone writes metrics, TensorBoard and checkpoints: the other ranks keep no log. A resume
     * cuts the logs back to the checkpoint's step; a run killed before its first checkpoint starts
     * again from the beginning, so its logs do too (its step-0 evaluation is written again) */
    if (!st && !r->rank) st = jr_runlog_open(&r->rl, r->ro.out_dir, r->resumed ? r->ts.step : -1, r->to.tensorboard);
    if (st) return st;
    if (r->progress && r->to.tokenizer_loud) fprintf(r->progress, "%s\n", r->to.tokenizer_note);
    const char *lvl = jr_cpu_level_name(jr_cpu_level_get());
    if (r->progress && r->resumed && r->ts.kernel_level[0] && strcmp(r->ts.kernel_level, lvl))
        fprintf(r->progress, "resume: the checkpoint was written at kernel level %s, this run is at %s: it continues, "
                "but matches an uninterrupted run bitwise only within one level (JR_CPU=%s to stay on it)\n",
                r->ts.kernel_level, lvl, r->ts.kernel_level);
    r->first_step = r->ts.step + 1;
    return JR_OK;
}

jr_status jr_run_checkpoint(jr_run *r, const jr_train_state *s) {
    if (r->rank) return JR_OK;
    return jr_ckpt_save_with(r->ro.out_dir, r->trained, &r->opt, s, r->to.keep_checkpoints, write_model, r);
}

void jr_run_zero_grads(jr_run *r) {
    jr_model_zero_grads(r->trained);
    if (r->trained != &r->m) jr_model_zero_grads(&r->m);
}

jr_status jr_run_update(jr_run *r, double lr, double *gnorm) {
    if (r->use_lora) jr_lora_grads(&r->lora);
    /* data-parallel: the ranks' gradients summed in a fixed order, the same bits on every rank, so every
     * rank takes the same AdamW step and holds the same weights */
    jr_status st = jr_dist_sum_f32(r->trained->grads, r->trained->n_params, "the gradients");
    if (st) return st;
    double gn = jr_clip_grad_norm(r->trained, r->to.max_grad_norm);
    jr_adamw_step(&r->opt, r->trained, lr);
    if (r->use_lora) jr_lora_on(&r->lora);
    if (gnorm) *gnorm = gn;
    return JR_OK;
}

jr_status jr_run_stop_unscored(jr_run *r, const jr_train_state *prev, int64_t step, int bad, int total,
                               const char *what, double limit) {
    double frac = total ? (double)bad / total : 0;
    jr_runlog_add(r->rl, "unscored_frac", frac);
    jr_runlog_commit(r->rl, step + 1);
    jr_status st = jr_run_checkpoint(r, prev);
    if (st) return st;
    json_t *o = r->rank ? NULL : jr_reason_tally_json(r->why); /* the reasons, kept for after the run (rank 0) */
    char *text = o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL, *path = jr_path_join(r->ro.out_dir, "unscored.json");
    if (text && path) jr_write_atomic(path, text, strlen(text));
    json_decref(o);
    free(text);
    free(path);
    /* every rank reached the same decision: they wait here for rank 0's files, since the error they return
     * ends the job (MPI_Abort) */
    double sync = 0;
    if ((st = jr_dist_sum_f64(&sync, 1, "the stop"))) return st;
    return jr_fail(JR_EIO, "step %lld: %d of %d %s (%.0f%% > judge.max_unscored_frac=%g; %.1500s); stopped with a "
                           "checkpoint at step %lld: fix the judge and resume with trainer.resume=true", (long long)(step + 1),
                   bad, total, what, 100 * frac, limit, jr_reason_tally_summary(r->why), (long long)step);
}

/* The eval hook is due after step `done` (1-based count of steps done). */
static int eval_due(const jr_run *r, int64_t done) {
    if (!r->eval.score || r->rank) return 0; /* data-parallel: rank 0 evaluates */
    return (done == r->to.steps && r->eval.at_end) || (r->eval.every > 0 && done % r->eval.every == 0);
}

/* Evaluation, the metrics row and the progress bar after step `done`. */
static jr_status after_step(jr_run *r, const jr_run_algo *algo, int64_t done, double loss, double lr) {
    if (eval_due(r, done)) {
        jr_status st = r->eval.score(r->eval.ud, &r->last_eval);
        if (st) return st;
        jr_runlog_add(r->rl, r->eval.metric, r->last_eval);
    }
    if (r->log_now) {
        jr_runlog_add(r->rl, "lr", lr);
        jr_status st = jr_runlog_commit(r->rl, done);
        if (st) return st;
    }
    /* the bar starts after the first step, so a bad first batch prints its error line alone */
    if (r->progress && !r->bar && !r->to.tokenizer_loud && r->to.tokenizer_note[0] && r->to.tokenizer_shown)
        fprintf(r->progress, "%s\n", r->to.tokenizer_note);
    if (r->progress && !r->bar) r->bar = jr_progress_new(algo->name, r->to.steps, r->progress, JR_PROGRESS_AUTO);
    jr_progress_field(r->bar, algo->bar_field, "%.4f", loss);
    jr_progress_set(r->bar, done);
    return JR_OK;
}

/* The final policy: an HF directory with the tokenizer (full fine-tuning) or a PEFT adapter (LoRA). */
static jr_status save_final(jr_run *r) {
    if (r->rank) return JR_OK;
    return jr_ckpt_save_final(r->ro.out_dir, r->use_lora ? "adapter" : "model", &r->m, r->use_lora ? write_model : NULL,
                              r, r->tok);
}

/* A stop request came during step `done` (the algorithm canceled its work): the state before it is saved. */
static jr_status stopped_in_step(jr_run *r, int64_t done) {
    jr_status st = jr_run_checkpoint(r, &r->ts);
    if (st) return st;
    return jr_fail(JR_ECANCELED, "stopped by a signal during step %lld (its work canceled); checkpoint of step %lld "
                                 "written in %s/checkpoints (continue with trainer.resume=true)", (long long)done,
                   (long long)r->ts.step, r->ro.out_dir);
}

jr_status jr_run_step(jr_run *r, const jr_run_algo *algo) {
    int64_t steps = r->to.steps, step = r->ts.step, done = step + 1;
    if (step >= steps) return jr_fail(JR_EINVAL, "%s: all %lld steps are done", r->ro.out_dir, (long long)steps);
    int last = done == steps, boundary = 1;
    if (step == 0 && r->to.eval_at_start && !r->eval.score) /* asked for, never silently skipped */
        return jr_fail(JR_EINVAL, "trainer.eval_at_start=true, but this run has no evaluation (SFT and GRPO evaluate "
                                  "held-out rows: set data.validation or data.validation_frac; distill evaluates nothing)");
    if (step == 0 && r->to.eval_at_start && !r->rank) { /* the policy before training */
        jr_status st = r->eval.score(r->eval.ud, &r->last_eval);
        if (!st) st = jr_runlog_add(r->rl, r->eval.metric, r->last_eval);
        if (!st) st = jr_runlog_commit(r->rl, 0);
        if (st) return st;
    }
    r->log_now = done % r->to.log_every == 0 || last || eval_due(r, done);
    double lr = jr_schedule_lr(&r->sch, step), loss = NAN;
    jr_status st = algo->step(algo->ud, r, step, &loss, &boundary);
    if (st == JR_ECANCELED && r->stop && *r->stop) return stopped_in_step(r, done);
    if (st) return st;
    if (r->ranks > 1 && r->stop) { /* a stop request seen by any rank stops every rank after the same step */
        double any = *r->stop ? 1 : 0;
        if ((st = jr_dist_sum_f64(&any, 1, "the stop flag"))) return st;
        if (any > 0) *r->stop = 1;
    }
    r->ts.step = done;
    if (done == r->first_step) r->first_loss = loss;
    r->last_loss = loss;
    r->last_step = done;
    if ((st = after_step(r, algo, done, loss, lr))) return st;
    /* checkpoints only where the algorithm allows (GRPO: generation boundaries) */
    int stopping = ((r->stop && *r->stop) || r->halt[0]) && boundary;
    int save_due = r->to.save_every > 0 && done % r->to.save_every == 0 && boundary;
    if ((last || stopping || save_due) && (st = jr_run_checkpoint(r, &r->ts))) return st;
    if (stopping && !last && r->halt[0])
        return jr_fail(JR_ECANCELED, "%s; stopped after step %lld with a checkpoint in %s/checkpoints", r->halt,
                       (long long)done, r->ro.out_dir);
    if (stopping && !last)
        return jr_fail(JR_ECANCELED, "stopped by a signal after step %lld; checkpoint written in %s/checkpoints "
                                     "(continue with trainer.resume=true)", (long long)done, r->ro.out_dir);
    return last ? save_final(r) : JR_OK;
}

jr_status jr_run_loop(jr_run *r, const jr_run_algo *algo) {
    jr_status st = JR_OK;
    if (r->ts.step >= r->to.steps) return save_final(r); /* resumed after the last checkpoint: the model again */
    while (!st && r->ts.step < r->to.steps) st = jr_run_step(r, algo);
    return st;
}

jr_status jr_run_close(jr_run *r, jr_status st) {
    jr_progress_finish(r->bar);
    r->bar = NULL;
    if (r->rl) {
        jr_status st2 = jr_runlog_close(r->rl);
        if (!st) st = st2;
        r->rl = NULL;
    }
    jr_adamw_free(&r->opt);
    if (r->use_lora) jr_lora_free(&r->lora);
    jr_model_free(&r->m);
    jr_reason_tally_free(r->why);
    r->why = NULL;
    return st;
}

void jr_run_result(const jr_run *r, jr_train_result *res) {
    res->first_step = r->first_step;
    res->last_step = r->last_step;
    res->first_loss = r->first_loss;
    res->last_loss = r->last_loss;
    res->last_val_loss = r->last_eval;
    res->resumed = r->resumed;
    res->halted = r->halt[0] != 0;
}
