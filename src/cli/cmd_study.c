/* cmd_study.c - `judgerl study STUDY.yaml [key=value ...]`: argument handling for the judge study
 * (src/train/study.c, docs/MONITOR.md) */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/study.h"
#include "judgerl/study_report.h"

int cmd_study(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl study STUDY.yaml [key=value ...] [--print-config]\n"
               "Trains one GRPO config (study.train) against each judge of study.judges ({name, set: [key=value ...]}:\n"
               "its endpoint and protocol) with the same seeds (study.seeds) and a gold evaluator (monitor.gold_reward\n"
               "or monitor.gold_field, in study.set): runs in OUT/JUDGE/seed-S with the reward-hacking monitor on\n"
               "(interrupted runs resume, finished ones are reused), each judge's probes on study.probe_data, then\n"
               "OUT/study.json (proxy and gold per step, divergence, drift, alarms, probes) and OUT/study.html\n"
               "(OUT = study.out_dir). See docs/MONITOR.md.\n");
        return CLI_OK;
    }
    const jr_cfg_field *const tables[] = {jr_study_cfg, NULL};
    jr_config cfg;
    int print_only;
    int rc = cli_load_config("study", argc, argv, 1, tables, &cfg, &print_only);
    if (rc) return rc;
    if (print_only) { jr_config_free(&cfg); return CLI_OK; }
    jr_study_opts o;
    jr_status st = jr_study_opts_from_config(&o, &cfg);
    volatile sig_atomic_t *stop = cli_stop_on_signals();
    json_t *s = NULL;
    if (!st) st = jr_study_run(&o, stderr, stop, &s);
    if (!st) {
        jr_study_table(stdout, s);
        printf("study.json: %s/study.json\nstudy.html: %s/study.html\n", o.out_dir, o.out_dir);
    }
    json_decref(s);
    jr_config_free(&cfg);
    return st ? cli_fail("study", st) : CLI_OK;
}
