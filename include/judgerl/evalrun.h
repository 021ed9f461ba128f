/* evalrun.h - `judgerl eval`: sample a model (directory, checkpoint, + LoRA adapter) N times per prompt,
 * score the samples with the reward registry and/or IFEval, and tabulate: IFEval Pr(S)/Ins(S)/Pr(L)/
 * Ins(L), mean reward, per-component means and pass@k per data source, unscored counts with reasons.
 * The tabulation (jr_eval_acc) is also what training's eval hook logs under eval/ (docs/EVAL.md). */
#ifndef JUDGERL_EVALRUN_H
#define JUDGERL_EVALRUN_H

#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#include "judgerl/config.h"
#include "judgerl/reward.h"
#include "judgerl/status.h"

/* eval.*: sampling and tabulation (jr_eval_cfg documents each key). */
extern const jr_cfg_field jr_eval_cfg[];

#define JR_EVAL_MAX_K 16

typedef struct jr_eval_opts {
    /* what is evaluated (set by the caller; not config keys) */
    const char *model;       /* model directory or checkpoint directory (an HF model directory) */
    const char *adapter;     /* PEFT LoRA adapter directory merged into the model, or NULL */
    const char *samples;     /* instead of model: rows that already carry a "response" (scored only) */
    const char *data;        /* rows JSONL: "prompt" (text) or "messages" (chat); any other fields */
    const char *out_dir;     /* samples.jsonl and summary.json go here; NULL: nothing written */
    /* eval.* */
    int n;                   /* samples per prompt */
    int max_tokens;
    double temperature;      /* < 0: the model's generation_config.json, else 1 */
    double top_p;            /* <= 0: generation_config.json, else 1 */
    int top_k;               /* < 0: generation_config.json, else 0 (off) */
    double min_p;
    uint64_t seed;
    int parallel;            /* sequences generated at once (>= n) */
    const char *tokenizer;   /* auto | byte | PATH */
    double pass_threshold;   /* a component passes when its value >= this (default 1) */
    int ks[JR_EVAL_MAX_K], n_ks; /* pass@k for these k (those <= the samples of every prompt) */
    int ifeval;              /* score IFEval (rows with instruction_id_list + kwargs) */
    int use_reward;          /* score with `reward` (a config listing reward.components) */
    jr_reward_opts reward;
} jr_eval_opts;

/* Parses "1,10,100" into ks (at most cap); the count, or -1 when s is not positive integers separated by
 * commas (or has more than cap). */
int jr_eval_parse_ks(const char *s, int *ks, int cap);

/* Fills the eval.* part of o from a config loaded with jr_eval_cfg; the reward part from the same
 * config when it lists reward.components (load it with jr_reward_cfg, jr_judge_cfg, jr_protocols_cfg,
 * jr_sandbox_cfg too). model/adapter/samples/data/out_dir are left NULL. */
jr_status jr_eval_opts_from_config(jr_eval_opts *o, const jr_config *c);

/* ---- tabulation ---- */

/* One scored sample as the tables see it. */
typedef struct jr_eval_score {
    const char *source;      /* row "data_source", else "type", else "all" */
    const char *group;       /* the prompt it answers (its samples share pass@k) */
    int has_reward;          /* 0: no reward was asked for */
    int reward_scored;
    double reward;
    const char *reason;      /* why the reward is unscored */
    const double *vals;      /* per component (n_parts of the accumulator) */
    const uint8_t *vscored;
    int has_ifeval;          /* 0: no IFEval asked for */
    int ifeval_scored;       /* 0: the row lacks instructions / they are malformed (ifeval_reason) */
    const char *ifeval_reason;
    int n_instr;
    int strict_ok, loose_ok; /* instructions followed */
    int strict_all, loose_all;
} jr_eval_score;

typedef struct jr_eval_acc jr_eval_acc;

/* A row's data source: its "data_source" string, else its "type", else "all". */
const char *jr_eval_row_source(const json_t *row);

/* An accumulator over samples; part names are copied. pass@k: a component passes when its value is
 * >= pass_threshold; ks as in jr_eval_opts. NULL when out of memory. */
jr_eval_acc *jr_eval_acc_new(int n_parts, const char *const *part_names, double pass_threshold, const int *ks, int n_ks);
jr_status jr_eval_acc_add(jr_eval_acc *a, const jr_eval_score *s);
/* The tables as JSON: {"samples", "prompts", "ifeval": {prompt_strict, inst_strict, prompt_loose,
 * inst_loose, rows, unscored}, "reward": {mean, scored, unscored, components: {name: {mean, scored,
 * "pass@k"...}}}, "by_source": {source: {same reward block}}, "unscored_reasons": {reason: count}}.
 * Unscored samples never count as 0: they are left out of every mean and counted with their reason. */
json_t *jr_eval_acc_summary(const jr_eval_acc *a);
/* Calls put(ud, key, value) for the summary's figures as flat metric names under `prefix` ("eval/"):
 * PREFIX reward, unscored, C/mean, C/pass@K, SOURCE/reward, SOURCE/C/pass@K (with more than one
 * source), ifeval/prompt_strict ... The overall reward is skipped when skip_reward is set (the
 * harness logs it itself). */
void jr_eval_summary_flat(const json_t *summary, const char *prefix, int skip_reward,
                          void (*put)(void *ud, const char *key, double value), void *ud);
void jr_eval_acc_free(jr_eval_acc *a);

/* Prints the tables of a summary as text (IFEval line, then one line per source and component). */
void jr_eval_summary_print(const json_t *summary, FILE *f);

/* ---- the whole evaluation ---- */

/* Generates o->n samples per row of o->data from o->model (+ adapter), or reads o->samples, scores
 * them, writes OUT/samples.jsonl (each row + sample, response, finish_reason, reward, components,
 * ifeval) and OUT/summary.json (each atomically), and returns the summary (*summary, caller decrefs).
 * Errors name the file, line or option. */
jr_status jr_eval_run(const jr_eval_opts *o, json_t **summary);

/* The checkpoint directories of a run (RUN_DIR/checkpoints/step-*), in step order (*dirs: caller frees
 * each and the array). An error names the directory when it has none. */
jr_status jr_eval_checkpoints(const char *run_dir, char ***dirs, int *n);

/* Which of o->model / o->adapter is a run directory (no config.json / adapter_config.json: its
 * checkpoints/step-* are evaluated): 0 neither, 1 the model (full checkpoints), 2 the adapter (LoRA
 * checkpoints), 3 both (an error for jr_eval_run_all). */
int jr_eval_run_dirs(const jr_eval_opts *o);

/* jr_eval_run on o's model, checkpoint or run directory, printed to f: one summary (as
 * jr_eval_summary_print), or for a run directory a header and one row per checkpoint (step, reward,
 * unscored, each component's figures, IFEval), each checkpoint's files in OUT/step-N/. */
jr_status jr_eval_run_all(const jr_eval_opts *o, FILE *f);

#endif
