/* cmd_train.c - `judgerl train CONFIG.yaml [key=value ...]`: SFT (and later GRPO) from a YAML config */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/dist.h"
#include "judgerl/train.h"

int cmd_train(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl train CONFIG.yaml [key=value ...] [--print-config]\n"
               "Trains a model as the config says (trainer.algo: sft on JSONL rows {\"prompt\", \"completion\"},\n"
               "loss on the completion tokens; grpo | rloo | distill on rows {\"prompt\"} or {\"messages\"}\n"
               "rewarded by reward.components, see docs/GRPO.md). Start from model.path (an HF directory) or model.init (a\n"
               "config.json for a random model). Writes run.out_dir/metrics.jsonl, a TensorBoard event file,\n"
               "checkpoints in run.out_dir/checkpoints/ and the final model in run.out_dir/model.\n"
               "trainer.resume=true continues from the latest checkpoint, exactly.\n");
        return CLI_OK;
    }
    /* under mpirun: MPI ranks (data-parallel, docs/SCALE.md); a build without MPI refuses here */
    jr_status st = jr_dist_init();
    if (st) return cli_fail("train", st);
    jr_config cfg;
    int print_only;
    int rc = cli_load_config("train", argc, argv, 1, jr_train_tables, &cfg, &print_only);
    if (rc) { jr_dist_abort(rc); return rc; }
    if (print_only) { jr_config_free(&cfg); jr_dist_finalize(); return CLI_OK; }
    int rank = jr_dist_rank(), quiet = rank != 0; /* rank 0 alone prints */
    jr_train_result res;
    /* SIGINT/SIGTERM: finish the step, write a checkpoint, exit 1 */
    volatile sig_atomic_t *stop = cli_stop_on_signals();
    jr_train_print_opts po;
    jr_train_print_opts_from_config(&po, &cfg);
    if (!quiet) jr_train_print_compute(stdout, &po); /* the compute type of the training matmuls, before anything runs */
    if (!quiet && jr_dist_size() > 1)
        printf("data-parallel: %d MPI ranks, each with its share of every global batch\n", jr_dist_size());
    fflush(stdout);
    st = jr_train_run(&cfg, stderr, stop, &res);
    if (st) {
        jr_config_free(&cfg);
        if (jr_dist_size() > 1) st = jr_fail_ctx(st, "rank %d of %d", rank, jr_dist_size());
        if (st == JR_ECANCELED && quiet) rc = CLI_FAIL; /* the stop line is rank 0's (it wrote the checkpoint) */
        else rc = cli_fail("train", st);
        /* a stop request is agreed by every rank after the same step (rank 0 checkpoints): a normal end;
         * any other error on one rank ends every rank (they would wait for it forever) */
        if (st == JR_ECANCELED) jr_dist_finalize();
        else jr_dist_abort(rc);
        return rc;
    }
    if (!quiet) jr_train_print_result(stdout, &po, &res);
    jr_config_free(&cfg);
    jr_dist_finalize();
    return CLI_OK;
}
