/* cmd_probe.c - `judgerl probe --judge JUDGE.yaml --data ROWS.jsonl [--probes a,b] [--out DIR]`:
 * argument handling for the judge probes (src/eval/probe.c, docs/PROBES.md) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/judge.h"
#include "judgerl/probe.h"
#include "judgerl/protocols.h"
#include "judgerl/reward.h"

#define USAGE "usage: judgerl probe --judge JUDGE.yaml --data ROWS.jsonl [--probes a,b,...] [--out DIR] [key=value ...]"

int cmd_probe(int argc, char **argv) {
    const char *cmd = "probe";
    if (cli_wants_help(argc, argv)) {
        printf("%s\n"
               "Measures the biases of the judge configured in JUDGE.yaml (judge.*, any OpenAI-compatible endpoint)\n"
               "with variants of the rows {id, prompt, response, reference?, gold?, response_b?}: position,\n"
               "verbosity, master_key, label_prior, agreement, consistency, injection, format, scale_use\n"
               "(docs/PROBES.md: constructions, figures, thresholds). Each figure comes with a 95%% interval and n;\n"
               "a probe is flagged when an interval lies wholly past its threshold, and skipped (with the reason)\n"
               "when the judge's protocol or the rows cannot run it. Writes DIR/probe.json and DIR/probe.html\n"
               "(default DIR runs/probe) and prints the table. Options: probe.seed, probe.bootstrap, probe.repeats,\n"
               "probe.max_rows, probe.max_variant_rows (key=value). Exit 1 when the judge refuses the key, model or URL.\n",
               USAGE);
        return CLI_OK;
    }
    const char *cfg_path = NULL, *data = NULL, *probes = NULL, *out = "runs/probe";
    int print_only = 0;
    const jr_arg spec[] = {JR_ARG_S("--judge", &cfg_path), JR_ARG_S("--data", &data), JR_ARG_S("--probes", &probes),
                           JR_ARG_S("--out", &out), JR_ARG_B("--print-config", &print_only, 1), JR_ARGS_END};
    jr_args args;
    int rc = cli_args(cmd, &args, spec, argc, argv, 0, 1, "unexpected argument '%s'; " USAGE);
    if (rc) { jr_args_free(&args); return rc; }
    const jr_cfg_field *tables[] = {jr_judge_cfg, jr_protocols_cfg, jr_reward_cfg, jr_probe_cfg, NULL};
    jr_config cfg;
    rc = cli_config_load(cmd, cfg_path, args.n_over, args.over, tables, &cfg, print_only);
    jr_args_free(&args);
    if (rc || print_only) { if (!rc) jr_config_free(&cfg); return rc; }
    if (!cfg_path || !data) { jr_config_free(&cfg); return cli_usage(cmd, "--judge and --data are required; %s", USAGE); }
    if (!*out) { jr_config_free(&cfg); return cli_usage(cmd, "--out needs a directory"); }
    jr_probe_opts o;
    jr_status st = jr_probe_opts_from_config(&o, &cfg);
    if (!st && probes) st = jr_probe_parse_list(probes, &o.probes);
    if (st) { jr_config_free(&cfg); return probes ? cli_usage(cmd, "--probes: %s", jr_errmsg()) : cli_fail(cmd, st); }
    st = jr_probe_run_dir(&cfg, &o, data, out, cfg_path, stdout);
    jr_config_free(&cfg);
    return st ? cli_fail(cmd, st) : CLI_OK;
}
