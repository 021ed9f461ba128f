/* wfrl.h - seed 2's training side: the workflow environment (parse, execute, grade, the
 * multi-dimensional reward), the experience buffer (SQLite, per domain, TF-IDF retrieval), the
 * two-layer prompts and the stratified domain mix. docs/WORKFLOWS.md documents every rule. The
 * trainer on top of them is wf_train.h. */
#ifndef JUDGERL_WFRL_H
#define JUDGERL_WFRL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "judgerl/config.h"
#include "judgerl/env.h"
#include "judgerl/reward.h"
#include "judgerl/status.h"
#include "judgerl/workflow.h"

/* ===================================== environment ========================================== */

/* wfenv.* : how a policy's workflow becomes a reward. */
typedef struct jr_wf_env_opts {
    double price_per_1k;    /* executor price per 1,000 tokens (wfenv.price_per_1k): cost = tokens / 1000 x price */
    double invalid_reward;  /* a workflow that does not parse (wfenv.invalid_reward) */
    double failed_reward;   /* a workflow that parses but has no answer (wfenv.failed_reward) */
    int parallel;           /* workflows executed at once (wfenv.parallel) */
} jr_wf_env_opts;

extern const jr_cfg_field jr_wf_env_cfg[];
void jr_wf_env_opts_from_config(jr_wf_env_opts *o, const jr_config *c);

/* Registers the reward function `workflow_correctness` (once; thread-safe): maths and QA rows go to
 * the reference protocol (judge.reference.correct / incorrect, a normalised match short-circuits),
 * code rows are run against their hidden_tests in the sandbox (ro->sandbox) and score
 * judge.reference.correct when every assert holds, else judge.reference.incorrect. Call it before
 * opening a registry whose config names it. */
jr_status jr_wf_reward_register(void);

/* The workflow environment: the completion is a workflow's text. Each sample is parsed with the
 * executor's limits (wo->limits), run on its row by `ex`, and the answer scored by the registry `rw`
 * (its components are the environment's parts) on a row {id, prompt: the problem, problem, response:
 * the answer, answer, type, entry_point, hidden_tests, cost, latency, operator_count, workflow}.
 * A workflow that does not parse scores o->invalid_reward, one without an answer o->failed_reward
 * (parts unscored); a row the registry leaves unscored (a judge failure) stays UNSCORED. detail:
 * {valid, outcome, answer | reason, n_operators, operators, n_calls, tokens, wall_s, cost, gold_correct
 * (or gold_error: why the verifier could not grade the answer), domain, components, trace}. `sb` grades gold accuracy (a verifier, never the judge). ex, rw, wo and
 * sb are borrowed and must outlive the environment. */
jr_status jr_env_from_workflow(jr_env *env, jr_wf_executor *ex, jr_reward *rw, const jr_workflow_opts *wo,
                               const jr_wf_env_opts *o);

struct jr_wf_buffer;

/* Attaches an experience buffer to a workflow environment: every scored training sample (a row
 * without "split": "heldout") is offered to it (jr_wf_buffer_add with the row's problem and type,
 * the workflow and the reward), tagged with *step as it is when the results come in. */
void jr_wf_env_set_buffer(jr_env *env, struct jr_wf_buffer *b, const int64_t *step);

/* The shuffled-reward control (grpo.shuffle_rewards) for the buffer: each flush's scored training samples are
 * offered to it with the reward of another of them (a permutation seeded by (seed, *step)), as the trainer moves
 * the rewards for its advantages, so the buffer keeps what the shuffled rewards select, not the rewarded
 * workflows. Without it a control's buffer would hold the right workflows and its few-shot examples teach them. */
void jr_wf_env_shuffle_buffer(jr_env *env, uint64_t seed);

/* The per-domain statistics of the samples finished since the last call for the held-out rows
 * (heldout = 1: rows with "split": "heldout") or the training rows (0), handed to put(ud, key, value)
 * and reset. For DOM in math, code, qa (those seen) and overall, keys PREFIX + DOM + "/" +: n, reward
 * (the mean over scored samples), every component's name (its mean), gold_acc (the verifier's
 * accuracy, failed and invalid workflows counted wrong), gold_errors (only when some: the share of
 * answers the verifier could not grade, counted wrong in gold_acc), valid_rate (parsed), answer_rate (ran to an
 * answer), unscored, operators (mean operator calls of the valid ones), executor_tokens (mean),
 * op/NAME (the share of valid workflows that use operator NAME). Returns the overall gold accuracy
 * (NAN when there were none). */
double jr_wf_env_stats_flush(jr_env *env, int heldout, const char *prefix, void (*put)(void *ud, const char *key, double v),
                             void *ud);

