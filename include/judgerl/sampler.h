/* sampler.h - next-token sampling (temperature, top-k, top-p, min-p, logit bias, masks) and log-probs */
#ifndef JUDGERL_SAMPLER_H
#define JUDGERL_SAMPLER_H

#include <stdint.h>

#include "judgerl/rng.h"
#include "judgerl/status.h"

/* Sampling settings of one sequence. Defaults (jr_sample_params_default): temperature 1, no
 * truncation, no bias. temperature 0 means greedy (argmax; ties go to the lowest id). */
typedef struct jr_sample_params {
    float temperature; /* 0 = greedy */
    float top_p;       /* keep the smallest set of tokens whose mass >= top_p; 1 = off */
    int top_k;         /* keep the k most likely tokens; 0 = off */
    float min_p;       /* drop tokens with p < min_p * p_max; 0 = off */
    int n_bias;        /* logit bias: logits[bias_ids[i]] += bias_vals[i] before everything else */
    const int32_t *bias_ids;
    const float *bias_vals;
} jr_sample_params;

jr_sample_params jr_sample_params_default(void);

/* Scratch memory for one sampling call, reusable across calls (one per thread). */
typedef struct jr_sample_scratch {
    float *z;
    int32_t *idx;
    int cap;
} jr_sample_scratch;

void jr_sample_scratch_free(jr_sample_scratch *w);

/* Picks the next token from `logits` (the model's raw scores). Only ids < n_valid (the
 * tokenizer's size: padded embedding rows are never sampled) with allowed[id] != 0 (allowed NULL
 * = every id) are candidates. The order is: bias, mask, temperature, top-k, top-p, min-p, then one
 * draw from `rng` (none when greedy). Returns the id in *out, or JR_EINVAL when no candidate is
 * left (every id masked); JR_ENOMEM when the scratch cannot grow. */
jr_status jr_sample(const float *logits, int n_valid, const jr_sample_params *p, const uint8_t *allowed,
                    jr_rng *rng, jr_sample_scratch *w, int32_t *out);

/* log softmax(logits / temperature)[tok] over all n_logits entries (temperature <= 0 counts as 1),
 * computed as TRL does for importance ratios. Accumulates in double. */
float jr_logprob_at(const float *logits, int n_logits, float temperature, int32_t tok);

/* The log-normaliser log sum exp(logits / temperature) over n_logits (temperature <= 0 = 1). */
double jr_logsumexp(const float *logits, int n_logits, float temperature);

/* The same over the ids < n_logits with allowed[id] != 0 only (allowed NULL: every id): the
 * normaliser of a constrained distribution. -INFINITY when nothing is allowed. */
double jr_logsumexp_allowed(const float *logits, int n_logits, float temperature, const uint8_t *allowed);

/* The k most likely ids of softmax(logits) (temperature 1) among ids < n_valid, most likely first
 * (ties: lower id first), with their log-probs. allowed NULL: the raw distribution, normalised
 * over all n_logits. allowed given (a constraint's mask over [0, n_valid)): only allowed ids, with
 * log-probs normalised over them, i.e. the constrained distribution the token is drawn from.
 * Writes min(k, candidates) entries and returns that count. */
int jr_top_logprobs(const float *logits, int n_logits, int n_valid, const uint8_t *allowed, int k, int32_t *ids, float *lps);

#endif
