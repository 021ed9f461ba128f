/* train_print.c - the lines `judgerl train` and `judgerl workflow train` print: the compute type before
 * the run, the steps and losses (or mean rewards) after it (train.h) */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "judgerl/model.h"
#include "judgerl/nn.h"
#include "judgerl/train.h"

void jr_train_print_opts_from_config(jr_train_print_opts *o, const jr_config *c) {
    o->compute = jr_cfg_str(c, "model.compute");
    o->algo = jr_cfg_str(c, "trainer.algo");
    o->out_dir = jr_cfg_str(c, "run.out_dir");
    o->lora = jr_cfg_bool(c, "lora.enabled");
    o->steps = (long long)jr_cfg_int(c, "trainer.steps");
}

void jr_train_print_compute(FILE *f, const jr_train_print_opts *o) {
    const char *cn = o->compute;
    if (jr_model_compute_check(cn, "model.compute")) { /* refused: the run's own check says why, nothing to print */
        jr_err_clear();
        return;
    }
    if (jr_model_compute_resolve(cn) == JR_COMPUTE_BF16)
        fprintf(f, "compute: bfloat16 matmuls via oneDNN, ISA %s (model.compute %s)\n", jr_nn_isa(), cn);
    else
        fprintf(f, "compute: float32 (model.compute %s%s)\n", cn, strcmp(cn, "auto") ? "" : ": this CPU has no bf16 units");
}

void jr_train_print_result(FILE *f, const jr_train_print_opts *o, const jr_train_result *r) {
    if (r->last_step < r->first_step) {
        fprintf(f, "nothing to do: the latest checkpoint is already at trainer.steps=%lld\n", o->steps);
        return;
    }
    int rl = !strcmp(o->algo, "grpo") || !strcmp(o->algo, "rloo");
    fprintf(f, "%s steps %lld..%lld: %s %.4f -> %.4f", r->resumed ? "resumed," : "trained", (long long)r->first_step,
            (long long)r->last_step, rl ? "mean reward" : "loss", r->first_loss, r->last_loss);
    if (!isnan(r->last_val_loss)) fprintf(f, ", validation loss %.4f", r->last_val_loss);
    fprintf(f, "; %s in %s/%s\n", o->lora ? "PEFT adapter" : "model", o->out_dir, o->lora ? "adapter" : "model");
}
