/* wf_train.h - seed 2's trainer, `judgerl workflow train` (src/train/wf_train.c): GRPO on a policy that
 * writes workflows, rewarded by the workflow environment of wfrl.h. docs/WORKFLOWS.md documents every rule. */
#ifndef JUDGERL_WF_TRAIN_H
#define JUDGERL_WF_TRAIN_H

#include <jansson.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>

#include "judgerl/config.h"
#include "judgerl/status.h"

/* wftrain.* and data.mix. */
extern const jr_cfg_field jr_wf_train_cfg[];

/* Runs texts[i] (a workflow) on rows[i] (a task row) for i < n through the workflow environment of a
 * wftrain config (wftrain.executor, wftrain.reward, wfenv.*: what jr_wf_train_run rewards with), as
 * held-out samples, and hands their per-domain statistics to put (the keys of jr_wf_env_stats_flush
 * under `prefix`); *gold gets the overall gold accuracy (a verifier's). A workflow that does not parse
 * or has no answer counts as wrong. A row's integer "sample_index" k keys the executor's draws as the
 * trainer's held-out evaluation keys its k-th sample of that problem (the same draws: paired comparisons
 * of fixed workflows with the policy); rows without one draw by their position i. */
jr_status jr_wf_eval_texts(const jr_config *c, const char *cfg_dir, const json_t *rows, const char *const *texts, size_t n,
                           const char *prefix, void (*put)(void *ud, const char *key, double v), void *ud, double *gold);

/* `judgerl workflow train`: GRPO (trainer.*, grpo.*, lora.*, model.*) on a policy that writes
 * workflows. data.train: task rows {problem, type: math|code|qa, answer | hidden_tests, ...} pooled
 * per domain, drawn per step by data.mix (jr_wf_mix_counts, seeded by run.seed and the step); each
 * prompt is the Layer-1 render (wftrain.layer1_template) with few-shot examples from the experience
 * buffer (buffer.*, RUN/buffer.sqlite by default); completions are sampled under the workflow
 * grammar when wftrain.constrained; rewards come from the workflow environment over the executor of
 * wftrain.executor and the reward of wftrain.reward (configs relative to cfg_dir). Per-domain
 * statistics go to every metrics row (train/DOM/..., buffer/DOM); data.validation rows are the
 * held-out set: every trainer.eval_every steps and at the end, eval/DOM/gold_acc (a verifier's) and
 * eval/gold_acc. A resumed run drops the buffer's entries from steps after its checkpoint.
 * Loaded with the tables of `judgerl train` plus jr_wf_env_cfg, jr_wf_buffer_cfg, jr_wf_train_cfg. */
struct jr_train_result;
/* The tables `judgerl workflow train` loads its config with (run, data, model, trainer, grpo, judge,
 * tokenizer, wfenv, buffer, wftrain), NULL-terminated. */
extern const jr_cfg_field *const jr_wf_train_tables[];
jr_status jr_wf_train_run(const jr_config *c, const char *cfg_dir, FILE *progress, volatile sig_atomic_t *stop,
                          struct jr_train_result *res);

#endif
