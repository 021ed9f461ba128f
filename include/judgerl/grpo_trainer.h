/* grpo_trainer.h - the GRPO family (grpo, rloo) as a library: typed options, open a trainer on a policy and
 * a reward environment, run one step (rollout, advantages, update, log), close */
#ifndef JUDGERL_GRPO_TRAINER_H
#define JUDGERL_GRPO_TRAINER_H

#include <signal.h>
#include <stdio.h>

#include "judgerl/config.h"
#include "judgerl/constrain.h"
#include "judgerl/dataset.h"
#include "judgerl/env.h"
#include "judgerl/grpo.h"
#include "judgerl/monitor.h"
#include "judgerl/run.h"
#include "judgerl/status.h"

#define JR_GRPO_MAX_WEIGHTS 64

/* grpo.* (docs/GRPO.md has each option with its TRL / verl name). */
typedef struct jr_grpo_opts {
    int rloo;                    /* trainer.algo rloo: leave-one-out advantages */
    int num_generations;         /* G */
    int prompts_per_step;        /* P */
    int max_prompt_length, max_completion_length;
    double temperature, top_p, min_p;
    int top_k;
    double beta, epsilon, epsilon_high; /* epsilon_high < 0: = epsilon */
    int num_iterations;          /* mu */
    jr_loss_type loss_type;
    jr_scale_rewards scale_rewards;
    int n_reward_weights;        /* 0: the environment's own weights */
    double reward_weights[JR_GRPO_MAX_WEIGHTS];
    int normalize_then_sum;
    int mask_truncated_completions, filter_groups, max_num_gen_batches;
    int overlong_buffer, overlong_buffer_len;
    double overlong_penalty_factor;
    int64_t log_completions_every;
    int log_completions_n;
    int shuffle_rewards;         /* control experiment */
    int length_control;          /* mitigation: the reward's linear dependence on length regressed out per batch */
    int async_generation;
    double max_unscored_frac;    /* judge.max_unscored_frac: past it the run stops with a checkpoint */
    int max_in_flight;           /* samples being scored at once (0 = no bound) */
    double reward_deadline_s;    /* wait at most this long for a step's rewards (0 = forever) */
} jr_grpo_opts;

/* Fills o from grpo.*, trainer.algo and judge.max_unscored_frac (defaults as jr_grpo_cfg). Fails when
 * grpo.reward_weights has more than JR_GRPO_MAX_WEIGHTS entries. */
jr_status jr_grpo_opts_from_config(jr_grpo_opts *o, const jr_config *c);

/* Optional hooks for programs built on the trainer (seed 2's workflow trainer); all NULL: the plain trainer. */
typedef struct jr_grpo_hooks {
    void *ud;
    /* Fills rows[0..n) (new references, each {"prompt"} or {"messages"} plus the environment's fields)
     * for generation batch gen_batch of step `step`, instead of data.train's stream (not read then).
     * Must depend only on (step, gen_batch), so a resumed run draws what the killed one would have. */
    jr_status (*prompts)(void *ud, int64_t step, int gen_batch, int n, json_t **rows);
    /* Rewrites a validation row before its prompt is built (*out: a new reference). */
    jr_status (*prepare_val)(void *ud, const json_t *row, json_t **out);
    /* Builds a constraint every completion is sampled under, on the policy tokenizer's token bytes
     * (the trainer frees it). */
    jr_status (*constraint)(void *ud, const jr_token_bytes *v, jr_constraint **out);
    /* Called after the step's scalars are added, when the step writes a metrics row: add more. */
    jr_status (*log)(void *ud, jr_runlog *rl, int64_t step);
} jr_grpo_hooks;

/* Everything a GRPO trainer is built from; no YAML needed. */
typedef struct jr_grpo_setup {
    jr_run_opts run;
    jr_trainer_opts trainer;     /* steps, batch_size (micro-batch rows), optimizer, cadence, tokenizer */
    jr_grpo_opts grpo;
    jr_lora_opts lora;           /* lora.enabled 0: full fine-tuning */
    jr_model_source policy;      /* the starting weights (and the KL reference) */
    jr_data_opts data;           /* prompts: rows {"prompt"} or {"messages"} */
    jr_env *env;                 /* the reward environment (borrowed; outlives the trainer) */
    jr_monitor_opts monitor;     /* reward-hacking alarms on the held-out evaluation (enabled 0: off) */
    FILE *progress;              /* progress bar, sample tables, notes (NULL: none) */
    volatile sig_atomic_t *stop; /* set by a signal: checkpoint at the next boundary and stop */
    jr_grpo_hooks hooks;         /* optional (zeroed: none) */
} jr_grpo_setup;

/* Every option at its documented default (the config tables' defaults, trainer.algo grpo, the byte
 * tokenizer); run.out_dir, data.train, policy and env are left unset (NULL) for the caller. */
jr_status jr_grpo_setup_defaults(jr_grpo_setup *s);

/* The setup a config gives (run, trainer, lora, data, policy, grpo, and monitor when its table was
 * loaded), with progress and stop; env and hooks are left for the caller. Strings point into c. */
jr_status jr_grpo_setup_from_config(jr_grpo_setup *s, const jr_config *c, FILE *progress, volatile sig_atomic_t *stop);

typedef struct jr_grpo_trainer jr_grpo_trainer;

/* Opens a trainer: the run (resume from run.out_dir's latest checkpoint when trainer.resume), the
 * data, the tokenizer, generation. On error *t is NULL and everything is closed. */
jr_status jr_grpo_open(jr_grpo_trainer **t, const jr_grpo_setup *s);

/* One optimizer step: jr_grpo_rollout (at a generation boundary), jr_grpo_advantages_step,
 * jr_grpo_update, jr_grpo_log, then the harness's evaluation, metrics row, checkpoint and stop.
 * After the last step the final model is written. JR_ECANCELED after a stop (checkpoint written). */
jr_status jr_grpo_step(jr_grpo_trainer *t);

/* The parts of a step, in order (jr_grpo_step calls them; exposed for programs that insert their own
 * work between them). rollout: P prompts x G completions, rewarded by the environment;
 * advantages_step: rewards -> advantages, micro-batches, old / reference log-probs; update: the
 * clipped policy loss and one AdamW step at learning rate lr; log: the step's scalars. */
jr_status jr_grpo_rollout(jr_grpo_trainer *t, int64_t step);
jr_status jr_grpo_advantages_step(jr_grpo_trainer *t, int64_t step);
jr_status jr_grpo_update(jr_grpo_trainer *t, double lr);
jr_status jr_grpo_log(jr_grpo_trainer *t, int64_t step);

/* 1 when trainer.steps steps are done. */
int jr_grpo_done(const jr_grpo_trainer *t);

/* The mean reward of the scored samples of the last rollout (NAN before the first). */
double jr_grpo_reward_mean(const jr_grpo_trainer *t);

/* One evaluation pass over the validation prompts, as the trainer's eval hook does (G samples each, the
 * same seeds at every evaluation), at `temperature` (0: greedy; < 0: grpo.temperature, the hook's own pass,
 * which alone the monitor watches), its figures logged under `prefix` (e.g. "eval_greedy/"); *mean is the
 * mean reward of the scored samples. */
jr_status jr_grpo_eval_pass(jr_grpo_trainer *t, double temperature, const char *prefix, double *mean);

/* The run under the trainer (model, optimizer, state, log). */
jr_run *jr_grpo_run_of(jr_grpo_trainer *t);

/* Frees everything; st is the status so far; returns it or a close error. NULL is fine. */
jr_status jr_grpo_close(jr_grpo_trainer *t, jr_status st);

#endif
