/* cmd_workflow.c - `judgerl workflow`: check a workflow, run it on problems against an executor
 * endpoint (answers and traces as JSONL), write synthetic tasks, train the executor, train a policy
 * that writes workflows (`workflow train`) */
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/eval.h"
#include "judgerl/fsutil.h"
#include "judgerl/judge.h"
#include "judgerl/genrows.h"
#include "judgerl/wf_executor.h"
#include "judgerl/wf_train.h"
#include "judgerl/workflow.h"

static const char *cmd = "workflow";

static void usage_all(FILE *f) {
    fprintf(f, "usage: judgerl workflow run --workflow FILE --problems IN.jsonl --executor CFG.yaml [--output OUT.jsonl] [--grade] [key=value ...]\n"
               "       judgerl workflow check FILE [key=value ...]\n"
               "       judgerl workflow tasks --domain math|code|qa --n N [--seed S] [--first F] [--exclude ROWS.jsonl] [--output OUT.jsonl]\n"
               "       judgerl workflow train-executor [CONFIG.yaml] [--quick] [key=value ...]\n"
               "       judgerl workflow train CONFIG.yaml [key=value ...]   (GRPO on a policy that writes workflows)\n"
               "run: executes the workflow on each row ({id, problem, type: math|code|qa, ...}) against the\n"
               "  executor endpoint of CFG (judge.* keys: endpoints, concurrency, retries, cache; workflow.*\n"
               "  keys: budgets, templates) and writes one line per row: {id, outcome: answer|failed,\n"
               "  answer|reason, n_calls, tokens, wall_s, trace}. A failed run is an outcome, never an answer.\n"
               "  --grade adds {correct, grade} by a verifier (the reference answer; code: hidden tests in the\n"
               "  sandbox) and prints the accuracy per domain.\n"
               "check: parses FILE and prints its static figures, or the first error as workflow:LINE:COL.\n"
               "tasks: seeded synthetic rows in the seed's shape (docs/WORKFLOWS.md). --exclude: skip every row whose\n"
               "  problem is one of ROWS.jsonl's or repeats one taken already (held-out rows apart from training rows).\n"
               "train-executor: the executor model (default configs/wf_executor.yaml): SFT rows rendered from the\n"
               "  operator templates (direct answers, programs, code, review/revise), a BPE tokenizer trained on\n"
               "  them, then SFT; the model lands in run.out_dir/model. --quick: a run of well under a minute.\n");
}

static const jr_cfg_field *const tables[] = {jr_judge_cfg, jr_workflow_cfg, jr_sandbox_cfg, NULL};

static int do_check(int argc, char **argv) {
    if (argc < 2 || argv[1][0] == '-') return cli_usage(cmd, "check needs a workflow FILE");
    jr_config cfg;
    int print_only;
    int rc = cli_load_config(cmd, argc - 1, argv + 1, 0, tables, &cfg, &print_only);
    if (rc) return rc;
    jr_workflow_opts o;
    jr_workflow_opts_from_config(&o, &cfg);
    jr_status st = jr_workflow_check_file(argv[1], &o.limits, stdout);
    jr_config_free(&cfg);
    return st ? cli_fail(cmd, st) : CLI_OK;
}

/* ---- run ---- */
static int do_run(int argc, char **argv) {
    const char *wf_path = NULL, *in_path = NULL, *cfg_path = NULL, *out_path = NULL;
    int grade = 0;
    const jr_arg spec[] = {JR_ARG_S("--workflow", &wf_path), JR_ARG_S("--problems", &in_path), JR_ARG_S("--executor", &cfg_path),
                           JR_ARG_S("--output", &out_path), JR_ARG_B("--grade", &grade, 1), JR_ARGS_END};
    jr_args args;
    int rc = cli_args(cmd, &args, spec, argc, argv, 0, 1, "unexpected argument '%s' (see judgerl workflow --help)");
    if (!rc && (!wf_path || !in_path || !cfg_path)) rc = cli_usage(cmd, "run needs --workflow, --problems and --executor");
    if (rc) { jr_args_free(&args); return rc; }
    jr_config cfg;
    rc = cli_config_load(cmd, cfg_path, args.n_over, args.over, tables, &cfg, 0);
    jr_args_free(&args);
    if (rc) return rc;
    jr_workflow_opts o;
    jr_workflow_opts_from_config(&o, &cfg);
    jr_judge_opts jo;
    char *dup = strdup(cfg_path);
    jr_status st;
    jr_workflow_file_opts f = {.workflow = wf_path, .problems = in_path, .cfg_dir = dup ? dirname(dup) : NULL,
                               .output = out_path, .grade = grade, .log = stderr, .prefix = "judgerl workflow: "};
    if (!(st = dup ? jr_judge_opts_from_config(&jo, &cfg) : jr_fail(JR_ENOMEM, "out of memory")))
        st = jr_workflow_run_file(&f, &jo, &o);
    free(dup);
    jr_config_free(&cfg);
    return st ? cli_fail(cmd, st) : CLI_OK;
}

