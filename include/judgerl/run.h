/* run.h - the run harness every trainer (SFT, GRPO/RLOO, distill) runs on: typed run / trainer / LoRA
 * options, run directory, resume, model + LoRA + AdamW, threads, run log, progress, checkpoint cadence,
 * stop signals and one periodic-evaluation hook */
#ifndef JUDGERL_RUN_H
#define JUDGERL_RUN_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "judgerl/checkpoint.h"
#include "judgerl/clock.h"
#include "judgerl/config.h"
#include "judgerl/judge.h"
#include "judgerl/lora.h"
#include "judgerl/model.h"
#include "judgerl/optim.h"
#include "judgerl/progress.h"
#include "judgerl/runlog.h"
#include "judgerl/status.h"
#include "judgerl/tok.h"

/* run.*: what every run shares. */
typedef struct jr_run_opts {
    uint64_t seed;          /* run.seed */
    const char *out_dir;    /* run.out_dir (required) */
    int overwrite;          /* run.overwrite: replace the run already in out_dir */
} jr_run_opts;
void jr_run_opts_from_config(jr_run_opts *o, const jr_config *c);

/* The run-directory rule: an out_dir that holds anything besides judge_cache.sqlite is refused
 * (naming what it holds) unless resume (the run continues from its latest checkpoint; its logs are
 * cut back to that step) or o->overwrite (the previous run's files - checkpoints/, model/,
 * adapter/, metrics.jsonl, samples.jsonl, TensorBoard files, unscored.json, report.html, config.yaml - are
 * removed first, unless dry; other files and the judge cache stay). A missing or empty out_dir is fine. */
jr_status jr_run_dir_prepare(const jr_run_opts *o, int resume, int dry);

/* trainer.*: the optimizer, schedule, cadence and tokenizer of a run (jr_trainer_cfg documents each). */
typedef struct jr_trainer_opts {
    const char *algo;        /* sft | grpo | rloo | distill */
    int64_t steps;           /* optimizer steps in total */
    int batch_size, grad_accum, max_seq_len;
    const char *tokenizer;   /* resolved spec: "byte", a tokenizer.json or a directory holding one */
    char tokenizer_note[640]; /* how it was chosen: one line the run prints at its start */
    int tokenizer_shown;     /* 1: the note is printed (the default picked something from model.path) */
    int tokenizer_loud;      /* 1: an explicit byte tokenizer beside a model directory that has tokenizer.json */
    double lr;
    jr_sched_kind lr_schedule;
    int64_t warmup_steps;
    double beta1, beta2, eps, weight_decay, max_grad_norm;
    int64_t save_every;      /* 0: only at the end */
    int keep_checkpoints;    /* 0: all */
    int resume;
    int64_t eval_every;      /* 0: only at the end (when the algorithm evaluates at the end) */
    int eval_at_start;       /* also evaluate before the first step of a fresh run (metrics row of step 0) */
    int64_t log_every;
    int threads;             /* 0: auto */
    int tensorboard;
    int checkpoint_activations; /* recompute each layer in the backward (jr_acts_opts.checkpoint) */
} jr_trainer_opts;

/* Fills o from trainer.* (and model.path, for the tokenizer default: trainer.tokenizer unset means
 * MODEL/tokenizer.json when model.path holds one, else the byte tokenizer). Strings borrow c. */
void jr_trainer_opts_from_config(jr_trainer_opts *o, const jr_config *c);

/* lora.*: adapters instead of full fine-tuning. */
typedef struct jr_lora_opts {
    int enabled, rank;
    double alpha, dropout;
    const char *target_modules; /* "q,k,v,o,gate,up,down" | "all" */
} jr_lora_opts;
void jr_lora_opts_from_config(jr_lora_opts *o, const jr_config *c);

/* Where a fresh run's starting weights come from: load(ud, m) fills a fresh model (called again for
 * copies: the KL reference, the async generation weights). name: the base model's name for PEFT. */
typedef struct jr_model_source {
    jr_status (*load)(void *ud, jr_model *m);
    void *ud;
    const char *name;
    jr_compute compute; /* the matmul type load gives its models (model.compute); a run resumed from a
                         * checkpoint gets it too (a checkpoint keeps weights, not the compute type) */
} jr_model_source;

/* A model source over a loaded config (jr_model_from_config: model.path or model.init; c must outlive
 * the run). */
void jr_model_source_opts_from_config(jr_model_source *s, const jr_config *c);

/* The periodic-evaluation hook: every `every` steps (and at the end when at_end is set; before the
 * first step of a fresh run when trainer.eval_at_start, in a metrics row of step 0) the harness calls
 * score(ud, &value) and logs the value under `metric` in the same metrics row. */
typedef struct jr_run_eval {
    int64_t every;          /* 0: only at the end (when at_end) */
    int at_end;
    const char *metric;     /* e.g. "val_loss", "eval/reward" */
    jr_status (*score)(void *ud, double *value);
    void *ud;
} jr_run_eval;

