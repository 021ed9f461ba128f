/* demo.h - what the demo's stage files share (src/cli/cmd_demo.c owns them): stages in summary.json, child
 * judgerl runs, judge servers */
#ifndef JUDGERL_CLI_DEMO_H
#define JUDGERL_CLI_DEMO_H

#include <sys/types.h>

#include <jansson.h>

#include "judgerl/status.h"

/* A stage record appended to stages ("running"), and its end (status, seconds since t0, note). */
json_t *demo_stage(json_t *stages, const char *name);
void demo_stage_end(json_t *s, const char *status, double t0, const char *note);

/* Runs `judgerl ARGS...` (NULL-terminated) with stdout and stderr appended to log. */
jr_status demo_run_child(const char *log, char *const *args);

/* A judge server started with `judgerl serve --port 0` (the port read from its log). */
typedef struct {
    pid_t pid;
    int port;
} demo_server;
jr_status demo_server_start(demo_server *sv, const char *model, const char *log);
void demo_server_stop(demo_server *sv);

/* The study stage (demo_study.c): GRPO against the unbiased judge and two biased ones with the preference
 * grades as gold, through `judgerl study`, into OUT/study; its figures into sum["study"]. */
typedef struct {
    int steps, gens, prompts, eval_every, n_seeds, probe_rows, probe_variant_rows;
} demo_study_sizes;
jr_status demo_study(const char *out, json_t *sum, json_t *stages, const demo_study_sizes *z);

/* The workflow stage (demo_workflow.c, seed 2): the executor trained (jr_wf_exec_train) and served, a tiny
 * policy SFT'd on random valid workflows, GRPO (LoRA) on the mixed synthetic tasks per seed and a
 * shuffled-reward control, into OUT/workflow; the accuracy tables and criteria into sum["workflow"]. */
typedef struct {
    int quick_executor;          /* the executor's --quick recipe */
    int n_train, n_heldout;      /* task rows per domain */
    int n_sft, sft_steps;        /* the policy's SFT rows and steps */
    int n_random;                /* random workflows per held-out row */
    int steps, gens, prompts;    /* GRPO */
    int n_seeds, control;        /* GRPO runs with run.seed 1..n_seeds, and a shuffled-reward control */
} demo_wf_sizes;
jr_status demo_workflow(const char *out, json_t *sum, json_t *stages, const demo_wf_sizes *z);

#endif
