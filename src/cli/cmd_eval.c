/* cmd_eval.c - `judgerl eval`: evaluation subcommands; `eval code` scores code samples
 * HumanEval-style (sandboxed runs, results file, pass@k) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "judgerl/clock.h"
#include "judgerl/eval.h"
#include "judgerl/evalrun.h"
#include "judgerl/fsutil.h"
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
    long nproc = sysconf(_SC_NPROCESSORS_ONLN);
    o.parallel = nproc > 0 ? (int)nproc : 1;
    const char *timeout = NULL;
    char **over = calloc((size_t)argc + 2, sizeof *over);
    int n_over = 0;
    if (!over) return cli_fail(cmd, jr_fail(JR_ENOMEM, "out of memory"));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = !strcmp(a, "--problems") || !strcmp(a, "--samples") || !strcmp(a, "--k") || !strcmp(a, "--timeout-s") ||
                    !strcmp(a, "--parallel") || !strcmp(a, "--results");
        if (takes && !v) { free(over); return cli_usage(cmd, "%s needs a value", a); }
        if (!strcmp(a, "--problems")) o.problems = v;
        else if (!strcmp(a, "--samples")) o.samples = v;
        else if (!strcmp(a, "--results")) o.results = v;
        else if (!strcmp(a, "--timeout-s")) timeout = v;
        else if (!strcmp(a, "--k")) {
            if ((o.n_ks = jr_eval_parse_ks(v, ks, 32)) < 1) { free(over); return cli_usage(cmd, "--k '%s': give positive integers separated by commas", v); }
        } else if (!strcmp(a, "--parallel")) {
            char *end;
            long p = strtol(v, &end, 10);
            if (*end || p < 1 || p > 256) { free(over); return cli_usage(cmd, "--parallel '%s': give an integer in 1..256", v); }
            o.parallel = (int)p;
        } else if (!strcmp(a, "--ignore-incomplete")) o.ignore_incomplete = 1;
        else if (!strncmp(a, "sandbox.", 8) && strchr(a, '=')) over[n_over++] = argv[i];
        else { free(over); return cli_usage(cmd, "unexpected argument '%s'", a); }
        if (takes) i++;
    }
    char tbuf[64];
    if (timeout) {
        char *end;
        double t = strtod(timeout, &end);
        if (*end || !(t > 0 && t <= 3600)) { free(over); return cli_usage(cmd, "--timeout-s '%s': give seconds in (0, 3600]", timeout); }
        snprintf(tbuf, sizeof tbuf, "sandbox.timeout_s=%s", timeout);
        over[n_over++] = tbuf;
    }
    if (!o.problems || !o.samples) { free(over); return cli_usage(cmd, "--problems and --samples are required"); }
    jr_config cfg;
    const jr_cfg_field *tables[] = {jr_sandbox_cfg, NULL};
    jr_status st = jr_config_load(&cfg, NULL, n_over, over, tables);
    free(over);
    if (st) return cli_fail(cmd, st);
    jr_sandbox_opts_from_config(&o.sandbox, &cfg);
    if (o.sandbox.unsafe) fprintf(stderr, "judgerl eval code: warning: sandbox.unsafe=true: the samples run WITHOUT bubblewrap\n");
    double t0 = jr_now_s();
    json_t *passk = NULL;
    st = jr_eval_code(&o, &passk);
    if (st) { jr_config_free(&cfg); return cli_fail(cmd, st); }
    fputc('{', stdout);
    const char *k;
    json_t *v;
    int first = 1;
    json_object_foreach(passk, k, v) {
        char num[40];
        jr_fmt_double(num, sizeof num, json_real_value(v));
        printf("%s\"%s\": %s", first ? "" : ", ", k, num);
        first = 0;
    }
    printf("}\n");
    fprintf(stderr, "judgerl eval code: %.1f s with %d sandboxes at once; results in %s%s\n", jr_now_s() - t0, o.parallel,
            o.results ? o.results : o.samples, o.results ? "" : "_results.jsonl");
    json_decref(passk);
    jr_config_free(&cfg);
    return CLI_OK;
}

/* One row per checkpoint: step, reward, each component's mean and first pass@k, IFEval. */
static void print_step_row(const char *ckpt, const json_t *sum, int header) {
    const char *base = strrchr(ckpt, '/');
    base = base ? base + 1 : ckpt;
    long long step = strtoll(base + 5, NULL, 10);
    json_t *r = json_object_get(sum, "reward"), *f = json_object_get(sum, "ifeval");
    const char *cn, *k;
    json_t *cb, *v;
    if (header) {
        printf("%8s", "step");
        if (r) {
            printf(" %9s %8s", "reward", "unscored");
            json_object_foreach(json_object_get(r, "components"), cn, cb) json_object_foreach(cb, k, v)
                if (json_is_real(v)) printf(" %s/%s", cn, k);
        }
        if (f) printf(" %8s %8s %8s %8s", "Pr(S)", "Ins(S)", "Pr(L)", "Ins(L)");
        printf("\n");
    }
    printf("%8lld", step);
    if (r) {
        json_t *m = json_object_get(r, "mean");
        if (json_is_number(m)) printf(" %9.4f", json_number_value(m));
        else printf(" %9s", "n/a");
        printf(" %8lld", (long long)json_integer_value(json_object_get(r, "unscored")));
        json_object_foreach(json_object_get(r, "components"), cn, cb) json_object_foreach(cb, k, v)
            if (json_is_real(v)) printf(" %*.4f", (int)(strlen(cn) + strlen(k) + 1), json_real_value(v));
    }
    if (f) {
        const char *names[4] = {"prompt_strict", "inst_strict", "prompt_loose", "inst_loose"};
        for (int i = 0; i < 4; i++) {
            v = json_object_get(f, names[i]);
            if (json_is_number(v)) printf(" %8.4f", json_number_value(v));
            else printf(" %8s", "n/a");
        }
    }
    printf("\n");
    fflush(stdout);
}

