/* eightball.h - the magic 8-ball demo, a program on libjudgerl: its sizes (configs/eightball/demo.yaml), its
 * run context, the stage table, and the helpers the stage files share */
#ifndef EIGHTBALL_H
#define EIGHTBALL_H

#include <signal.h>
#include <stdio.h>
#include <sys/types.h>

#include <jansson.h>

#include "judgerl/config.h"
#include "judgerl/status.h"

#define EB_MAX_EXEC_OVER 8

/* The sizes of every stage (keys demo.*): configs/eightball/demo.yaml, --quick configs/eightball/demo-quick.yaml. */
typedef struct eb_sizes {
    int policy_steps;                                /* demo.policy.steps */
    int judge_steps, biased_steps;                   /* demo.judges.* */
    int heldout_samples;                             /* demo.heldout.samples */
    int grpo_steps, grpo_gens, grpo_prompts;         /* demo.grpo.* */
    int probe_bias_steps, probe_pair_steps, probe_rows, probe_variant_rows; /* demo.probe.* */
    int pref_steps;                                  /* demo.policy_pref.steps */
    int study_steps, study_gens, study_prompts, study_eval_every, study_seeds, study_probe_rows,
        study_probe_variant_rows;                    /* demo.study.* */
    double study_lr, study_noise_z, study_proxy_rise; /* demo.study.lr, noise_z, proxy_rise */
    int study_trend_window;                           /* demo.study.trend_window */
    int wf_quick_executor;                           /* demo.workflow.quick_executor: the executor's --quick recipe */
    char wf_executor_url[256];                       /* demo.workflow.executor_url: an executor served elsewhere, or "" */
    char wf_exec_over[EB_MAX_EXEC_OVER][96];         /* demo.workflow.executor: key=value overrides of the executor's recipe */
    int wf_exec_n_over;
    int wf_train_rows, wf_heldout_rows;              /* demo.workflow.*_rows: task rows per domain */
    int wf_sft_rows, wf_sft_steps;                   /* the policy's SFT on random valid workflows */
    double wf_sft_copy, wf_sft_follow;               /* share of SFT rows with a few-shot example, and of those copying it */
    int wf_sft_statements, wf_sft_ordered_names;     /* their bound and names (demo.workflow.sft_statements, sft_names) */
    int wf_random;                                   /* random workflows per held-out row */
    int wf_steps, wf_gens, wf_prompts;               /* GRPO */
    int wf_seeds, wf_control;                        /* GRPO runs: run.seed 1..wf_seeds, and a shuffled-reward control */
} eb_sizes;

extern const jr_cfg_field eb_cfg[];

/* Fills z from a config loaded with eb_cfg; an error names the key and the file. */
jr_status eb_sizes_from_config(eb_sizes *z, const jr_config *c);

/* One demo run. Paths in configs and data are relative to the repository (the current directory
 * once eb_run has entered it). */
typedef struct eb_ctx {
    const char *out;        /* the output directory, absolute */
    const char *judgerl;    /* the binary started as `judgerl serve` */
    char log[4200];         /* OUT/demo.log: what the stages report while they run */
    FILE *logf;
    eb_sizes z;
    int quick;
    json_t *sum, *stages;   /* summary.json and its "stages" list */
    json_t *answers;        /* data/eightball/answers.jsonl: [{label, text}] */
    json_t *before;         /* the SFT policy's held-out samples (stage heldout-before) */
    volatile sig_atomic_t *stop; /* SIGINT / SIGTERM: training stops at a checkpoint, no stage starts */
    pid_t wf_exec_pid;      /* the workflow executor trained in the background (eb_workflow_executor_start), or <= 0 */
} eb_ctx;

/* A stage: `run` does its work and writes a one-line note (shown in the report); the runner keeps
 * its record in summary.json's stages (name, status running/done/failed/skipped, seconds, note).
 * name NULL: a step without a record (summaries computed from earlier stages). */
typedef struct eb_stage {
    const char *name;
    jr_status (*run)(eb_ctx *c, const void *arg, char *note, size_t cap);
    const void *arg;
    int seed1; /* 1: part of seed 1 (run by --seed1-only); 0: the modern path */
    const char *banner; /* printed on stderr before the stage when not NULL */
} eb_stage;

/* The stages, in order (eightball.c); each lives in its own stage_*.c file. */
jr_status eb_stage_seed1(eb_ctx *c, const void *arg, char *note, size_t cap);
jr_status eb_stage_policy(eb_ctx *c, const void *arg, char *note, size_t cap);
jr_status eb_stage_policy_pref(eb_ctx *c, const void *arg, char *note, size_t cap); /* stage_policy.c */
jr_status eb_stage_judges(eb_ctx *c, const void *arg, char *note, size_t cap);
jr_status eb_stage_heldout(eb_ctx *c, const void *arg, char *note, size_t cap);
jr_status eb_stage_grpo(eb_ctx *c, const void *arg, char *note, size_t cap); /* arg: the judge's name */
jr_status eb_stage_summaries(eb_ctx *c, const void *arg, char *note, size_t cap);
jr_status eb_stage_probe_judges(eb_ctx *c, const void *arg, char *note, size_t cap);
jr_status eb_stage_probe(eb_ctx *c, const void *arg, char *note, size_t cap);
jr_status eb_stage_study(eb_ctx *c, const void *arg, char *note, size_t cap);
/* seed 2 (stage_workflow.c): the executor trained and served, a policy SFT'd on random valid workflows, GRPO per
 * seed and a shuffled-reward control, the held-out tables in sum["workflow"] (OUT/workflow) */
