/* train.h - `judgerl train`: the trainer options and the training loop (SFT today; GRPO family next) */
#ifndef JUDGERL_TRAIN_H
#define JUDGERL_TRAIN_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "judgerl/config.h"
#include "judgerl/run.h"
#include "judgerl/status.h"

/* The trainer.* options (algo, steps, batch, optimizer, schedule, checkpoints, resume). */
extern const jr_cfg_field jr_trainer_cfg[];

/* The grpo.* and lora.* options of trainer.algo grpo | rloo (docs/GRPO.md). */
extern const jr_cfg_field jr_grpo_cfg[];

/* The distill.* options of trainer.algo distill. */
extern const jr_cfg_field jr_distill_cfg[];

/* What a finished (or stopped) run reports. */
typedef struct jr_train_result {
    int64_t first_step, last_step;   /* optimizer steps run by this process (first_step > 0 on resume) */
    double first_loss, last_loss;    /* training loss of those steps */
    double last_val_loss;            /* NAN when there is no validation data */
    int resumed;                     /* 1 when it continued from a checkpoint */
    int halted;                      /* 1 when the algorithm stopped it (a monitor alarm with monitor.stop): the
                                        run failed with JR_ECANCELED and a checkpoint, not by a signal */
} jr_train_result;

/* What the training commands print around a run (from model.compute, trainer.algo, run.out_dir,
 * lora.enabled, trainer.steps). */
typedef struct jr_train_print_opts {
    const char *compute, *algo, *out_dir;
    int lora;
    long long steps;
} jr_train_print_opts;
void jr_train_print_opts_from_config(jr_train_print_opts *o, const jr_config *c);
/* "compute: bfloat16 matmuls via oneDNN, ISA ..." or "compute: float32 (...)": said before a run. */
void jr_train_print_compute(FILE *f, const jr_train_print_opts *o);
/* "trained steps A..B: loss X -> Y[, validation loss V]; model in OUT/model" (mean reward for grpo /
 * rloo; "resumed," on resume; adapter with LoRA), or "nothing to do: ..." when no step ran. */
void jr_train_print_result(FILE *f, const jr_train_print_opts *o, const jr_train_result *r);

/* Runs trainer.algo on a config loaded with the tables run, data, model, trainer: writes
 * run.out_dir/metrics.jsonl (+ a TensorBoard event file), checkpoints under
 * run.out_dir/checkpoints/ every trainer.save_every steps and at the end, and the final model as
 * an HF directory in run.out_dir/model. With trainer.resume it continues from the latest
 * checkpoint, bit-exactly (same losses as an uninterrupted run). The progress bar goes to
 * `progress` (NULL: none). When *stop becomes nonzero (a signal handler sets it; stop may be NULL)
 * the run finishes its current step, writes a checkpoint and returns JR_ECANCELED. On error the
 * message names the row, file or key; checkpoints already written stay valid. */
jr_status jr_train_run(const jr_config *c, FILE *progress, volatile sig_atomic_t *stop, jr_train_result *res);
/* The tables a config for jr_train_run is loaded against (`judgerl train`: run, data, model,
 * trainer, grpo, distill, judge, protocols, reward, tokenizer, sandbox, monitor, ensemble), NULL-terminated;
 * JR_TRAIN_TABLE_LIST is the same list without the NULL, for a loader that adds tables (the study's probe.*;
 * the including file declares the tables: judgerl/{run,dataset,model,judge,protocols,reward,tokenizer,
 * sandbox,monitor,ensemble}.h). */
extern const jr_cfg_field *const jr_train_tables[];
#define JR_TRAIN_TABLE_LIST                                                                                        \
    jr_run_cfg, jr_data_cfg, jr_model_cfg, jr_trainer_cfg, jr_grpo_cfg, jr_distill_cfg, jr_judge_cfg, jr_protocols_cfg, \
        jr_reward_cfg, jr_tokenizer_cfg, jr_sandbox_cfg, jr_monitor_cfg, jr_ensemble_cfg
/* What jr_train_run would refuse before it loads anything (it runs this first; `judgerl config`
 * runs it on configs with data.train): the algorithm, data files, model.path / model.init,
 * tokenizer, LoRA targets, reward components and their params, the judge's endpoints, the
 * reward weights against the components, and the run-directory rule (jr_run_dir_prepare). */
jr_status jr_train_check(const jr_config *c);

/* Every library module's option tables (training's, the workflow's, the executor's, probe, reward
 * service, seed 2's), NULL-terminated: what `judgerl config` checks a file against (with seed 1's). */
extern const jr_cfg_field *const jr_all_cfg_tables[];
/* `judgerl config`'s checks beyond the keys: a training config (data.train set) gets jr_train_check; a
 * judge config (judge.endpoints listed) the checks of its endpoints (jr_judge_opts_check). */
jr_status jr_config_check(const jr_config *c);

/* trainer.algo sft (sft.c), called by jr_train_run: rows {"prompt","completion"} or {"messages"}, loss on
 * the completion / assistant tokens; trainer.eval_every and the end: validation loss (data.validation*). */
jr_status jr_sft_run(const jr_config *c, FILE *progress, volatile sig_atomic_t *stop, jr_train_result *res);

/* A harness run's figures as a jr_train_result. */
void jr_run_result(const jr_run *r, jr_train_result *res);

/* trainer.algo grpo | rloo (grpo_train.c), called by jr_train_run: a config loaded with the run,
 * data, model, trainer, grpo, judge, protocols and reward tables. res->first_loss / last_loss
 * hold the mean reward of the first and last step. Past judge.max_unscored_frac it writes a
 * checkpoint of the state before the step and fails with a message saying so. *stop set: as SFT (the
 * step finishes, at the next generation boundary a checkpoint is written, JR_ECANCELED). */
jr_status jr_grpo_run(const jr_config *c, FILE *progress, volatile sig_atomic_t *stop, jr_train_result *res);

/* trainer.algo distill (distill.c): each step takes trainer.batch_size rows {"prompt"}, has the judge
 * label them through the reward component with fn label (judge.label.*: labels, threshold), drops
 * the rejected ones (confidence below judge.label.threshold) and trains cross-entropy on
 * [bos] prompt distill.label_prefix+label [eos] (loss on the label and eos). res->first_loss /
 * last_loss are that loss. Past judge.max_unscored_frac rejected it stops with a checkpoint. */
jr_status jr_distill_run(const jr_config *c, FILE *progress, volatile sig_atomic_t *stop, jr_train_result *res);

#endif
