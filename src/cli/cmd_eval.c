/* cmd_eval.c - `judgerl eval`: evaluation subcommands; `eval code` scores code samples
 * HumanEval-style (sandboxed runs, results file, pass@k) */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "judgerl/eval.h"
#include "judgerl/evalrun.h"
#include "judgerl/judge.h"
#include "judgerl/protocols.h"
#include "judgerl/reward.h"
#include "judgerl/sandbox.h"

static const char *eval_usage =
    "usage: judgerl eval (--model DIR|CHECKPOINT|RUN_DIR [--adapter DIR] --data ROWS.jsonl | --samples SAMPLES.jsonl)\n"
    "                    [--n N] [--reward CFG.yaml] [--ifeval] [--out DIR] [--k 1,10,100] [--pass-threshold X]\n"
    "                    [--max-tokens N] [--temperature T] [--top-p P] [--top-k K] [--min-p P] [--seed S]\n"
    "                    [--parallel SLOTS] [--tokenizer auto|byte|PATH] [KEY=VALUE ...]\n"
    "       judgerl eval code ...   (below)\n"
    "\n"
    "Generates N samples per row of ROWS.jsonl (\"prompt\" text or \"messages\") from the model (an HF\n"
    "directory or a checkpoint, with a PEFT adapter merged in), or takes SAMPLES.jsonl rows that already\n"
    "carry a \"response\", and scores every sample with the reward components of CFG.yaml (as `judgerl\n"
    "grade` reads it: reward.*, judge.*, sandbox.*) and/or IFEval (rows with instruction_id_list, kwargs).\n"
    "Prints IFEval Pr(S) Ins(S) Pr(L) Ins(L); the mean reward, each component's mean and pass@k (a sample\n"
    "passes a component when its value >= --pass-threshold, default 1) per data source (row field\n"
    "data_source, else type); unscored samples with their reasons (never counted as 0). With --out, writes\n"
    "DIR/samples.jsonl (each sample with its scores) and DIR/summary.json. RUN_DIR (a directory with\n"
    "checkpoints/step-*) evaluates every checkpoint and prints one row per step (DIR/step-N/...).\n"
    "KEY=VALUE sets eval.* / reward.* / judge.* / sandbox.* keys (docs/EVAL.md).\n"
    "\n"
    "usage: judgerl eval code --problems HumanEval.jsonl[.gz] --samples SAMPLES.jsonl [--k 1,10,100]\n"
    "                         [--timeout-s 3] [--parallel N] [--results FILE] [--ignore-incomplete]\n"
    "                         [sandbox.KEY=VALUE ...]\n"
    "\n"
    "Subcommands:\n"
    "  code   functional correctness of code samples, as HumanEval's evaluate_functional_correctness:\n"
    "         each {task_id, completion} sample runs prompt + completion + test + check(entry_point)\n"
    "         in the sandbox (bubblewrap: no network, read-only /usr, private /tmp, limits); writes\n"
    "         SAMPLES.jsonl_results.jsonl (each row + result + passed) and prints {\"pass@1\": ...}\n"
    "         for each k that every problem has enough samples for.\n"
    "  --problems FILE      problems (task_id, prompt, test, entry_point), plain or gzip\n"
    "  --samples FILE       samples {task_id, completion}, plain or gzip\n"
    "  --k LIST             comma-separated k values (default 1,10,100)\n"
    "  --timeout-s S        wall-clock limit per sample (default 3.0, sandbox.timeout_s)\n"
    "  --parallel N         sandboxes at once (default: online CPUs)\n"
    "  --results FILE       where the results go (default SAMPLES_results.jsonl)\n"
    "  --ignore-incomplete  allow problems without samples (HumanEval requires all by default)\n"
    "  sandbox.KEY=VALUE    sandbox options (docs/EVAL.md), e.g. sandbox.memory_mb=4096;\n"
    "                       sandbox.unsafe=true runs the code WITHOUT bubblewrap\n";

