/* grpo.h - GRPO-family math: group-relative advantages (GRPO, RLOO) and the clipped policy loss */
#ifndef JUDGERL_GRPO_H
#define JUDGERL_GRPO_H

#include <stdint.h>

#include "judgerl/status.h"

/* How rewards are scaled after subtracting the group mean (TRL's scale_rewards). */
typedef enum {
    JR_SCALE_GROUP, /* (r - mean_g) / (std_g + 1e-4), std_g unbiased over the group */
    JR_SCALE_BATCH, /* (r - mean_g) / (std_b + 1e-4), std_b unbiased over the whole batch */
    JR_SCALE_NONE   /* r - mean_g */
} jr_scale_rewards;

/* Per-batch statistics of an advantage computation. */
typedef struct jr_adv_stats {
    int groups;              /* groups in the batch */
    int groups_used;         /* groups with >= 2 scored samples */
    int scored;              /* scored samples */
    int unscored;            /* samples without a reward (excluded) */
    double reward_mean;      /* over scored samples */
    double reward_std;       /* unbiased, over scored samples */
    double frac_zero_std;    /* share of used groups whose rewards all agree */
} jr_adv_stats;

/* GRPO advantages for n_groups groups of G consecutive samples. scored[i] = 0 marks a sample
 * without a reward (its rewards[i] is ignored, may be NaN): it is excluded from its group's mean
 * and std, gets advantage 0 and active[i] = 0. A group with fewer than 2 scored samples
 * contributes nothing (all its samples inactive). active (may be NULL) receives 1 for samples
 * that belong in the loss. stats may be NULL. */
void jr_grpo_advantages(float *adv, uint8_t *active, jr_adv_stats *stats, const float *rewards,
                        const uint8_t *scored, int n_groups, int G, jr_scale_rewards mode);

/* RLOO advantages: r_i minus the mean of the other scored samples of its group
 * (k scored: r_i - (sum - r_i) / (k - 1)). Same conventions as jr_grpo_advantages. */
void jr_rloo_advantages(float *adv, uint8_t *active, jr_adv_stats *stats, const float *rewards,
                        const uint8_t *scored, int n_groups, int G);

/* TRL's multi_objective_aggregation = normalize_then_sum: each of K reward components is
 * normalised within its group, (v - mean_g) / (std_g + 1e-4) over the group's scored samples
 * (values (N, K), vscored (N, K): an unscored optional component counts as absent), the
 * normalised values are summed with `weights` (K), then the sums are normalised over the batch,
 * (x - mean) / (std + 1e-4), over samples in the loss. Which samples are in the loss and the
 * stats come from the per-sample rewards / scored as in jr_grpo_advantages. */
void jr_grpo_advantages_nts(float *adv, uint8_t *active, jr_adv_stats *stats, const float *values,
                            const uint8_t *vscored, const float *weights, int K, const float *rewards,
                            const uint8_t *scored, int n_groups, int G);

/* DAPO's overlong penalty for a completion of `len` tokens: 0 up to max_len - cache, then falling
 * linearly to -1 at max_len, -1 beyond. */
double jr_overlong_penalty(int len, int max_len, int cache);

/* The loss normalisations of TRL's GRPOTrainer (loss_type). */
typedef enum {
    JR_LOSS_GRPO,    /* mean over sequences of each sequence's token mean */
    JR_LOSS_BNPO,    /* sum / completion tokens in this micro-batch */
    JR_LOSS_DR_GRPO, /* sum / (sequences x max_completion_length) */
    JR_LOSS_DAPO     /* sum / completion tokens in the whole accumulated batch */
} jr_loss_type;

typedef struct jr_policy_loss_cfg {
    jr_loss_type type;
    double eps_low, eps_high;   /* clip range [1 - eps_low, 1 + eps_high] */
    double beta;                /* KL coefficient (k3 estimator); 0 = no reference term */
    int max_completion_length;  /* for dr_grpo */
    double dapo_tokens;         /* for dapo: completion tokens in the whole accumulated batch */
    double seq_count;           /* sequences the loss is normalised by for grpo/dr_grpo; 0 = active ones here */
} jr_policy_loss_cfg;

typedef struct jr_policy_loss_stats {
    double loss;        /* this micro-batch's contribution */
    double tokens;      /* active completion tokens */
    double kl;          /* mean k3 KL over active tokens (0 without a reference) */
    double clip_low;    /* share of tokens with ratio < 1 - eps_low and A < 0 */
    double clip_high;   /* share of tokens with ratio > 1 + eps_high and A > 0 */
    double clip_region; /* either */
} jr_policy_loss_stats;

/* The clipped surrogate loss plus beta x KL, per token:
 *   l = -min(r A, clip(r, 1-eps_low, 1+eps_high) A) + beta (exp(ref - lp) - (ref - lp) - 1),
 *   r = exp(lp - old),
 * normalised by cfg->type over tokens with mask = 1 of sequences with active = 1.
 * lp, old, ref, mask: (N, T) row-major; old NULL = lp itself (one policy update per generation:
 * ratio 1, gradient A); ref NULL requires beta = 0. adv (N), active (N) or NULL (all active).
 * dlp (N, T), may be NULL: receives (overwrites) d loss / d lp. Returns JR_EINVAL on
 * inconsistent arguments (nothing written). */
jr_status jr_policy_loss(jr_policy_loss_stats *st, float *dlp, const float *lp, const float *old, const float *ref,
                         const float *mask, const float *adv, const uint8_t *active, int N, int T,
                         const jr_policy_loss_cfg *cfg);

#endif
