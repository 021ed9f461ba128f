/* cmd_seed1.c - `judgerl seed1 [CONFIG.yaml] [key=value ...]`: seed 1 reproduced (classifier SFT, classifier judges, judge distillation) */
#include <stdio.h>

#include "cli/cli.h"
#include "judgerl/report.h"
#include "eightball/seed1.h"

static const jr_cfg_field *const seed1_tables[] = {jr_run_cfg, eb_seed1_cfg, NULL};

int cmd_seed1(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl seed1 [CONFIG.yaml] [key=value ...] [--print-config]\n"
               "Seed 1 reproduced (configs/eightball-seed1.yaml): the magic-8-ball classifier trained on\n"
               "questions with random labels, classifier judges trained on the preference grades, then judge\n"
               "distillation as the seed (the judge labels the question) and corrected (the judge grades the\n"
               "policy's answer). Writes run.out_dir/seed1.json and the models; prints the logits of\n"
               "seed1.probe before/after.\n");
        return CLI_OK;
    }
    jr_config cfg;
    int print_only;
    int rc = cli_load_config("seed1", argc, argv, 1, seed1_tables, &cfg, &print_only);
    if (rc) return rc;
    if (print_only) { jr_config_free(&cfg); return CLI_OK; }
    json_t *res;
    eb_seed1_opts o;
    jr_status st = eb_seed1_opts_from_config(&o, &cfg);
    if (!st) st = eb_seed1_run(&o, &res);
    if (st) { jr_config_free(&cfg); return cli_fail("seed1", st); }
    jr_report_seed1_text(stdout, res);
    printf("results in %s/seed1.json\n", o.out_dir);
    json_decref(res);
    jr_config_free(&cfg);
    return CLI_OK;
}