jr_status eb_stage_workflow(eb_ctx *c, const void *arg, char *note, size_t cap);
/* Starts the workflow stage's executor training as a child process (`judgerl workflow train-executor`, the
 * stage's arguments; OUT/workflow-executor.log) so it runs beside the earlier stages; the stage waits for it.
 * Nothing when OUT/workflow/executor already holds that executor. */
jr_status eb_workflow_executor_start(eb_ctx *c);

/* The program: `judgerl demo` and examples/eightball/main.c. Parses argv ([--out DIR] [--quick]
 * [--seed1-only] [--workflow-only] [--config FILE]), runs every stage, writes OUT/summary.json and OUT/report.html and
 * prints the summary; returns the exit code (0, 1 failure, 2 usage). judgerl: the binary to start as
 * `judgerl serve`; cmd: the command's name in messages. */
int eb_main(const char *cmd, int argc, char **argv, const char *judgerl);

/* ---- helpers (common.c) ---- */

/* OUT/NAME (or OUT/NAME/REST...) into buf; buf. */
char *eb_path(const eb_ctx *c, char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Trains with `config` + overrides into dir, in this process (jr_train_run, progress in the log),
 * unless dir/model holds a model trained with exactly these arguments (dir/demo-args.txt), so a
 * second demo reuses it; a stale or partial dir is removed first (jr_rmtree). */
jr_status eb_train_or_reuse(eb_ctx *c, const char *dir, const char *config, char *const *over, int n_over, int *reused);
/* The same with another trainer (the workflow executor's recipe, jr_wf_exec_train); cmd: the judgerl command
 * that trains the same, the stamp's first line. */
struct jr_train_result;
typedef jr_status (*eb_trainer)(const char *config, int n_over, char *const *over, FILE *log, volatile sig_atomic_t *stop,
                                struct jr_train_result *res);
jr_status eb_train_or_reuse_with(eb_ctx *c, const char *dir, const char *cmd, const char *config, char *const *over, int n_over,
                                 eb_trainer train, int *reused);
/* The stamp dir/demo-args.txt of a model trained with these arguments: matches NULL writes it; otherwise *matches
 * is 1 when dir/model exists and its stamp holds exactly these arguments. */
jr_status eb_stamp(const char *dir, const char *cmd, const char *config, char *const *over, int n_over, int *matches);

/* `judgerl ARGS...` (args NULL-terminated, without the binary) as a background child, stdout and stderr to log,
 * with OMP_WAIT_POLICY=PASSIVE (its idle threads sleep: spinning ones starved the other processes on the cores) and
 * with single_thread OMP_NUM_THREADS=1 (the judge and executor servers, the background training); SIGTERM
 * if the demo dies. eb_wait_child waits for it (stopping it on *c->stop): OK on exit 0, else a failure naming what and log;
 * eb_stop_child: SIGTERM, SIGKILL after 10 s. Both set *pid to -1. */
jr_status eb_spawn(eb_ctx *c, char *const *args, const char *log, int single_thread, pid_t *pid);
jr_status eb_wait_child(eb_ctx *c, pid_t *pid, const char *what, const char *log);
void eb_stop_child(pid_t *pid);

/* A judge model served by `judgerl serve` as a child process on a free port (--port 0), the port
 * read from the file serve writes once it is ready (--port-file). The child gets SIGTERM if the demo dies. */
typedef struct eb_server {
    pid_t pid;
    int port;
    char port_file[4200]; /* OUT/serve-NAME.port, removed by eb_server_stop */
} eb_server;
jr_status eb_server_start(eb_ctx *c, eb_server *sv, const char *model, const char *name);
void eb_server_stop(eb_server *sv);

/* n samples per held-out question (temperature 1, seed 7, 32 tokens) of the model in model_dir, in this
 * process (jr_genrows_run); written to out_jsonl; *rows gets them. */
jr_status eb_generate(eb_ctx *c, const char *model_dir, const char *out_jsonl, int n, json_t **rows);

/* Grades rows with the label judge of configs/eightball/judge-label.yaml served on port, in this
 * process (the reward registry); OUT/eval/NAME-graded.jsonl gets the rows with reward / status.
 * *rewards (may be NULL) gets one number or null per row; mean over scored rows, unscored share,
 * mean judge latency (s). */
jr_status eb_grade(eb_ctx *c, const json_t *rows, int port, const char *name, double *mean, double *unscored,
                   double *latency, json_t **rewards);

/* The JSON objects of a JSONL file (jr_genrows_read without the "_line" fields); an unreadable or empty
 * file or a bad line is an error naming it. */
jr_status eb_load_jsonl(const char *path, json_t **out);

/* The judge endpoint override for a server on port (buf). */
char *eb_endpoint(char *buf, size_t cap, int port);

#endif
