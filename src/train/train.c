/* train.c - `judgerl train` (train.h): checks the config, prepares the run directory, writes the effective
 * config and hands the run to trainer.algo's trainer (sft.c, grpo_train.c, distill.c) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/dataset.h"
#include "judgerl/dist.h"
#include "judgerl/ensemble.h"
#include "judgerl/fsutil.h"
#include "judgerl/judge.h"
#include "judgerl/model.h"
#include "judgerl/monitor.h"
#include "judgerl/protocols.h"
#include "judgerl/reward.h"
#include "judgerl/run.h"
#include "judgerl/sandbox.h"
#include "judgerl/tokenizer.h"
#include "judgerl/train.h"

/* run.out_dir/config.yaml: the effective config (defaults filled), what `judgerl report` and
 * `compare` show; rewritten by a resumed run. */
static jr_status write_config(const jr_config *c, const char *out_dir) {
    char *text = jr_config_dump(c), *path = jr_path_join(out_dir, "config.yaml");
    jr_status st = text && path ? jr_mkdirs(out_dir) : JR_ENOMEM;
    if (!st) st = jr_write_atomic(path, text, strlen(text));
    free(text);
    free(path);
    return st;
}

const jr_cfg_field *const jr_train_tables[] = {JR_TRAIN_TABLE_LIST, NULL};

jr_status jr_train_run(const jr_config *c, FILE *progress, volatile sig_atomic_t *stop, jr_train_result *res) {
    memset(res, 0, sizeof *res);
    res->last_val_loss = NAN;
    jr_trainer_opts to;
    jr_trainer_opts_from_config(&to, c);
    const char *algo = to.algo;
    if (jr_dist_size() > 1 && !strcmp(algo, "distill"))
        return jr_fail(JR_EUNSUPPORTED, "%s: trainer.algo=%s does not run data-parallel yet (sft, grpo and rloo do "
                                        "over %d MPI ranks): run it as one process (docs/SCALE.md)", c->source, algo,
                       jr_dist_size());
    jr_run_opts ro;
    jr_run_opts_from_config(&ro, c);
    jr_status st = jr_train_check(c);
    /* rank 0 alone prepares the run directory and writes into it (another rank would find it used) */
    if (!st && !jr_dist_rank()) st = jr_run_dir_prepare(&ro, to.resume, 0);
    if (!st && !jr_dist_rank()) st = write_config(c, ro.out_dir);
    if (st) return st;
    if (!strcmp(algo, "grpo") || !strcmp(algo, "rloo")) return jr_grpo_run(c, progress, stop, res);
    if (!strcmp(algo, "distill")) return jr_distill_run(c, progress, stop, res);
    if (!strcmp(algo, "sft")) return jr_sft_run(c, progress, stop, res);
    return jr_fail(JR_EUNSUPPORTED, "%s: trainer.algo=%s is not implemented (available: sft, grpo, rloo, distill)",
                   c->source, algo);
}
