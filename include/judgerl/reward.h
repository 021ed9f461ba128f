/* reward.h - the reward registry: named reward functions (rule verifiers and judge protocols),
 * configured with weights and combined per row into one reward, each component reported */
#ifndef JUDGERL_REWARD_H
#define JUDGERL_REWARD_H

#include <stddef.h>
#include <jansson.h>

#include "judgerl/config.h"
#include "judgerl/judge.h"
#include "judgerl/sandbox.h"
#include "judgerl/status.h"

/* The registry's options: reward.components, a list of
 *   {name: str (default: fn), fn: str, weight: float (1), optional: bool (false), params: any ({})}.
 * Load it with jr_judge_cfg and jr_protocols_cfg (judge components read judge.*). */
extern const jr_cfg_field jr_reward_cfg[];

/* ---- reward functions ---- */

/* What a reward function decided for one row. */
typedef enum {
    JR_RW_SCORED = 0, /* out->value set */
    JR_RW_UNSCORED,   /* out->reason set (the row lacks what the function needs, ...) */
    JR_RW_JUDGE       /* out->judge_row set: submit it to the function's protocol; the judge's
                         reward becomes the value */
} jr_rw_rc;

/* Filled by a reward function's eval (zero-initialised by the registry; it takes ownership). */
typedef struct jr_rw_out {
    double value;
    json_t *detail;    /* optional, written to outputs */
    char *reason;      /* JR_RW_UNSCORED: one line (malloc'ed) */
    json_t *judge_row; /* JR_RW_JUDGE: the row to submit (a new reference) */
} jr_rw_out;

struct jr_reward_opts; /* below */

/* A named reward function. Built-ins (see docs/PROTOCOLS.md): reference, rubric, verif, pairwise,
 * label, pointwise (judge); exact, math_verify, final_answer, format, rule, length, efficiency,
 * simplicity, repetition, ifeval (rules); code_tests (runs the response in the sandbox with
 * ro->sandbox: sandbox.* when the config was loaded with jr_sandbox_cfg, else the defaults). */
typedef struct jr_reward_fn {
    const char *name;
    const char *protocol; /* judge protocol JR_RW_JUDGE submits to; NULL: never calls the judge */
    const char *doc;      /* one line */
    /* Checks a component's params when the registry opens (NULL: any params). */
    jr_status (*check)(const json_t *params);
    /* Computes the component for one row. `ro` is the registry's options (ro->judge: judge.reference.*
     * and the other protocols' fields; ro->sandbox: code_tests). Must be callable concurrently; must
     * not keep `row`. */
    jr_rw_rc (*eval)(const struct jr_reward_opts *ro, const json_t *params, const json_t *row, jr_rw_out *out);
} jr_reward_fn;

/* The reward function named `name` (built-in or registered), or NULL. */
const jr_reward_fn *jr_reward_fn_find(const char *name);

/* Adds a reward function (e.g. from a module above this one). The table must outlive every
 * registry. Fails when the name is taken or the table is full. Not thread-safe: call at start-up. */
jr_status jr_reward_fn_register(const jr_reward_fn *fn);

/* ---- the registry ---- */

#define JR_REWARD_MAX_COMPONENTS 32

/* One component (reward.components[i]). */
typedef struct jr_reward_component_opts {
    const char *name;     /* its name in outputs; NULL = fn */
    const char *fn;       /* reward function */
    double weight;
    int optional;         /* unscored: left out of the sum instead of leaving the row unscored */
    const char *gate;     /* counts only in rows where the component of this name is scored and > 0; NULL = always */
    const json_t *params; /* the function's parameters (an object), may be NULL */
} jr_reward_component_opts;

/* The registry's options. Borrowed like jr_judge_opts: keep them alive as long as the registry. */
typedef struct jr_reward_opts {
    int n_components;
    jr_reward_component_opts components[JR_REWARD_MAX_COMPONENTS];
    jr_judge_opts judge;     /* used when a component calls the judge */
    jr_sandbox_opts sandbox; /* used by code_tests (sandbox.* when the config has them, else defaults) */
} jr_reward_opts;

/* Fills o from a config loaded with jr_reward_cfg, jr_judge_cfg and jr_protocols_cfg.
 * o->judge.cache_dir is left NULL (the caller's directory). */
jr_status jr_reward_opts_from_config(jr_reward_opts *o, const jr_config *c);

typedef struct jr_reward jr_reward;

/* One component's result for one row. */
typedef struct jr_reward_part {
    int scored;     /* 1: value is set */
    double value;   /* the function's value, before the weight */
    char *reason;   /* why unscored (owned), NULL when scored */
    json_t *detail; /* function / judge detail (owned), may be NULL */
} jr_reward_part;

