/* workflow.h - seed 2's workflow language: parser with static checks, the constrained-decoding
 * grammar, and the executor that runs a workflow's operators against an OpenAI-compatible model.
 * The language and every rule are documented in docs/WORKFLOWS.md. */
#ifndef JUDGERL_WORKFLOW_H
#define JUDGERL_WORKFLOW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "judgerl/config.h"
#include "judgerl/constrain.h"
#include "judgerl/rng.h"
#include "judgerl/sandbox.h"
#include "judgerl/status.h"

/* Language limits that are part of the grammar (not options). */
#define JR_WF_NAME_MAX 32      /* bytes in a name */
#define JR_WF_INSTR_MAX 200    /* bytes inside an @"..." instruction */
#define JR_WF_LIST_MAX 9       /* items in a [a, b, ...] list */
#define JR_WF_REPEAT_MAX 9     /* K in `call xK` (2..9) */
#define JR_WF_LOOPS_MAX 5      /* test(code, loops) and refine(x, rounds): 1..5 */

/* The ten operators (AFlow's) plus the bounded refine loop. */
typedef enum {
    JR_WF_ANSWER,     /* answer(x): AnswerGenerate, thought + answer */
    JR_WF_CUSTOM,     /* custom(x, @"instruction"): Custom */
    JR_WF_CODEGEN,    /* codegen(x): CustomCodeGenerate -> code */
    JR_WF_PROGRAM,    /* program(x): Programmer, writes Python and runs it in the sandbox */
    JR_WF_ENSEMBLE,   /* ensemble(list [, mode=llm]): ScEnsemble (local vote, or the letter prompt) */
    JR_WF_MDENSEMBLE, /* mdensemble(list): MdEnsemble, shuffled letter votes */
    JR_WF_TEST,       /* test(code, loops): Test against the row's PUBLIC tests, fix on failure */
    JR_WF_REVIEW,     /* review(x): Review -> a review (pass/fail + feedback) */
    JR_WF_REVISE,     /* revise(x, review): Revise */
    JR_WF_FORMAT,     /* format(x): Format, the bare final answer */
    JR_WF_REFINE,     /* refine(x, rounds): review then revise, at most `rounds` times */
    JR_WF_N_OPS
} jr_wf_op;

/* The operator's name in the language ("answer", ...). */
const char *jr_wf_op_name(jr_wf_op op);

/* Static value kinds. Code is also text (it may go wherever text may). */
typedef enum { JR_WF_TEXT, JR_WF_CODE, JR_WF_REVIEWV, JR_WF_LIST_TEXT, JR_WF_LIST_CODE } jr_wf_kind;

typedef enum { JR_WF_N_CALL, JR_WF_N_VAR, JR_WF_N_LIST, JR_WF_N_INSTR, JR_WF_N_INT } jr_wf_node_kind;

/* One expression node. Arguments of a call and items of a list are node indices in args[]. */
typedef struct jr_wf_node {
    jr_wf_node_kind type;
    jr_wf_kind kind;  /* the value's kind (calls, vars, lists) */
    int line, col;    /* where it starts (1-based; columns count bytes) */
    jr_wf_op op;      /* JR_WF_N_CALL */
    int mode_llm;     /* ensemble(..., mode=llm) */
    int var;          /* JR_WF_N_VAR: statement index that defines it, -1 = the input `problem` */
    int num;          /* JR_WF_N_INT */
    char *instr;      /* JR_WF_N_INSTR: the text between the quotes, owned */
    int n_args;
    int args[4];      /* calls: up to 3 arguments; lists use items[] */
    int n_items;
    int items[JR_WF_LIST_MAX];
} jr_wf_node;

typedef struct jr_wf_stmt {
    char name[JR_WF_NAME_MAX + 1];
    int expr;     /* root node index */
    int repeat;   /* K of `xK`, 1 when absent */
    int line;
    jr_wf_kind kind;
    int calls;    /* most executor calls this statement can make */
} jr_wf_stmt;

