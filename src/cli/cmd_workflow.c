/* cmd_workflow.c - `judgerl workflow`: check a workflow, run it on problems against an executor
 * endpoint (answers and traces as JSONL), write synthetic tasks */
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/fsutil.h"
#include "judgerl/judge.h"
#include "judgerl/genrows.h"
#include "judgerl/wf_executor.h"
#include "judgerl/workflow.h"

static const char *cmd = "workflow";

static void usage_all(FILE *f) {
    fprintf(f, "usage: judgerl workflow run --workflow FILE --problems IN.jsonl --executor CFG.yaml [--output OUT.jsonl] [--grade] [key=value ...]\n"
               "       judgerl workflow check FILE [key=value ...]\n"
               "       judgerl workflow tasks --domain math|code|qa --n N [--seed S] [--first F] [--output OUT.jsonl]\n"
               "       judgerl workflow train-executor [CONFIG.yaml] [--quick] [key=value ...]\n"
               "       judgerl workflow train CONFIG.yaml [key=value ...]   (GRPO on a policy that writes workflows)\n"
               "run: executes the workflow on each row ({id, problem, type: math|code|qa, ...}) against the\n"
               "  executor endpoint of CFG (judge.* keys: endpoints, concurrency, retries, cache; workflow.*\n"
               "  keys: budgets, templates) and writes one line per row: {id, outcome: answer|failed,\n"
               "  answer|reason, n_calls, tokens, wall_s, trace}. A failed run is an outcome, never an answer.\n"
               "  --grade adds {correct, grade} by a verifier (the reference answer; code: hidden tests in the\n"
               "  sandbox) and prints the accuracy per domain.\n"
               "check: parses FILE and prints its static figures, or the first error as workflow:LINE:COL.\n"
               "tasks: seeded synthetic rows in the seed's shape (docs/WORKFLOWS.md).\n"
               "train-executor: the executor model (default configs/wf_executor.yaml): SFT rows rendered from the\n"
               "  operator templates (direct answers, programs, code, review/revise), a BPE tokenizer trained on\n"
               "  them, then SFT; the model lands in run.out_dir/model. --quick: a run of well under a minute.\n");
}

static const jr_cfg_field *const tables[] = {jr_judge_cfg, jr_workflow_cfg, jr_sandbox_cfg, NULL};

static int load_workflow(const char *path, const jr_workflow_limits *lim, jr_workflow **w) {
    jr_status st = jr_workflow_parse_file(path, lim, w);
    return st ? cli_fail(cmd, st) : CLI_OK;
}

static int do_check(int argc, char **argv) {
    if (argc < 2 || argv[1][0] == '-') return cli_usage(cmd, "check needs a workflow FILE");
    jr_config cfg;
    int print_only;
    int rc = cli_load_config(cmd, argc - 1, argv + 1, 0, tables, &cfg, &print_only);
    if (rc) return rc;
    jr_workflow_opts o;
    jr_workflow_opts_from_config(&o, &cfg);
    jr_workflow *w;
    rc = load_workflow(argv[1], &o.limits, &w);
    if (!rc) {
        printf("{\"statements\": %d, \"operators\": %d, \"max_calls\": %d}\n", w->n_stmts + 1, w->n_operators, w->max_calls);
        jr_workflow_free(w);
    }
    jr_config_free(&cfg);
    return rc;
}