/* One row's reward. */
typedef struct jr_reward_result {
    int scored;            /* 1: reward is set; 0: unscored (a non-optional component is unscored) */
    double reward;         /* sum of weight * value over scored components; NAN when unscored */
    char *reason;          /* why unscored: "component 'correctness': <its reason>" (owned) */
    int n_parts;
    jr_reward_part *parts; /* one per component, in config order (owned) */
    int judge_calls;       /* judge calls made for this row (0 when short-circuited or cached) */
    int judge_cached;      /* judge calls answered by the cache */
    double judge_latency_s; /* the slowest of its judge results, submit -> result (0 without one) */
} jr_reward_result;

/* Opens a registry: checks every component (known fn, params), and opens one judge client
 * (jr_judge_open_opts with o->judge) with one protocol handle per judge protocol used when any
 * component needs the judge. `o` is copied; what it borrows must outlive the registry. On error
 * *out is NULL and the message names the component ("reward.components.2 (format): ..."). */
jr_status jr_reward_open_opts(jr_reward **out, const jr_reward_opts *o);

/* Convenience for commands: jr_reward_opts_from_config, then jr_reward_open_opts; `cfg` must
 * outlive the registry. */
jr_status jr_reward_open(jr_reward **out, const jr_config *cfg);

/* Scores n rows (JSON objects with all their fields). Rule components run here; judge
 * components of every row are submitted together and run concurrently on the client. Blocks until
 * every row is done. results[i] belongs to rows[i] (free each with jr_reward_result_free). Fails
 * only when the judge refuses every request (jr_reward_fatal: wrong key, URL or model); then
 * results are still filled (unscored). A row without "id" gets its index as id for the judge.
 * One call at a time per registry (it collects every result of its judge client). */
jr_status jr_reward_score(jr_reward *r, const json_t *const *rows, size_t n, jr_reward_result *results);

void jr_reward_result_free(jr_reward_result *res);

/* The same one row at a time, so grading overlaps whatever produces the rows (GRPO generation):
 * open a batch of `cap` rows whose results go to results[0..cap) (zeroed here); add row i as soon
 * as it exists (rule components run now, judge components are submitted now); finish waits for
 * every judge result, composes each row's reward as jr_reward_score does (a row never added is
 * unscored, reason "not scored"), frees the batch and returns what jr_reward_score would. One
 * batch per registry at a time; not thread-safe. */
typedef struct jr_reward_batch jr_reward_batch;
jr_status jr_reward_batch_open(jr_reward *r, size_t cap, jr_reward_result *results, jr_reward_batch **out);
jr_status jr_reward_batch_add(jr_reward_batch *b, size_t i, const json_t *row);
jr_status jr_reward_batch_finish(jr_reward_batch *b);

/* Shared scoring, for services (judgerl serve-reward): after jr_reward_shared_start, any number of
 * threads may call jr_reward_shared_score at once. Rule components run in the caller's thread;
 * judge components of every caller share the registry's judge client (its per-endpoint
 * concurrency, rate limits and cache apply across callers) and one collector thread hands each
 * judge result to its row. Rows in flight at the same time with identical fields ("id" aside) are
 * computed once and every caller gets the result. Blocks until the caller's n rows are done;
 * results[i] as jr_reward_score gives them. Returns JR_ENET with the message when the judge
 * refused a request in a way no retry fixes (jr_judge_fatal); the results are still filled. Do
 * not use jr_reward_score or batches on a registry that was started for sharing. The collector
 * stops in jr_reward_close. */
jr_status jr_reward_shared_start(jr_reward *r);
jr_status jr_reward_shared_score(jr_reward *r, const json_t *const *rows, size_t n, jr_reward_result *results);

/* A result as JSON: {"reward": x | null, "scored": bool, "reason"?: str,
 * "components": {name: {"value": x | null, "weight": w, "scored": bool, "reason"?, "detail"?}}}. */
json_t *jr_reward_result_json(const jr_reward *r, const jr_reward_result *res);

/* Components: count, names, weights. */
int jr_reward_n_parts(const jr_reward *r);
const char *jr_reward_part_name(const jr_reward *r, int i);
double jr_reward_part_weight(const jr_reward *r, int i);
const char *jr_reward_part_fn(const jr_reward *r, int i); /* the reward function's name */

/* Why rows were unscored, over every row scored since open: "last: R; most frequent (k of n): R2"
 * ("" when none; valid until the next score). Every message about unscored rows carries it. */
const char *jr_reward_unscored_summary(jr_reward *r);
long jr_reward_unscored_count(const jr_reward *r);

/* A row's reference-like field as text: the string, or a number printed into buf (integers %lld,
 * reals %.17g); NULL when the field is missing or of another type. The reward functions and the
 * workflow grader (jr_wf_grade) read "answer" / "reference" this one way. */
const char *jr_row_text_or_number(const json_t *row, const char *field, char *buf, size_t len);

/* The judge client (NULL when no component uses the judge), e.g. for jr_judge_stats_get. */
jr_judge *jr_reward_judge(jr_reward *r);

void jr_reward_close(jr_reward *r);

#endif
