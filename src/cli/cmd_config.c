/* cmd_config.c - `judgerl config`: validates a YAML config against every module's table */
#include <stdio.h>

#include "cli/cli.h"
#include "eightball/seed1.h"
#include "judgerl/train.h"

int cmd_config(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl config [CONFIG.yaml] [key=value ...] [--print-config]\n"
               "Checks a config (unknown keys, types, ranges) against every module's options and, with\n"
               "--print-config, prints every effective value (defaults filled in). A training config (one with\n"
               "data.train) also gets the checks `judgerl train` runs before it starts: data and model files,\n"
               "tokenizer, LoRA targets, reward functions, judge URLs, reward weights, run.out_dir; a judge config\n"
               "(judge.endpoints listed) gets the checks of the judge's endpoints.\n"
               "Keys under TRL / PEFT / verl names are mapped (a note on stderr) or refused with judgerl's name.\n");
        return CLI_OK;
    }
    /* the library's tables and seed 1's (examples/eightball) */
    const jr_cfg_field *tables[64];
    int n = 0;
    while (jr_all_cfg_tables[n] && n < 62) tables[n] = jr_all_cfg_tables[n], n++;
    tables[n++] = eb_seed1_cfg;
    tables[n] = NULL;
    jr_config cfg;
    int print_only;
    int rc = cli_load_config("config", argc, argv, 1, tables, &cfg, &print_only);
    if (rc) return rc;
    jr_status st = print_only ? JR_OK : jr_config_check(&cfg);
    if (st) { jr_config_free(&cfg); return cli_fail("config", st); }
    if (!print_only) printf("%s: ok%s\n", cfg.source, jr_cfg_str(&cfg, "data.train") ? " (train's checks too)" : "");
    jr_config_free(&cfg);
    return CLI_OK;
}
