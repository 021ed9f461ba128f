/* cmd_workflow_train.c - `judgerl workflow train CONFIG.yaml [key=value ...]`: seed 2's GRPO on a policy
 * that writes workflows (jr_wf_train_run, docs/WORKFLOWS.md) */
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/judge.h"
#include "judgerl/tokenizer.h"
#include "judgerl/train.h"
#include "judgerl/wf_train.h"
#include "judgerl/wfrl.h"

static const jr_cfg_field *const wf_train_tables[] = {jr_run_cfg,       jr_data_cfg,      jr_model_cfg,     jr_trainer_cfg,
                                                      jr_grpo_cfg,      jr_judge_cfg,     jr_tokenizer_cfg, jr_wf_env_cfg,
                                                      jr_wf_buffer_cfg, jr_wf_train_cfg,  NULL};

int cmd_workflow_train(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl workflow train CONFIG.yaml [key=value ...] [--print-config]\n"
               "GRPO (LoRA) on a policy that writes workflows: prompts are Layer-1 renders of data.train's task rows\n"
               "drawn per step by data.mix, with few-shot examples from the experience buffer; each completion is\n"
               "parsed, run by the executor of wftrain.executor and rewarded by wftrain.reward (seed 2's five\n"
               "components). Per-domain metrics in run.out_dir/metrics.jsonl and TensorBoard; data.validation is\n"
               "the held-out set (eval/gold_acc, a verifier's). trainer.resume=true continues after a kill.\n");
        return CLI_OK;
    }
    jr_config cfg;
    int print_only;
    int rc = cli_load_config("workflow train", argc, argv, 1, wf_train_tables, &cfg, &print_only);
    if (rc) return rc;
    if (print_only) { jr_config_free(&cfg); return CLI_OK; }
    volatile sig_atomic_t *stop = cli_stop_on_signals();
    char *dir = strdup(argv[1]);
    jr_train_result res;
    jr_status st = dir ? jr_wf_train_run(&cfg, dirname(dir), stderr, stop, &res) : JR_ENOMEM;
    free(dir);
    if (st) { jr_config_free(&cfg); return cli_fail("workflow train", st); }
    jr_train_print_opts po;
    jr_train_print_opts_from_config(&po, &cfg);
    po.algo = "grpo"; /* always GRPO: the mean reward */
    jr_train_print_result(stdout, &po, &res);
    jr_config_free(&cfg);
    return CLI_OK;
}
