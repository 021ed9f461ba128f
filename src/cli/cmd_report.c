/* cmd_report.c - `judgerl report RUN` (any run: training, eval, grade output, demo) and
 * `judgerl compare RUN...`: self-contained HTML pages (inline CSS and SVG, no external URL) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/report.h"

/* -o OUT and --smoothing S; the rest are runs (into runs[], *n). Returns CLI_OK or the usage exit code. */
static int parse(const char *cmd, int argc, char **argv, const char **out, double *smoothing, const char **runs, int *n) {
    *n = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--smoothing")) {
            if (i + 1 >= argc) return cli_usage(cmd, "%s needs a value", a);
            const char *v = argv[++i];
            if (a[1] == 'o' || a[2] == 'o') { *out = v; continue; }
            char *end;
            errno = 0;
            *smoothing = strtod(v, &end);
            if (errno || *end || !(*smoothing >= 0 && *smoothing < 1))
                return cli_usage(cmd, "--smoothing: expected a number in [0, 1), got '%s'", v);
        } else if (a[0] == '-') {
            return cli_usage(cmd, "unknown option '%s'", a);
        } else if (*n < 16) {
            runs[(*n)++] = a;
        } else {
            return cli_usage(cmd, "at most 16 runs");
        }
    }
    return CLI_OK;
}

int cmd_report(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl report RUN [-o OUT.html] [--smoothing S]\n"
               "Writes one self-contained HTML page (inline CSS and SVG plots, no external URL) for RUN:\n"
               "  a training run directory (SFT, GRPO, RLOO, distill: metrics.jsonl, samples.jsonl, config.yaml,\n"
               "  unscored.json): curves of every metric (the first 48; any others are named), raw and smoothed\n"
               "  (debiased EMA, S = 0.6 by default), the last logged sample completions, the hyperparameters\n"
               "  and the config, unscored reasons;\n"
               "  an eval directory (summary.json, samples.jsonl); a `judgerl grade` output file (counts, reward\n"
               "  histogram, unscored reasons, rows); a demo run (summary.json; its summary is printed too); a\n"
               "  `judgerl study` directory (study.json: its page, default RUN/study.html).\n"
               "Default OUT: RUN/report.html, or OUT.report.html beside a grade output. Compare runs with\n"
               "`judgerl compare`.\n");
        return CLI_OK;
    }
    const char *out = NULL, *runs[16];
    double smoothing = 0.6;
    int n, rc = parse("report", argc, argv, &out, &smoothing, runs, &n);
    if (rc) return rc;
    if (n != 1) return cli_usage("report", "expected one RUN (got %d); usage: judgerl report RUN [-o OUT.html]", n);
    char *written = NULL;
    jr_status st = jr_run_report(runs[0], out, smoothing, stdout, &written);
    if (st) return cli_fail("report", st);
    printf("wrote %s\n", written);
    free(written);
    return CLI_OK;
}

int cmd_compare(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl compare RUN_A RUN_B [RUN...] [-o OUT.html] [--smoothing S]\n"
               "One self-contained HTML page (default compare.html) comparing 2 to 16 runs of any kind\n"
               "`judgerl report` takes (not demo runs: compare their grpo-* directories): every metric's\n"
               "curves overlaid (run i keeps colour i on every chart and table), the keys whose values differ\n"
               "between the configs, the hyperparameters, the last logged samples side by side, grade counts.\n");
        return CLI_OK;
    }
    const char *out = "compare.html", *runs[16];
    double smoothing = 0.6;
    int n, rc = parse("compare", argc, argv, &out, &smoothing, runs, &n);
    if (rc) return rc;
    if (n < 2) return cli_usage("compare", "expected at least two runs (got %d)", n);
    jr_status st = jr_compare_report(runs, n, out, smoothing, stdout);
    if (st) return cli_fail("compare", st);
    printf("wrote %s\n", out);
    return CLI_OK;
}
