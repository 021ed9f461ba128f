/* stage_policy.c - the demo's stage policy-sft: the tiny causal LM policy (configs/eightball/policy-sft.yaml) into OUT/policy-sft */
#include <limits.h>
#include <stdio.h>

#include "eightball/eightball.h"

jr_status eb_stage_policy(eb_ctx *c, const void *arg, char *note, size_t cap) {
    (void)arg;
    char dir[PATH_MAX], o1[PATH_MAX + 16], o2[64];
    eb_path(c, dir, sizeof dir, "policy-sft");
    snprintf(o1, sizeof o1, "run.out_dir=%s", dir);
    snprintf(o2, sizeof o2, "trainer.steps=%d", c->z.policy_steps);
    char *over[] = {o1, o2};
    int reused;
    jr_status st = eb_train_or_reuse(c, dir, "configs/eightball/policy-sft.yaml", over, 2, &reused);
    if (st) return st;
    snprintf(note, cap, "tiny causal LM (8-ball BPE tokenizer), %d steps on the questions with 8-ball answers%s", c->z.policy_steps,
             reused ? "; reused" : "");
    return JR_OK;
}