/* ===================================== experience buffer ==================================== */

/* buffer.* */
typedef struct jr_wf_buffer_opts {
    const char *path;       /* SQLite file (buffer.path; NULL: RUN/buffer.sqlite by the caller) */
    double threshold;       /* keep samples with reward >= this (buffer.threshold, 8.0) */
    int cap;                /* per domain, the lowest reward evicted (buffer.cap, 100) */
    int top_k;              /* few-shot examples retrieved (buffer.top_k, 3) */
    double min_similarity;  /* cosine below this is not retrieved (buffer.min_similarity, 0.05) */
    double min_win_rate;    /* a workflow that won less than this share of its tries in a domain is not retrieved
                               there (buffer.min_win_rate, 0.2; 0: off) ... */
    int min_tries;          /* ... once tried this often there (buffer.min_tries, 10) */
} jr_wf_buffer_opts;

extern const jr_cfg_field jr_wf_buffer_cfg[];
void jr_wf_buffer_opts_from_config(jr_wf_buffer_opts *o, const jr_config *c);

typedef struct jr_wf_buffer jr_wf_buffer;

jr_status jr_wf_buffer_open(jr_wf_buffer **out, const jr_wf_buffer_opts *o);
void jr_wf_buffer_close(jr_wf_buffer *b);

/* Offers a sample: kept when reward >= threshold and (problem, workflow) is not there yet; then the
 * domain is cut to `cap` entries (lowest reward first, then oldest). *added (may be NULL): 1 when kept
 * and not evicted at once. `step` tags the entry (jr_wf_buffer_truncate). */
jr_status jr_wf_buffer_add(jr_wf_buffer *b, const char *domain, const char *problem, const char *workflow,
                           double reward, int64_t step, int *added);

/* Records the tries of n scored samples at `step` in one transaction: workflows[i] (its text without trailing
 * white space is its key) in domains[i], a win when rewards[i] >= threshold; a NAN reward (unscored) is no try.
 * Retrieval leaves out an entry whose workflow has min_tries tries or more in the domain and won less than
 * min_win_rate of them, unless no workflow of the domain has a higher win rate (a hard domain keeps its best): an entry that got in by one lucky success of a workflow that rarely works is not
 * shown as an example (a policy that copies its examples would copy the workflow that rarely works). */
jr_status jr_wf_buffer_record(jr_wf_buffer *b, size_t n, const char *const *domains, const char *const *workflows,
                              const double *rewards, int64_t step);

/* Drops every entry and every try recorded at a step >= `step` (a resume from a checkpoint taken after step-1). */
jr_status jr_wf_buffer_truncate(jr_wf_buffer *b, int64_t step);

/* Entries of a domain (NULL: all). */
jr_status jr_wf_buffer_count(jr_wf_buffer *b, const char *domain, int64_t *n);

/* One retrieved example. */
typedef struct jr_wf_example {
    char *problem, *workflow;
    double reward, similarity;
} jr_wf_example;

/* The top_k entries of `domain` by cosine similarity of `problem` to theirs (hashed word +
 * bigram TF-IDF vectors, IDF over the domain's entries), those at or above min_similarity, best
 * first; entries whose workflow's record of tries fails min_win_rate (jr_wf_buffer_record) are left out. *ex is a new array of *n (jr_wf_examples_free). */
jr_status jr_wf_buffer_retrieve(jr_wf_buffer *b, const char *domain, const char *problem, jr_wf_example **ex, int *n);
void jr_wf_examples_free(jr_wf_example *ex, int n);

/* Cosine similarity of two texts under the buffer's representation with unit IDF (tests). */
double jr_wf_text_similarity(const char *a, const char *b);

/* ===================================== prompts ============================================== */

/* Renders the Layer-1 prompt (the workflow-generation prompt) of `row` (problem, type) from the
 * template text `tmpl` (templates/workflow_layer1.txt) with fields problem, type, is_math / is_code /
 * is_qa (the task type's guidance sections), examples (the few-shot block: "Example i (reward r)",
 * the problem, the workflow; "" when none) and n_examples. New string in *out. */
jr_status jr_wf_layer1_render(const char *tmpl, const json_t *row, const jr_wf_example *ex, int n_ex, char **out);

/* ===================================== mix ================================================== */

/* The stratified mix: per-step counts of n draws over k domains with weights w (summing to > 0):
 * floor(n w_i / sum) each, the remaining ones to the largest fractional parts (ties broken by a
 * seeded shuffle of (seed, step)). counts[k] sums to n exactly. */
jr_status jr_wf_mix_counts(const double *w, int k, int n, uint64_t seed, int64_t step, int *counts);

#endif
