/* cmd_config.c - `judgerl config`: validates a YAML config against every module's table */
#include <stdio.h>

#include "cli/cli.h"
#include "judgerl/sandbox.h"
#include "judgerl/tokenizer.h"
#include "judgerl/dataset.h"
#include "judgerl/model.h"
#include "judgerl/train.h"
#include "eightball/seed1.h"
#include "judgerl/judge.h"
#include "judgerl/protocols.h"
#include "judgerl/reward.h"
#include "judgerl/reward_service.h"
#include "judgerl/wf_executor.h"
#include "judgerl/workflow.h"
#include "judgerl/probe.h"
#include "judgerl/wf_train.h"
#include "judgerl/wfrl.h"

/* Every module's table of options; a config file may use any of them. */
static const jr_cfg_field *const all_tables[] = {
    jr_run_cfg,
    jr_tokenizer_cfg,
    jr_data_cfg,
    jr_model_cfg,
    jr_trainer_cfg,
    jr_grpo_cfg,
    jr_distill_cfg,
    jr_judge_cfg,
    jr_protocols_cfg,
    jr_reward_cfg,
    jr_sandbox_cfg,
    eb_seed1_cfg,
    jr_workflow_cfg,
    jr_wf_exec_cfg,
    jr_probe_cfg,
    jr_reward_service_cfg,
    jr_wf_env_cfg,
    jr_wf_buffer_cfg,
    jr_wf_train_cfg,
    NULL,
};

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
    jr_config cfg;
    int print_only;
    int rc = cli_load_config("config", argc, argv, 1, all_tables, &cfg, &print_only);
    if (rc) return rc;
    /* a training config (data.train set): the checks `judgerl train` runs before it starts */
    jr_status st = !print_only && jr_cfg_str(&cfg, "data.train") ? jr_train_check(&cfg) : JR_OK;
    /* a judge config (endpoints listed): what opening the judge in `grade` would refuse */
    jr_reward_opts ro;
    if (!st && !print_only && !jr_cfg_str(&cfg, "data.train") && !(st = jr_reward_opts_from_config(&ro, &cfg)) &&
        ro.judge.n_endpoints > 0)
        st = jr_judge_opts_check(&ro.judge, cfg.source);
    if (st) { jr_config_free(&cfg); return cli_fail("config", st); }
    if (!print_only) printf("%s: ok%s\n", cfg.source, jr_cfg_str(&cfg, "data.train") ? " (train's checks too)" : "");
    jr_config_free(&cfg);
    return CLI_OK;
}