/* ---- run ---- */
static int do_run(int argc, char **argv) {
    const char *wf_path = NULL, *in_path = NULL, *cfg_path = NULL, *out_path = NULL;
    int grade = 0;
    char **over = calloc((size_t)argc + 1, sizeof *over);
    int n_over = 0;
    if (!over) return cli_fail(cmd, jr_fail(JR_ENOMEM, "out of memory"));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "--workflow") && has) wf_path = argv[++i];
        else if (!strcmp(a, "--problems") && has) in_path = argv[++i];
        else if (!strcmp(a, "--executor") && has) cfg_path = argv[++i];
        else if (!strcmp(a, "--output") && has) out_path = argv[++i];
        else if (!strcmp(a, "--grade")) grade = 1;
        else if (a[0] != '-' && strchr(a, '=')) over[n_over++] = argv[i];
        else { free(over); return cli_usage(cmd, "unexpected argument '%s' (see judgerl workflow --help)", a); }
    }
    if (!wf_path || !in_path || !cfg_path) { free(over); return cli_usage(cmd, "run needs --workflow, --problems and --executor"); }
    jr_config cfg;
    jr_status st = jr_config_load(&cfg, cfg_path, n_over, over, tables);
    free(over);
    if (st) return cli_fail(cmd, st);
    if (cfg.notes) fputs(cfg.notes, stderr); /* keys given under TRL / PEFT / verl names */
    jr_workflow_opts o;
    jr_workflow_opts_from_config(&o, &cfg);
    jr_workflow *w = NULL;
    json_t **rows = NULL;
    int n_rows = 0;
    jr_wf_executor *e = NULL;
    FILE *out = stdout;
    int rc = load_workflow(wf_path, &o.limits, &w);
    if (!rc && (st = jr_wf_read_problems(in_path, &rows, &n_rows))) rc = cli_fail(cmd, st);
    if (!rc) {
        char *dup = strdup(cfg_path);
        jr_judge_opts jo;
        st = jr_judge_opts_from_config(&jo, &cfg);
        if (!st) st = dup ? jr_wf_executor_open(&e, &jo, dirname(dup), &o) : jr_fail(JR_ENOMEM, "out of memory");
        free(dup);
        if (st) rc = cli_fail(cmd, st);
    }
    if (!rc && out_path && !(out = fopen(out_path, "w"))) rc = cli_fail(cmd, jr_fail(JR_EIO, "%s: cannot open for writing", out_path));
    if (!rc) {
        jr_wf_run_counts c;
        if ((st = jr_workflow_run_rows(e, w, rows, n_rows, o.parallel, grade ? &o.sandbox : NULL, out, &c)))
            rc = cli_fail(cmd, jr_fail_ctx(st, "%s", in_path));
        else {
            fprintf(stderr, "judgerl workflow: %d rows: %d answers, %d failed runs\n", n_rows, c.answers, c.failures);
            static const char *const dn[3] = {"math", "code", "qa"};
            for (int d = 0; d < 3 && grade; d++)
                if (c.n_dom[d])
                    fprintf(stderr, "judgerl workflow: %s accuracy %.1f%% (%d of %d; failed runs count as wrong)\n", dn[d],
                            100.0 * c.right_dom[d] / c.n_dom[d], c.right_dom[d], c.n_dom[d]);
        }
    }
    if (out && out != stdout && fclose(out) && !rc) rc = cli_fail(cmd, jr_fail(JR_EIO, "%s: write failed", out_path));
    jr_wf_executor_close(e);
    for (int i = 0; i < n_rows; i++) json_decref(rows[i]);
    free(rows);
    jr_workflow_free(w);
    jr_config_free(&cfg);
    return rc;
}

static int do_tasks(int argc, char **argv) {
    const char *domain = NULL, *out_path = NULL;
    long n = -1, first = 0;
    unsigned long long seed = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        char *end = NULL;
        if (!strcmp(a, "--domain") && has) domain = argv[++i];
        else if (!strcmp(a, "--output") && has) out_path = argv[++i];
        else if (!strcmp(a, "--n") && has) { n = strtol(argv[++i], &end, 10); if (*end || n < 0) return cli_usage(cmd, "--n: expected a count >= 0"); }
        else if (!strcmp(a, "--first") && has) { first = strtol(argv[++i], &end, 10); if (*end || first < 0) return cli_usage(cmd, "--first: expected an index >= 0"); }
        else if (!strcmp(a, "--seed") && has) { seed = strtoull(argv[++i], &end, 10); if (*end) return cli_usage(cmd, "--seed: expected an integer"); }
        else return cli_usage(cmd, "unexpected argument '%s' (see judgerl workflow --help)", a);
    }
    if (!domain || n < 0) return cli_usage(cmd, "tasks needs --domain math|code|qa and --n N");
    json_t *rows;
    jr_status st = jr_wf_tasks(domain, n, seed, first, &rows);
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

int cmd_workflow(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "train")) return cmd_workflow_train(argc - 1, argv + 1);
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