typedef struct jr_workflow {
    jr_wf_stmt *stmts;
    int n_stmts;  /* assignments (the return is not one) */
    jr_wf_node *nodes;
    int n_nodes;
    int ret;      /* statement index returned */
    int max_calls;     /* most executor calls the whole workflow can make (static) */
    int n_operators;   /* operator calls written in the text (xK counts once) */
} jr_workflow;

/* Static bounds checked by the parser and built into the constrained grammar. */
typedef struct jr_workflow_limits {
    int max_statements; /* lines that do something, the return included (default 12) */
    int max_depth;      /* call nesting: answer(custom(problem, @"..")) has depth 2 (default 3) */
    int max_calls;      /* most executor calls the workflow can make, counted statically (default 24) */
} jr_workflow_limits;

jr_workflow_limits jr_workflow_limits_default(void);

/* Parses `text` (len bytes; it need not be NUL-terminated) and runs every static check. On success
 * *out owns the workflow (jr_workflow_free). On failure *out is NULL and the message is the first
 * error in the house form "workflow:LINE:COL: what (hint)". JR_EFORMAT for every language error. */
jr_status jr_workflow_parse(const char *text, size_t len, const jr_workflow_limits *lim, jr_workflow **out);
void jr_workflow_free(jr_workflow *w);

/* ===================================== grammar ============================================ */
/* The constrained-decoding form: a finite automaton over bytes that accepts the canonical subset
 * of the language (depth 1: arguments are names or literals; one space after commas and around
 * `=`; lowercase names of at most 12 bytes) and enforces every static rule while the text is
 * written, definition before use included. Every string it accepts passes jr_workflow_parse with
 * the same limits. On failure *out is NULL. */
jr_status jr_workflow_constraint(jr_constraint **out, const jr_token_bytes *v, const jr_workflow_limits *lim);

/* A random valid workflow (the grammar's generator): a walk of the constrained grammar under `lim`
 * over a few whole pieces (`a = ` .. `c = `; every operator; `problem`, a, b, c each with the ")", ", "
 * or "]" after it; " x3", " x5"; "1)", "2)"; one instruction; "["; ", mode=llm)"; `return a` .. `return c`), each step uniform over the pieces the grammar allows
 * next (the end included once the text is a whole workflow). Every result parses and passes the
 * static checks under `lim`. *out is a new string. */
jr_status jr_workflow_random(const jr_workflow_limits *lim, jr_rng *r, char **out);

/* Options of the random workflows (jr_workflow_random_with). */
typedef struct jr_wf_random_opts {
    int ordered_names; /* 1: the k-th assignment is named by the k-th letter (`a`, then `b`, then `c`), so a
                        * workflow's text depends only on its operators and arguments; 0 (jr_workflow_random):
                        * each assignment takes any of a, b, c not yet defined */
} jr_wf_random_opts;

/* jr_workflow_random with options (o NULL: all 0, jr_workflow_random's walk). */
jr_status jr_workflow_random_with(const jr_workflow_limits *lim, const jr_wf_random_opts *o, jr_rng *r, char **out);

/* The operator whose output a workflow returns: the returned statement's call, followed back through the
 * operators that pass an input's content on (ensemble and mdensemble pick one of their items; refine, revise,
 * test and format rework their first argument) to the operator that produced it; one of these applied to
 * `problem` itself is the operator returned. JR_WF_N_OPS ("mixed") when a list's items come from different
 * operators. */
int jr_workflow_returned_op(const jr_workflow *w);

/* ===================================== templates ========================================== */
/* The Layer-2 operator prompts (templates/workflow/: OP_TYPE.txt, else OP.txt), loaded once. The
 * executor renders every call through them, and the executor's SFT data (src/train/wf_executor.c)
 * is rendered from the same texts, so training and use see the same prompts. */
typedef struct jr_wf_templates jr_wf_templates;

/* Loads every operator's template for every task type from `dir` (resolved from the current
 * directory, `cfg_dir` (may be NULL), then the judgerl repository). On error *out is NULL and the
 * message names the missing file. */
jr_status jr_wf_templates_open(jr_wf_templates **out, const char *dir, const char *cfg_dir);
void jr_wf_templates_close(jr_wf_templates *t);

