/* cmd_eval.c - `judgerl eval`: evaluation subcommands; `eval code` scores code samples
 * HumanEval-style (sandboxed runs, results file, pass@k) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "judgerl/eval.h"
#include "judgerl/sandbox.h"

static const char *eval_usage =
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

static int parse_ks(const char *s, int *ks, int cap) {
    int n = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 1000000 || n >= cap || (*end && *end != ',')) return -1;
        ks[n++] = (int)v;
        s = *end ? end + 1 : end;
    }
    return n;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

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
            if ((o.n_ks = parse_ks(v, ks, 32)) < 1) { free(over); return cli_usage(cmd, "--k '%s': give positive integers separated by commas", v); }
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
    double t0 = now_s();
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
    fprintf(stderr, "judgerl eval code: %.1f s with %d sandboxes at once; results in %s%s\n", now_s() - t0, o.parallel,
            o.results ? o.results : o.samples, o.results ? "" : "_results.jsonl");
    json_decref(passk);
    jr_config_free(&cfg);
    return CLI_OK;
}

int cmd_eval(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "code")) return eval_code(argc - 1, argv + 1);
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(eval_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    return cli_usage("eval", "unknown subcommand '%s' (available: code)", argv[1]);
}
