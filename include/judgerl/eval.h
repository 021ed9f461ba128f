/* eval.h - evaluation: the unbiased pass@k estimator, HumanEval-style functional correctness of
 * code samples in the sandbox, and the loaders that turn HumanEval and GSM8K into judgerl rows */
#ifndef JUDGERL_EVAL_H
#define JUDGERL_EVAL_H

#include <stdio.h>
#include <stddef.h>
#include <jansson.h>

#include "judgerl/sandbox.h"
#include "judgerl/status.h"

/* ---- pass@k ---- */

/* pass@k for one problem with n samples of which c are correct (Chen et al. 2021), in the exact
 * product form HumanEval uses: 1 when n - c < k, else 1 - prod_{i=n-c+1..n} (1 - k / i)
 * (= 1 - C(n-c, k) / C(n, k)). NAN when k < 1, n < k or c is outside [0, n]. The one pass@k of
 * judgerl: every command that reports pass@k calls it. */
double jr_pass_at_k(int n, int c, int k);

/* The mean of jr_pass_at_k over problems (n[i], c[i]); NAN when some n[i] < k (HumanEval then
 * leaves that k out) or m == 0. */
double jr_pass_at_k_mean(const int *n, const int *c, size_t m, int k);

/* A double printed as Python's repr prints it: the shortest text that reads back exactly. */
void jr_fmt_double(char *buf, size_t len, double v);

/* ---- reading JSONL, plain or gzip ---- */

/* Reads every row of a JSONL file, gzip-compressed or not (zlib reads both), into a new array
 * (*rows, caller decrefs). Blank lines are skipped; a bad line is an error naming path:line. */
jr_status jr_jsonl_read_all(const char *path, json_t **rows);

/* ---- HumanEval functional correctness (`judgerl eval code`) ---- */

typedef struct jr_eval_code_opts {
    const char *problems;   /* HumanEval.jsonl[.gz]: task_id, prompt, test, entry_point */
    const char *samples;    /* rows {task_id, completion} (more fields are kept) */
    const char *results;    /* output path; NULL: samples + "_results.jsonl" */
    const int *ks;          /* pass@k for these k (HumanEval: 1, 10, 100) */
    int n_ks;
    int parallel;           /* sandboxes at once (>= 1) */
    int ignore_incomplete;  /* 0: every problem must have a sample (as HumanEval asserts) */
    jr_sandbox_opts sandbox; /* timeout_s is HumanEval's timeout (3.0) */
    /* called after each finished sample from the worker threads, serialized (may be NULL) */
    void (*progress)(void *ud, size_t done, size_t total);
    void *progress_ud;
} jr_eval_code_opts;

/* Scores every sample as HumanEval's evaluate_functional_correctness does: the program is
 * prompt + completion + "\n" + test + "\n" + "check(" + entry_point + ")", run in the sandbox.
 * Writes the results file atomically (each sample row in input order plus "result" and "passed")
 * and returns {"pass@k": value, ...} for every k that every problem has enough samples for
 * (*passk, caller decrefs). On error nothing is written; a sample naming an unknown task, a
 * problem without samples (unless ignore_incomplete) or a sandbox that cannot start is an error. */
jr_status jr_eval_code(const jr_eval_code_opts *o, json_t **passk);
/* Prints passk as one line {"pass@1": 0.5, ...} (numbers as jr_fmt_double writes them). */
void jr_eval_passk_print(const json_t *passk, FILE *f);
/* `judgerl eval code`: jr_eval_code, its pass@k line on out, then on log (NULL: none) the time and
 * where the results went ("PREFIX2.0 s with 4 sandboxes at once; results in FILE"); first a warning
 * when the sandbox is off (sandbox.unsafe). */
jr_status jr_eval_code_report(const jr_eval_code_opts *o, FILE *out, FILE *log, const char *prefix);

/* The whole program HumanEval's own harness runs for one sample (caller frees). judgerl does not run
 * it: `eval code` runs prompt + completion against the test apart (jr_sandbox_python). */
char *jr_humaneval_program(const char *prompt, const char *completion, const char *test, const char *entry_point);

/* ---- rows {problem, answer, type[, entry_point, test]} (docs/EVAL.md) ---- */

/* One HumanEval problem as a row: {id: task_id, problem: prompt, prompt (the same text: the field
 * `judgerl train` reads), answer: canonical_solution, type: "code", entry_point, test}. NULL with a message naming the missing field. */
json_t *jr_row_from_humaneval(const json_t *problem);

/* One GSM8K item ({question, answer: worked solution ending "#### N"}) as a row: {id, problem:
 * question, prompt (the same), answer: N (commas dropped), type: "math", solution: the worked
 * solution}. `id` names
 * it (e.g. "gsm8k/test/17"). NULL with a message when the answer has no "#### " line. */
json_t *jr_row_from_gsm8k(const json_t *item, const char *id);

/* Reads a HumanEval (.jsonl or .jsonl.gz) or GSM8K file (format "humaneval" or "gsm8k") into an
 * array of rows. GSM8K ids are "gsm8k/<file stem>/<index>". */
jr_status jr_rows_load(const char *format, const char *path, json_t **rows);

#endif