/* Renders op's template for the row's `type` (math, code or qa) with `fields` (an object of
 * strings; borrowed) plus the row's `problem` and `entry_point`. *out is the new prompt. */
jr_status jr_wf_render(const jr_wf_templates *t, jr_wf_op op, const json_t *row, const json_t *fields, char **out);

/* ===================================== executor =========================================== */
/* The executor's options (workflow.* keys; the endpoint, concurrency, retries, rate limits, SSE
 * and cache are the judge client's judge.* keys of the same config). */
typedef struct jr_workflow_opts {
    jr_workflow_limits limits;  /* workflow.max_statements / max_depth / max_calls */
    int budget_calls;           /* executor calls per run (workflow.budget_calls) */
    long budget_tokens;         /* prompt + completion tokens per run (workflow.budget_tokens) */
    double budget_seconds;      /* wall time per run (workflow.budget_seconds) */
    int max_tokens;             /* max_tokens of each call (workflow.max_tokens) */
    double temperature;         /* sampling temperature of each call (workflow.temperature) */
    const char *templates;      /* directory of the Layer-2 operator templates (workflow.templates) */
    uint64_t seed;              /* per-call seeds derive from it (workflow.seed) */
    int parallel;               /* rows run at once by `judgerl workflow run` (workflow.parallel) */
    jr_sandbox_opts sandbox;    /* where program and test run code (sandbox.*) */
} jr_workflow_opts;

extern const jr_cfg_field jr_workflow_cfg[];

/* Fills o from a config loaded with jr_workflow_cfg and jr_sandbox_cfg (strings borrowed from cfg). */
void jr_workflow_opts_from_config(jr_workflow_opts *o, const jr_config *cfg);

typedef struct jr_wf_executor jr_wf_executor;

/* Opens an executor: a judge client over `jo` (the executor endpoint, concurrency, retries, cache:
 * a config's judge.* keys through jr_judge_opts_from_config; its strings must outlive this call)
 * with one extra protocol that passes chat messages through, and the operator templates of
 * o->templates (resolved from the current directory, `cfg_dir` (may be NULL), then the judgerl
 * repository). On error *out is NULL. */
struct jr_judge_opts;
jr_status jr_wf_executor_open(jr_wf_executor **out, const struct jr_judge_opts *jo, const char *cfg_dir, const jr_workflow_opts *o);
void jr_wf_executor_close(jr_wf_executor *e);

/* One run's outcome. An operator or budget failure is an outcome (ok = 0 with a reason), never a
 * fallback answer. */
typedef struct jr_wf_result {
    int ok;          /* 1: answer is the workflow's answer; 0: reason says why there is none */
    char *answer;    /* owned, NULL when !ok */
    char *reason;    /* owned, NULL when ok: "line 2:5: program: ..." or "budget: ..." */
    json_t *trace;   /* owned: {outcome, answer|reason, calls: [{op, line, col, branch, prompt,
                        output, tokens, tokens_source, latency_s, cached, error}], n_calls, tokens,
                        wall_s, max_calls} */
    int n_calls;
    long tokens;
    double wall_s;
} jr_wf_result;

void jr_wf_result_free(jr_wf_result *r);

/* Runs workflow w on one row ({problem, type: math|code|qa, public_tests?, entry_point?, ...}).
 * Returns JR_OK with *out filled whenever there is an outcome (an answer or an explicit failure);
 * an error (out zeroed) only when the row is unusable (the message names the field).
 * Thread-safe: several rows may run at once on one executor. `row_index` seeds the row's calls. */
jr_status jr_workflow_run(jr_wf_executor *e, const jr_workflow *w, const json_t *row, uint64_t row_index, jr_wf_result *out);

/* Gold grading by a verifier, never a judge: maths and QA by equivalence with the row's `answer`, a
 * string or a number (jr_row_text_or_number, as the reward functions read it; jr_answer_equiv: canonical forms, numbers, case and spacing ignored), code by the row's
 * `hidden_tests` (with `entry_point`) run against the answer in the sandbox (every assert must
 * pass). Sets *correct and a one-line why. Fails (nothing set) when the row lacks what its type
 * needs or the sandbox cannot start. */
