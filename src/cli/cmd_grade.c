/* cmd_grade.c - `judgerl grade`: the command line of jr_grade_file (grade.h), which grades a JSONL
 * file, appends + fsyncs each finished row and resumes after any kill */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "judgerl/grade.h"
#include "judgerl/judge.h"
#include "judgerl/protocols.h"
#include "judgerl/reward.h"
#include "judgerl/sandbox.h"

static void print_help(void) {
    printf("usage: judgerl grade --config JUDGE.yaml --input IN.jsonl --output OUT.jsonl [key=value ...]\n"
           "                     [--retry-unscored] [--quiet] [--progress] [--print-config]\n"
           "Grades rows {id, prompt, response[, reference][, rubric]} with the judge of the config (judge.*,\n"
           "see docs/JUDGE.md), or with reward.components when the config lists them (docs/PROTOCOLS.md).\n"
           "Each finished row is appended to OUT.jsonl and fsynced: the input row's fields (prompt, response, ...)\n"
           "  with {id, reward (null when unscored), scores, status: ok|unscored, attempts, cached, latency_s, error, detail}\n"
           "set over them. Rows are appended as they finish; a complete run then rewrites OUT.jsonl atomically in\n"
           "the input's order (an interrupted one keeps the finishing order, which resume needs).\n"
           "Rerunning resumes: rows already in OUT.jsonl are skipped (a torn last line is dropped), so every\n"
           "row is written exactly once; unscored rows are graded again (replaced) unless --keep-unscored.\n"
           "judge.cache: true keeps the judge's answers in judge_cache.sqlite beside OUT.jsonl (docs/JUDGE.md).\n"
           "Prints a JSON summary on stdout; a progress bar on stderr when it is a terminal (--progress forces it).\n"
           "Stops with exit 1 when judge.max_unscored_frac of the rows are unscored, and at once, writing no row\n"
           "for it, on a configuration error: the server is not running, refuses the key, model or URL (HTTP\n"
           "401/403/404), or the first prompts do not fit its context.\n");
}

int cmd_grade(int argc, char **argv) {
    const char *cmd = "grade";
    if (cli_wants_help(argc, argv)) {
        print_help();
        return CLI_OK;
    }
    const char *cfg_path = NULL, *in_path = NULL, *out_path = NULL;
    int print_only = 0, quiet = 0, force_progress = 0, retry_unscored = 1;
    const jr_arg spec[] = {
        JR_ARG_S("--config", &cfg_path), JR_ARG_S("--input", &in_path), JR_ARG_S("--output", &out_path),
        JR_ARG_B("--print-config", &print_only, 1), JR_ARG_B("--quiet", &quiet, 1), JR_ARG_B("--progress", &force_progress, 1),
        JR_ARG_B("--retry-unscored", &retry_unscored, 1), /* the default; kept for old scripts */
        JR_ARG_B("--keep-unscored", &retry_unscored, 0), JR_ARGS_END};
    jr_args args;
    int rc = cli_args(cmd, &args, spec, argc, argv, 0, 1, "unexpected argument '%s'");
    if (rc) { jr_args_free(&args); return rc; }
    const jr_cfg_field *tables[] = {jr_judge_cfg, jr_protocols_cfg, jr_reward_cfg, jr_sandbox_cfg, NULL};
    jr_config cfg;
    rc = cli_config_load(cmd, cfg_path, args.n_over, args.over, tables, &cfg, print_only);
    jr_args_free(&args);
    if (rc) return rc;
    if (print_only) { jr_config_free(&cfg); return CLI_OK; }
    if (!cfg_path || !in_path || !out_path) {
        jr_config_free(&cfg);
        return cli_usage(cmd, "--config, --input and --output are required");
    }
    jr_reward_opts ro;
    jr_status st;
    if ((st = jr_reward_opts_from_config(&ro, &cfg))) { jr_config_free(&cfg); return cli_fail(cmd, st); }
    jr_grade_opts go;
    jr_grade_opts_init(&go, &ro);
    go.retry_unscored = retry_unscored;
    go.log = quiet ? NULL : stderr;
    go.progress = force_progress || (!quiet && isatty(2)) ? stderr : NULL;
    go.stop = cli_stop_on_signals();
    char *summary;
    st = jr_grade_file(&go, in_path, out_path, &summary);
    jr_config_free(&cfg);
    if (st) return cli_fail(cmd, st);
    printf("%s\n", summary);
    free(summary);
    return CLI_OK;
}
