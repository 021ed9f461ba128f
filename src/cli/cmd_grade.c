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

/* The command line of `judgerl grade`; over (key=value overrides) is owned by the caller. */
struct grade_args {
    const char *cfg_path, *in_path, *out_path;
    int print_only, quiet, force_progress, retry_unscored, n_over;
    char **over;
};

/* Fills *a from argv; returns CLI_OK, or the exit code after printing the usage error. On error
 * a->over is freed. */
static int parse_args(const char *cmd, int argc, char **argv, struct grade_args *a) {
    *a = (struct grade_args){.retry_unscored = 1};
    a->over = calloc((size_t)argc + 1, sizeof *a->over);
    if (!a->over) return cli_fail(cmd, jr_fail(JR_ENOMEM, "out of memory"));
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if ((!strcmp(s, "--config") || !strcmp(s, "--input") || !strcmp(s, "--output")) && i + 1 >= argc) {
            free(a->over);
            return cli_usage(cmd, "%s needs a value", s);
        }
        if (!strcmp(s, "--config")) a->cfg_path = argv[++i];
        else if (!strcmp(s, "--input")) a->in_path = argv[++i];
        else if (!strcmp(s, "--output")) a->out_path = argv[++i];
        else if (!strcmp(s, "--print-config")) a->print_only = 1;
        else if (!strcmp(s, "--quiet")) a->quiet = 1;
        else if (!strcmp(s, "--progress")) a->force_progress = 1;
        else if (!strcmp(s, "--retry-unscored")) a->retry_unscored = 1; /* the default; kept for old scripts */
        else if (!strcmp(s, "--keep-unscored")) a->retry_unscored = 0;
        else if (s[0] != '-' && strchr(s, '=')) a->over[a->n_over++] = argv[i];
        else { free(a->over); return cli_usage(cmd, "unexpected argument '%s'", s); }
    }
    return CLI_OK;
}

/* The directory of out_path ("." when it has none, "/" for a file at the root). */
static void dir_of(const char *out_path, char *dir, size_t n) {
    const char *slash = strrchr(out_path, '/');
    snprintf(dir, n, "%.*s", slash ? (int)(slash - out_path) : 1, slash ? out_path : ".");
    if (!dir[0]) snprintf(dir, n, "/");
}

int cmd_grade(int argc, char **argv) {
    const char *cmd = "grade";
    if (cli_wants_help(argc, argv)) {
        print_help();
        return CLI_OK;
    }
    struct grade_args a;
    int rc = parse_args(cmd, argc, argv, &a);
    if (rc != CLI_OK) return rc;
    const jr_cfg_field *tables[] = {jr_judge_cfg, jr_protocols_cfg, jr_reward_cfg, jr_sandbox_cfg, NULL};
    jr_config cfg;
    jr_status st = jr_config_load(&cfg, a.cfg_path, a.n_over, a.over, tables);
    if (!st && cfg.notes) fputs(cfg.notes, stderr); /* keys given under TRL / PEFT / verl names */
    free(a.over);
    if (st) return cli_fail(cmd, st);
    if (a.print_only) {
        char *t = jr_config_dump(&cfg);
        fputs(t ? t : "", stdout);
        free(t);
        jr_config_free(&cfg);
        return CLI_OK;
    }
    if (!a.cfg_path || !a.in_path || !a.out_path) {
        jr_config_free(&cfg);
        return cli_usage(cmd, "--config, --input and --output are required");
    }
    jr_reward_opts ro;
    if ((st = jr_reward_opts_from_config(&ro, &cfg))) { jr_config_free(&cfg); return cli_fail(cmd, st); }
    char cache_dir[4096];
    dir_of(a.out_path, cache_dir, sizeof cache_dir);
    ro.judge.cache_dir = cache_dir; /* the default cache lives beside the output */
    jr_grade_opts go;
    jr_grade_opts_init(&go, &ro);
    go.retry_unscored = a.retry_unscored;
    go.log = a.quiet ? NULL : stderr;
    go.progress = a.force_progress || (!a.quiet && isatty(2)) ? stderr : NULL;
    go.stop = cli_stop_on_signals();
    char *summary;
    st = jr_grade_file(&go, a.in_path, a.out_path, &summary);
    jr_config_free(&cfg);
    if (st) return cli_fail(cmd, st);
    printf("%s\n", summary);
    free(summary);
    return CLI_OK;
}