jr_status jr_wf_grade(const json_t *row, const char *answer, const jr_sandbox_opts *sb, int *correct, char *why, size_t why_len);

/* Reads and parses the workflow file at path (errors prefixed with it). */
jr_status jr_workflow_parse_file(const char *path, const jr_workflow_limits *lim, jr_workflow **w);
/* `judgerl workflow check`: parses the file and prints its static figures to out as one JSON line
 * {"statements": N, "operators": N, "max_calls": N}. */
jr_status jr_workflow_check_file(const char *path, const jr_workflow_limits *lim, FILE *out);

/* Problem rows: the JSON objects of a JSONL file (the shared reader, jr_jsonl_open), each with a
 * string "problem"; an error names the file and line ("FILE:LINE: ..."). *rows (n of them) is the caller's (decref each, free the array). */
jr_status jr_wf_read_problems(const char *path, json_t ***rows, int *n);

/* What jr_workflow_run_rows did: rows, answers, failed runs and, when grading, per domain (math,
 * code, qa) the rows and the correct ones (a failed run counts as wrong). */
typedef struct jr_wf_run_counts {
    int rows, answers, failures;
    int n_dom[3], right_dom[3];
} jr_wf_run_counts;

/* Runs w on every row on `parallel` threads sharing executor e (at most 1024) and writes one JSON line
 * per row to out as it finishes ({id, outcome: answer|failed, answer|reason, n_calls, tokens, wall_s,
 * trace}; with grade (the sandbox for code rows) also {correct, grade} by jr_wf_grade). A row that
 * cannot run (jr_workflow_run or the grading fails) stops the rest: the error names it ("row N: ..."). */
jr_status jr_workflow_run_rows(jr_wf_executor *e, const jr_workflow *w, json_t **rows, int n_rows, int parallel,
                               const jr_sandbox_opts *grade, FILE *out, jr_wf_run_counts *counts);

/* `judgerl workflow run`: parses the workflow file, reads the problem rows, opens the executor of jo
 * (relative paths from cfg_dir, the executor config's directory), runs them all with
 * jr_workflow_run_rows into `output` (NULL: stdout) and logs the counts (and with grade each domain's
 * accuracy) on log as "PREFIXN rows: ...". Errors name the file (a run's: the problems file). */
typedef struct jr_workflow_file_opts {
    const char *workflow, *problems, *cfg_dir, *output;
    int grade;
    FILE *log;
    const char *prefix;
} jr_workflow_file_opts;
jr_status jr_workflow_run_file(const jr_workflow_file_opts *f, const struct jr_judge_opts *jo, const jr_workflow_opts *o);

/* ===================================== tasks ============================================== */
/* Synthetic rows in the seed's shape for `domain` "math" (word problems of 1-4 arithmetic steps on
 * 2-3 digit numbers: {problem, answer, type, steps, program: a reference Python solve()}), "code" (one Python function to write:
 * {problem: signature + docstring, answer: a reference solution, type, entry_point, public_tests,
 * hidden_tests: assert lines}) or "qa" (a fictional knowledge base of people, companies and towns
 * in the question, 1- or 2-hop: {problem, answer, type, hops}). Rows first .. first+n-1 (with ids
 * "DOMAIN-i" and "domain"); row i depends only on (seed, domain, i). *rows is a new array. */
jr_status jr_wf_tasks(const char *domain, long n, uint64_t seed, long first, json_t **rows);
/* n rows of `domain` from index `first` on, skipping every row whose problem text is in `seen` (an array of rows
 * with "problem"; may be NULL or empty) or repeats one taken already: held-out rows that share no problem with
 * the training rows (the code generator repeats problems: about 1,400 distinct in 4,000 rows). Rows keep their
 * ids ("DOMAIN-i", i the index drawn). JR_EINVAL when n such rows are not found within 64 draws a row. */
jr_status jr_wf_tasks_unseen(const char *domain, long n, uint64_t seed, long first, const json_t *seen, json_t **rows);

#endif
