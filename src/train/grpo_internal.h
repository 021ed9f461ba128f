/* grpo_internal.h - the GRPO trainer's state shared by grpo_rollout.c (generation + rewards), grpo_update.c
 * (advantages, micro-batches, the policy update) and grpo_train.c (open / step / close, logging) */
#ifndef JUDGERL_GRPO_INTERNAL_H
#define JUDGERL_GRPO_INTERNAL_H

#include <pthread.h>

#include "judgerl/grpo_trainer.h"
#include "judgerl/judge.h"
#include "judgerl/textgen.h"

/* One completion. */
typedef struct {
    int group;              /* index of its prompt in the batch */
    int32_t *toks;          /* completion tokens (eos included when it ended so) */
    int n;
    int truncated;          /* finish_reason "length" */
    char *text;             /* valid UTF-8 (invalid bytes replaced) */
    size_t text_len;
    int scored;
    double reward;          /* NAN when unscored */
    double *vals;           /* per component (K), and the overlong penalty as component K */
    uint8_t *vscored;
    char *reason;           /* why unscored */
    double latency;         /* the environment's seconds for it */
} grpo_sample;

/* One prompt of the batch. */
typedef struct {
    json_t *row;            /* the dataset row (all fields reach the rewards) */
    char *prompt_text;      /* the prompt as text (for judges and logs) */
    int32_t *ids;
    int n_ids;
} grpo_prompt;

typedef struct {
    int P, G, n;            /* prompts, generations, samples */
    grpo_prompt *p;
    grpo_sample *s;
} grpo_rollout;

typedef struct {
    double t_gen, t_judge_wait, t_judge_span;
    long gen_tokens;
    int n_generated, n_unscored;   /* over every generation batch of the step */
    int gen_batches;
    double lat_p50, lat_p95;
    uint64_t cache_lookups, cache_hits;
    jr_data_pos data_after;        /* the data position after the rollout's prompts */
} grpo_rollout_stats;

/* One micro-batch of training rows: ids (B,T), targets (-1 outside completions), mask (B,T). */
typedef struct {
    int i0, nb, T;
    int32_t *ids, *targets;
    float *mask, *adv, *old, *ref, *lp, *dlp;
    uint8_t *active;
} grpo_micro;

typedef struct {
    double loss, kl, clip_low, clip_high, clip_region, entropy, tokens, gnorm;
} grpo_update_stats;

struct jr_grpo_trainer {
    jr_run run;
    jr_grpo_opts o;
    int G, P, B, mu, max_prompt, max_comp, T_max;
    double eps_high;
    int K;                  /* reward components */
    float *weights;         /* K + 1 (the overlong penalty last) */
    jr_model ref;           /* full fine-tuning with beta > 0 only */
    int has_ref;
    jr_textgen tg;
    jr_env *env;
    jr_judge *judge;        /* for the judge statistics of the log (NULL: none) */
    jr_data *data;
    jr_acts acts;           /* logits in chunks (jr_acts_opts): never B x T x V at once */
    float *ent;             /* (B, T_max) entropies of the micro-batch in the update */
    FILE *progress;
    volatile sig_atomic_t *stop;
    /* one-step-ahead generation: gen_m holds the weights the background rollout samples from */
    jr_model gen_m;
    int has_gen;
    pthread_t th;
    int th_running;
    grpo_rollout pend;
    grpo_rollout_stats pend_rs;
    int64_t pend_step;
    jr_status pend_st;
    char pend_err[600];
    /* the current step */
    grpo_rollout ro;
    grpo_rollout_stats rs;
    grpo_micro *mb;
    int n_mb;
    float *adv;
    uint8_t *active;
    jr_adv_stats as;
    grpo_update_stats us;
    int fresh;              /* this step rolled out a new generation batch */
    double t0, t_wait, t_ref, t_update;
    jr_train_state prev;    /* the state before the current step */
    jr_grpo_hooks hooks;
    jr_constraint *cons;    /* hooks.constraint's, or NULL */
};

/* grpo_rollout.c */
void grpo_rollout_free(grpo_rollout *r);
jr_status grpo_do_rollout(jr_grpo_trainer *g, grpo_rollout *r, int64_t step, grpo_rollout_stats *rs);
jr_status grpo_launch_rollout(jr_grpo_trainer *g, int64_t step);
jr_status grpo_join_rollout(jr_grpo_trainer *g, grpo_rollout *r, grpo_rollout_stats *rs);
jr_status grpo_eval_reward(void *ud, double *mean);

/* grpo_update.c */
void grpo_micro_free(grpo_micro *mb, int n);
jr_status grpo_compute_advantages(jr_grpo_trainer *g);
jr_status grpo_build_micro(jr_grpo_trainer *g);
jr_status grpo_old_and_ref(jr_grpo_trainer *g, int64_t step);
jr_status grpo_policy_step(jr_grpo_trainer *g, double lr);

#endif
