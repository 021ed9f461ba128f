/* cmd_workflow_train.c - `judgerl workflow train CONFIG.yaml [key=value ...]`: seed 2's GRPO on a policy
 * that writes workflows (jr_wf_train_run, docs/WORKFLOWS.md) */
#include <libgen.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/dataset.h"
#include "judgerl/judge.h"
#include "judgerl/model.h"
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
    if (res.last_step >= res.first_step)
        printf("%s steps %lld..%lld: mean reward %.4f -> %.4f; %s in %s/%s\n", res.resumed ? "resumed," : "trained",
               (long long)res.first_step, (long long)res.last_step, res.first_loss, res.last_loss,
               jr_cfg_bool(&cfg, "lora.enabled") ? "PEFT adapter" : "model", jr_cfg_str(&cfg, "run.out_dir"),
               jr_cfg_bool(&cfg, "lora.enabled") ? "adapter" : "model");
    else
        printf("nothing to do: the latest checkpoint is already at trainer.steps=%lld\n", (long long)jr_cfg_int(&cfg, "trainer.steps"));
    jr_config_free(&cfg);
    return CLI_OK;
}
