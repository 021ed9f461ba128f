/* wf_executor.h - the workflow executor model trained by judgerl: one operator-agnostic SFT recipe
 * (direct answers, programs and code of the synthetic tasks, mixed, rendered from the executor's
 * own operator templates), a BPE tokenizer trained on that data, then `trainer.algo sft`.
 * docs/WORKFLOWS.md, "The executor model". */
#ifndef JUDGERL_WF_EXECUTOR_H
#define JUDGERL_WF_EXECUTOR_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "judgerl/config.h"
#include "judgerl/status.h"
#include "judgerl/train.h"

/* The executor.* options (the SFT data and tokenizer; the model and trainer are the usual tables). */
extern const jr_cfg_field jr_wf_exec_cfg[];

typedef struct jr_wf_exec_opts {
    long n_per_domain;     /* executor.n_per_domain: task rows 0..n-1 of each generator (math, code, qa) */
    uint64_t task_seed;    /* executor.task_seed: the generators' seed */
    double review_frac;    /* executor.review_frac: share of task rows that also give a review and a revise row */
    int vocab_size;        /* executor.vocab_size: the BPE tokenizer's size, specials included */
    int digit_space;       /* executor.digit_space: a digit's token keeps the space before it */
    const char *templates; /* executor.templates: the operator templates (the executor's workflow.templates) */
    const char *out_dir;   /* run.out_dir: sft.jsonl, tokenizer/ and the training run go here */
} jr_wf_exec_opts;

/* Fills o from a config loaded with jr_run_cfg and jr_wf_exec_cfg (strings borrowed from cfg);
 * a missing table or key is returned as an error naming it. */
jr_status jr_wf_exec_opts_from_config(jr_wf_exec_opts *o, const jr_config *cfg);

/* The SFT rows: for each task row, {"messages": [user: the operator's rendered prompt, assistant:
 * the reference reply], "op", "domain", "id"} for `answer` (all domains), `program` (math: the
 * row's reference solve()) and `codegen` (code: the reference function); for review_frac of them
 * also `review` (of the reference answer or of a corrupted one: true/false + feedback) and `revise`
 * (to the reference answer). Shuffled with task_seed. `cfg_dir` resolves the templates (may be
 * NULL). *rows is a new array. */
jr_status jr_wf_exec_sft_rows(const jr_wf_exec_opts *o, const char *cfg_dir, json_t **rows);

/* Writes out_dir/sft.jsonl (jr_wf_exec_sft_rows) and out_dir/tokenizer/ (tokenizer.json: a byte-level
 * BPE of vocab_size trained on those rows' text, specials <|endoftext|> <|im_start|> <|im_end|>
 * last; tokenizer_config.json with a ChatML template). Files are written atomically. */
jr_status jr_wf_exec_prepare(const jr_wf_exec_opts *o, const char *cfg_dir, long *n_rows);

/* The whole recipe from a YAML config (configs/wf_executor.yaml) with `key=value` overrides:
 * prepare the data and tokenizer under run.out_dir, then SFT (jr_train_run) with data.train and
 * trainer.tokenizer pointing at them. The final model is run.out_dir/model (an HF directory that
 * `judgerl serve` loads, tokenizer and chat template included). Progress to `progress` (may be
 * NULL); *stop as jr_train_run. */
jr_status jr_wf_exec_train(const char *config_path, int n_over, char *const *over, FILE *progress,
                           volatile sig_atomic_t *stop, jr_train_result *res);

/* The overrides `--quick` adds (NULL-terminated): a run that trains in well under a minute. */
extern const char *const jr_wf_exec_quick[];

#endif