static int do_tasks(int argc, char **argv) {
    const char *domain = NULL, *out_path = NULL, *exclude = NULL;
    long n = -1, first = 0, seed = 0;
    const jr_arg spec[] = {JR_ARG_S("--domain", &domain), JR_ARG_S("--output", &out_path), JR_ARG_S("--exclude", &exclude),
                           JR_ARG_L("--n", &n, 0, 1L << 40), JR_ARG_L("--first", &first, 0, 1L << 40),
                           JR_ARG_L("--seed", &seed, 0, 1L << 62), JR_ARGS_END};
    int rc = cli_flags(cmd, spec, argc, argv, "unexpected argument '%s' (see judgerl workflow --help)");
    if (rc) return rc;
    if (!domain || n < 0) return cli_usage(cmd, "tasks needs --domain math|code|qa and --n N");
    json_t *rows = NULL, *seen = NULL;
    jr_status st = exclude ? jr_jsonl_read_all(exclude, &seen) : JR_OK;
    if (!st) st = exclude ? jr_wf_tasks_unseen(domain, n, (uint64_t)seed, first, seen, &rows)
                          : jr_wf_tasks(domain, n, (uint64_t)seed, first, &rows);
    json_decref(seen);
    if (st) return cli_fail(cmd, st);
    st = jr_genrows_write(rows, out_path, stdout);
    json_decref(rows);
    return st ? cli_fail(cmd, st) : CLI_OK;
}

static int do_train_executor(int argc, char **argv) {
    const char *cfg_path = "configs/wf_executor.yaml";
    char **over = calloc((size_t)argc + 8, sizeof *over);
    int n_over = 0;
    if (!over) return cli_fail(cmd, jr_fail(JR_ENOMEM, "out of memory"));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--quick"))
            for (int k = 0; jr_wf_exec_quick[k]; k++) over[n_over++] = (char *)jr_wf_exec_quick[k];
        else if (a[0] != '-' && strchr(a, '=')) over[n_over++] = argv[i];
        else if (a[0] != '-' && i == 1) cfg_path = a;
        else { free(over); return cli_usage(cmd, "unexpected argument '%s' (see judgerl workflow --help)", a); }
    }
    volatile sig_atomic_t *stop = cli_stop_on_signals();
    jr_train_result res;
    jr_status st = jr_wf_exec_train(cfg_path, n_over, over, stderr, stop, &res);
    free(over);
    if (st) return cli_fail(cmd, st);
    printf("executor trained: steps %lld..%lld, loss %.4f -> %.4f", (long long)res.first_step, (long long)res.last_step, res.first_loss, res.last_loss);
    if (res.last_val_loss == res.last_val_loss) printf(", validation loss %.4f", res.last_val_loss);
    printf("\n");
    return CLI_OK;
}

/* `workflow train CONFIG.yaml [key=value ...]`: seed 2's GRPO on a policy that writes workflows
 * (jr_wf_train_run, docs/WORKFLOWS.md). */
static int do_train(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl workflow train CONFIG.yaml [key=value ...] [--print-config]\n"
               "GRPO (LoRA) on a policy that writes workflows: prompts are Layer-1 renders of data.train's task rows\n"
               "drawn per step by data.mix, with few-shot examples from the experience buffer; each completion is\n"
               "parsed, run by the executor of wftrain.executor and rewarded by wftrain.reward (seed 2's five\n"
               "components). Per-domain metrics in run.out_dir/metrics.jsonl and TensorBoard; data.validation is\n"
               "the held-out set (eval/gold_acc, a verifier's). trainer.resume=true continues after a kill.\n");
        return CLI_OK;
    }
    jr_config cfg;
    int print_only;
    int rc = cli_load_config("workflow train", argc, argv, 1, jr_wf_train_tables, &cfg, &print_only);
    if (rc) return rc;
    if (print_only) { jr_config_free(&cfg); return CLI_OK; }
    volatile sig_atomic_t *stop = cli_stop_on_signals();
    char *dir = strdup(argv[1]);
    jr_train_result res;
    jr_status st = dir ? jr_wf_train_run(&cfg, dirname(dir), stderr, stop, &res) : JR_ENOMEM;
    free(dir);
    if (st) { jr_config_free(&cfg); return cli_fail("workflow train", st); }
    jr_train_print_opts po;
    jr_train_print_opts_from_config(&po, &cfg);
    po.algo = "grpo"; /* always GRPO: the mean reward */
    jr_train_print_result(stdout, &po, &res);
    jr_config_free(&cfg);
    return CLI_OK;
}

int cmd_workflow(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "train")) return do_train(argc - 1, argv + 1);
    if (argc < 2 || cli_wants_help(argc, argv)) {
        usage_all(argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    if (!strcmp(argv[1], "run")) return do_run(argc - 1, argv + 1);
    if (!strcmp(argv[1], "check")) return do_check(argc - 1, argv + 1);
    if (!strcmp(argv[1], "tasks")) return do_tasks(argc - 1, argv + 1);
    if (!strcmp(argv[1], "train-executor")) return do_train_executor(argc - 1, argv + 1);
    return cli_usage(cmd, "unknown subcommand '%s' (run, check, tasks, train, train-executor)", argv[1]);
}