static int eval_code(int argc, char **argv) {
    const char *cmd = "eval code";
    if (cli_wants_help(argc, argv)) { fputs(eval_usage, stdout); return CLI_OK; }
    jr_eval_code_opts o = {0};
    int ks[32] = {1, 10, 100};
    o.ks = ks;
    o.n_ks = 3;
    long nproc = sysconf(_SC_NPROCESSORS_ONLN), parallel = nproc > 0 ? nproc : 1;
    const char *k_list = NULL;
    double timeout = 0;
    const jr_arg spec[] = {
        JR_ARG_S("--problems", &o.problems), JR_ARG_S("--samples", &o.samples), JR_ARG_S("--results", &o.results),
        JR_ARG_D("--timeout-s", &timeout, 1e-9, 3600), JR_ARG_S("--k", &k_list), JR_ARG_L("--parallel", &parallel, 1, 256),
        JR_ARG_B("--ignore-incomplete", &o.ignore_incomplete, 1), JR_ARGS_END};
    jr_args args;
    int rc = cli_args(cmd, &args, spec, argc, argv, 0, 1, "unexpected argument '%s'");
    o.parallel = (int)parallel;
    if (!rc && k_list && (o.n_ks = jr_eval_parse_ks(k_list, ks, 32)) < 1)
        rc = cli_usage(cmd, "--k '%s': give positive integers separated by commas", k_list);
    if (!rc && (!o.problems || !o.samples)) rc = cli_usage(cmd, "--problems and --samples are required");
    if (rc) { jr_args_free(&args); return rc; }
    char tbuf[64];
    snprintf(tbuf, sizeof tbuf, "sandbox.timeout_s=%.17g", timeout);
    if (timeout > 0) args.over[args.n_over++] = tbuf; /* over has room for one more */
    jr_config cfg;
    const jr_cfg_field *tables[] = {jr_sandbox_cfg, NULL};
    jr_status st = jr_config_load(&cfg, NULL, args.n_over, args.over, tables);
    jr_args_free(&args);
    if (st) return cli_fail(cmd, st);
    jr_sandbox_opts_from_config(&o.sandbox, &cfg);
    st = jr_eval_code_report(&o, stdout, stderr, "judgerl eval code: ");
    jr_config_free(&cfg);
    return st ? cli_fail(cmd, st) : CLI_OK;
}

static int eval_models(int argc, char **argv) {
    const char *cmd = "eval";
    const char *reward = NULL, *out = NULL, *model = NULL, *adapter = NULL, *data = NULL, *samples = NULL;
    const jr_arg spec[] = {
        JR_ARG_S("--model", &model), JR_ARG_S("--adapter", &adapter), JR_ARG_S("--data", &data),
        JR_ARG_S("--samples", &samples), JR_ARG_S("--reward", &reward), JR_ARG_S("--out", &out),
        JR_ARG_K("--n", "eval.n"), JR_ARG_K("--max-tokens", "eval.max_tokens"), JR_ARG_K("--temperature", "eval.temperature"),
        JR_ARG_K("--top-p", "eval.top_p"), JR_ARG_K("--top-k", "eval.top_k"), JR_ARG_K("--min-p", "eval.min_p"),
        JR_ARG_K("--seed", "eval.seed"), JR_ARG_K("--parallel", "eval.parallel"), JR_ARG_K("--tokenizer", "eval.tokenizer"),
        JR_ARG_KQ("--k", "eval.k"), /* a comma list stays one string */
        JR_ARG_K("--pass-threshold", "eval.pass_threshold"), JR_ARG_SETK("--ifeval", "eval.ifeval=true"), JR_ARGS_END};
    jr_args args;
    int rc = cli_args(cmd, &args, spec, argc, argv, 0, 1, "unknown argument '%s' (see judgerl eval --help)");
    jr_config cfg = {0};
    jr_eval_opts o;
    jr_status st = JR_OK;
    if (rc == CLI_OK && !model == !samples) rc = cli_usage(cmd, "give --model DIR (with --data ROWS.jsonl) or --samples FILE");
    else if (rc == CLI_OK && model && !data) rc = cli_usage(cmd, "--model needs --data ROWS.jsonl");
    else if (rc == CLI_OK && samples && (data || adapter)) rc = cli_usage(cmd, "--samples already holds the responses: drop --data / --adapter");
    if (rc == CLI_OK) {
        const jr_cfg_field *tables[] = {jr_eval_cfg, jr_reward_cfg, jr_judge_cfg, jr_protocols_cfg, jr_sandbox_cfg, NULL};
        rc = cli_config_load(cmd, reward, args.n_over, args.over, tables, &cfg, 0);
        if (!rc) st = jr_eval_opts_from_config(&o, &cfg);
        if (!rc && !st && reward && !o.use_reward) st = jr_fail(JR_EINVAL, "--reward %s: lists no reward.components", reward);
        if (!rc && !st && !o.use_reward && !o.ifeval) rc = cli_usage(cmd, "nothing to score: give --reward CFG.yaml and/or --ifeval");
        if (st) rc = cli_fail(cmd, st);
    }
    if (rc == CLI_OK) {
        o.data = data;
        o.samples = samples;
        o.model = model;
        o.adapter = adapter;
        o.out_dir = out;
        if (jr_eval_run_dirs(&o) == 3) rc = cli_usage(cmd, "give one run directory: --model BASE --adapter RUN_DIR for LoRA runs");
        else if ((st = jr_eval_run_all(&o, stdout))) rc = cli_fail(cmd, st);
        if (rc == CLI_OK && out) fprintf(stderr, "judgerl eval: samples and summary in %s\n", out);
    }
    jr_args_free(&args);
    jr_config_free(&cfg);
    return rc;
}

int cmd_eval(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "code")) return eval_code(argc - 1, argv + 1);
    if (argc >= 2 && argv[1][0] != '-') return cli_usage("eval", "unknown subcommand '%s' (available: code; or evaluate a model: judgerl eval --model DIR --data ROWS.jsonl ...)", argv[1]);
    if (argc < 2 || cli_wants_help(argc, argv)) {
        fputs(eval_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    return eval_models(argc, argv);
}
