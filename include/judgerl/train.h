/* train.h - `judgerl train`: the trainer options and the training loop (SFT today; GRPO family next) */
#ifndef JUDGERL_TRAIN_H
#define JUDGERL_TRAIN_H

#include <stdint.h>
#include <stdio.h>

#include "judgerl/config.h"
#include "judgerl/status.h"

/* The trainer.* options (algo, steps, batch, optimizer, schedule, checkpoints, resume). */
extern const jr_cfg_field jr_trainer_cfg[];

/* The grpo.* and lora.* options of trainer.algo grpo | rloo (docs/GRPO.md). */
extern const jr_cfg_field jr_grpo_cfg[];

/* What a finished (or stopped) run reports. */
typedef struct jr_train_result {
    int64_t first_step, last_step;   /* optimizer steps run by this process (first_step > 0 on resume) */
    double first_loss, last_loss;    /* training loss of those steps */
    double last_val_loss;            /* NAN when there is no validation data */
    int resumed;                     /* 1 when it continued from a checkpoint */
} jr_train_result;

/* Runs trainer.algo on a config loaded with the tables run, data, model, trainer: writes
 * run.out_dir/metrics.jsonl (+ a TensorBoard event file), checkpoints under
 * run.out_dir/checkpoints/ every trainer.save_every steps and at the end, and the final model as
 * an HF directory in run.out_dir/model. With trainer.resume it continues from the latest
 * checkpoint, bit-exactly (same losses as an uninterrupted run). The progress bar goes to
 * `progress` (NULL: none). On error the message names the row, file or key; checkpoints already
 * written stay valid. */
jr_status jr_train_run(const jr_config *c, FILE *progress, jr_train_result *res);

/* trainer.algo grpo | rloo (grpo_train.c), called by jr_train_run: a config loaded with the run,
 * data, model, trainer, grpo, judge, protocols and reward tables. res->first_loss / last_loss
 * hold the mean reward of the first and last step. Past grpo.max_unscored_frac it writes a
 * checkpoint of the state before the step and fails with a message saying so. */
jr_status jr_grpo_run(const jr_config *c, FILE *progress, jr_train_result *res);

#endif