/* One algorithm on the harness: step() runs optimizer step `step` (0-based) and adds its scalars to
 * run->rl when run->log_now; it sets *loss (reported as first/last loss) and *boundary = 0 when a
 * checkpoint may not be written after this step (GRPO inside a generation batch). */
typedef struct jr_run jr_run;
typedef struct jr_run_algo {
    const char *name;       /* progress label */
    jr_status (*step)(void *ud, jr_run *run, int64_t step, double *loss, int *boundary);
    void *ud;
    const char *bar_field;  /* progress field showing *loss ("loss", "reward") */
} jr_run_algo;

/* A run in progress. Fields are read by algorithms; only the harness writes them. */
struct jr_run {
    jr_run_opts ro;
    jr_trainer_opts to;
    jr_lora_opts lo;
    jr_model_source src;
    FILE *progress;
    volatile sig_atomic_t *stop;
    char halt[512];          /* set by an algorithm (a monitor alarm): stop with a checkpoint at the next
                                boundary, failing with this message */
    jr_model m;              /* the policy (effective weights while LoRA is on) */
    jr_lora lora;
    int use_lora;
    jr_model *trained;       /* &m or &lora.ad */
    jr_adamw opt;
    jr_train_state ts;
    jr_schedule sch;
    int resumed;
    const jr_tok *tok;       /* the tokenizer whose files go into every checkpoint and the final model */
    jr_runlog *rl;
    jr_progress *bar;
    int log_now;             /* the current step writes a metrics row */
    jr_run_eval eval;
    int64_t first_step, last_step;
    double first_loss, last_loss, last_eval;
    int rank, ranks;         /* data-parallel (dist.h): this rank and the world size; 1 rank normally */
    jr_reason_tally *why;    /* why samples were unscored over the run: the algorithms add each reason,
                                jr_run_stop_unscored names the last and the most frequent */
};

/* Opens a run: checks run.out_dir, loads the latest checkpoint when to->resume and there is one
 * (model or LoRA adapter, AdamW moments, trainer state), else the model from src with fresh moments;
 * LoRA adapters per lo. rng_tag separates the algorithms' random streams. On error everything
 * opened is closed (jr_run_close is still safe). */
jr_status jr_run_open(jr_run *r, const jr_run_opts *ro, const jr_trainer_opts *to, const jr_lora_opts *lo,
                      const jr_model_source *src, uint64_t rng_tag, FILE *progress, volatile sig_atomic_t *stop);

/* After the algorithm has built its state: sets the threads (trainer.threads, or 1 when one step
 * costs under 2 GFLOP), allocates gradients and opens the run log. The tokenizer note is printed to
 * progress here when loud, else after the first step (so a bad first batch prints its error alone). */
jr_status jr_run_start(jr_run *r, double step_flops, const jr_tok *tok);

/* Runs step ts.step: algo->step, the eval hook, the metrics row (lr added), the progress bar, a
 * checkpoint every save_every steps, at the end and on *stop (then JR_ECANCELED), and the final model
 * (run.out_dir/model, or adapter with LoRA) after the last step. When algo->step returns JR_ECANCELED
 * with *stop set (it canceled its work in flight), the state before the step is checkpointed. */
jr_status jr_run_step(jr_run *r, const jr_run_algo *algo);

/* jr_run_step until to.steps steps are done. */
jr_status jr_run_loop(jr_run *r, const jr_run_algo *algo);

/* Writes a checkpoint of state s (the model, adapters, moments, tokenizer files). */
jr_status jr_run_checkpoint(jr_run *r, const jr_train_state *s);

/* Zeroes the gradients a step accumulates: the model's and, with LoRA, the adapters' (the backward
 * adds the adapters' gradients directly: jr_lora_direct). */
void jr_run_zero_grads(jr_run *r);

/* After a LoRA update: the adapters' gradients from the model's, clip, AdamW step, adapters back on.
 * Without LoRA: clip and AdamW step. Over several ranks (dist.h) the trained gradients are first
 * summed across ranks in a fixed order: each rank's gradient must be its share of the global sum
 * (scaled by the global count). *gnorm (may be NULL): the gradient norm before clipping. */
jr_status jr_run_update(jr_run *r, double lr, double *gnorm);

/* Stops the run for too many unscored samples: logs unscored_frac at step + 1, writes a checkpoint of
 * `prev` (the state before the step), writes the reasons (r->why) to RUN/unscored.json and fails
 * naming what ("samples", "prompts without an accepted label"), the fraction, and the last and the
 * most frequent reasons. */
jr_status jr_run_stop_unscored(jr_run *r, const jr_train_state *prev, int64_t step, int bad, int total,
                               const char *what, double limit);

/* Closes the run log and the bar, frees the model, adapters and moments; st is the run's status so
 * far, the result is st or the log's close error. */
jr_status jr_run_close(jr_run *r, jr_status st);

#endif