static int eval_models(int argc, char **argv) {
    const char *cmd = "eval";
    const char *reward = NULL, *out = NULL, *model = NULL, *adapter = NULL, *data = NULL, *samples = NULL;
    static const char *const flag_keys[][2] = {
        {"--n", "eval.n"}, {"--max-tokens", "eval.max_tokens"}, {"--temperature", "eval.temperature"},
        {"--top-p", "eval.top_p"}, {"--top-k", "eval.top_k"}, {"--min-p", "eval.min_p"}, {"--seed", "eval.seed"},
        {"--parallel", "eval.parallel"}, {"--tokenizer", "eval.tokenizer"}, {"--k", "eval.k"},
        {"--pass-threshold", "eval.pass_threshold"}};
    int nf = (int)(sizeof flag_keys / sizeof flag_keys[0]);
    char **over = calloc((size_t)argc + 2, sizeof *over);
    char **owned = calloc((size_t)argc + 2, sizeof *owned);
    int n_over = 0, n_owned = 0, rc = CLI_OK;
    if (!over || !owned) { free(over); free(owned); return cli_fail(cmd, jr_fail(JR_ENOMEM, "out of memory")); }
    for (int i = 1; i < argc && rc == CLI_OK; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char **dst = !strcmp(a, "--model") ? &model : !strcmp(a, "--adapter") ? &adapter : !strcmp(a, "--data") ? &data
                         : !strcmp(a, "--samples") ? &samples : !strcmp(a, "--reward") ? &reward : !strcmp(a, "--out") ? &out : NULL;
        const char *key = NULL;
        for (int f = 0; f < nf && !dst; f++) if (!strcmp(a, flag_keys[f][0])) key = flag_keys[f][1];
        if ((dst || key) && !v) { rc = cli_usage(cmd, "%s needs a value", a); break; }
        if (dst) { *dst = v; i++; }
        else if (key) {
            size_t len = strlen(key) + strlen(v) + 2;
            char *o = malloc(len);
            if (!o) { rc = cli_fail(cmd, jr_fail(JR_ENOMEM, "out of memory")); break; }
            /* comma lists stay one string: quote it for YAML */
            snprintf(o, len, "%s=%s", key, v);
            if (!strcmp(key, "eval.k")) {
                free(o);
                len += 2;
                if (!(o = malloc(len))) { rc = cli_fail(cmd, jr_fail(JR_ENOMEM, "out of memory")); break; }
                snprintf(o, len, "%s='%s'", key, v);
            }
            owned[n_owned++] = over[n_over++] = o;
            i++;
        } else if (!strcmp(a, "--ifeval")) over[n_over++] = "eval.ifeval=true";
        else if (a[0] != '-' && strchr(a, '=')) over[n_over++] = argv[i];
        else rc = cli_usage(cmd, "unknown argument '%s' (see judgerl eval --help)", a);
    }
    jr_config cfg = {0};
    jr_eval_opts o;
    jr_status st = JR_OK;
    char **ckpts = NULL;
    int n_ckpt = 0;
    if (rc == CLI_OK && !model == !samples) rc = cli_usage(cmd, "give --model DIR (with --data ROWS.jsonl) or --samples FILE");
    else if (rc == CLI_OK && model && !data) rc = cli_usage(cmd, "--model needs --data ROWS.jsonl");
    else if (rc == CLI_OK && samples && (data || adapter)) rc = cli_usage(cmd, "--samples already holds the responses: drop --data / --adapter");
    if (rc == CLI_OK) {
        const jr_cfg_field *tables[] = {jr_eval_cfg, jr_reward_cfg, jr_judge_cfg, jr_protocols_cfg, jr_sandbox_cfg, NULL};
        if (!(st = jr_config_load(&cfg, reward, n_over, over, tables))) {
            if (cfg.notes) fputs(cfg.notes, stderr); /* keys given under TRL / PEFT / verl names */
            st = jr_eval_opts_from_config(&o, &cfg);
        }
        if (!st && reward && !o.use_reward) st = jr_fail(JR_EINVAL, "--reward %s: lists no reward.components", reward);
        if (!st && !o.use_reward && !o.ifeval) rc = cli_usage(cmd, "nothing to score: give --reward CFG.yaml and/or --ifeval");
        if (st) rc = cli_fail(cmd, st);
    }
    if (rc == CLI_OK) {
        o.data = data;
        o.samples = samples;
        o.adapter = adapter;
        o.out_dir = out;
        /* a run directory (checkpoints/step-*) as --model (full checkpoints) or as --adapter (LoRA checkpoints) */
        char *cj = model ? jr_path_join(model, "config.json") : NULL, *aj = adapter ? jr_path_join(adapter, "adapter_config.json") : NULL;
        int run_model = model && cj && !jr_path_exists(cj), run_adapter = adapter && aj && !jr_path_exists(aj);
        free(cj);
        free(aj);
        int run_dir = run_model || run_adapter;
        if (run_model && run_adapter) rc = cli_usage(cmd, "give one run directory: --model BASE --adapter RUN_DIR for LoRA runs");
        else if (run_dir && (st = jr_eval_checkpoints(run_model ? model : adapter, &ckpts, &n_ckpt))) rc = cli_fail(cmd, st);
        for (int c = 0; rc == CLI_OK && c < (run_dir ? n_ckpt : 1); c++) {
            char *sub = NULL;
            o.model = run_model ? ckpts[c] : model;
            o.adapter = run_adapter ? ckpts[c] : adapter;
            if (run_dir && out) {
                const char *base = strrchr(ckpts[c], '/');
                if (!(sub = jr_path_join(out, base ? base + 1 : ckpts[c]))) { rc = cli_fail(cmd, jr_fail(JR_ENOMEM, "out of memory")); break; }
                o.out_dir = sub;
            }
            json_t *sum = NULL;
            if ((st = jr_eval_run(&o, &sum))) rc = cli_fail(cmd, st);
            else if (run_dir) print_step_row(ckpts[c], sum, c == 0);
            else jr_eval_summary_print(sum, stdout);
            json_decref(sum);
            free(sub);
        }
        if (rc == CLI_OK && out) fprintf(stderr, "judgerl eval: samples and summary in %s\n", out);
    }
    for (int c = 0; c < n_ckpt; c++) free(ckpts[c]);
    free(ckpts);
    for (int k = 0; k < n_owned; k++) free(owned[k]);
    free(owned);
    free(over);
    jr_config_free(&cfg);
    return rc;
}

int cmd_eval(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "code")) return eval_code(argc - 1, argv + 1);
    if (argc >= 2 && argv[1][0] != '-') return cli_usage("eval", "unknown subcommand '%s' (available: code; or evaluate a model: judgerl eval --model DIR --data ROWS.jsonl ...)", argv[1]);
    if (argc >= 2 && strcmp(argv[1], "-h") && strcmp(argv[1], "--help")) return eval_models(argc, argv);
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(eval_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    return cli_usage("eval", "unknown subcommand '%s' (available: code)", argv[1]);
}
