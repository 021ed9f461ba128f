/* stage_policy.c - the demo's stages policy-sft (the tiny causal LM policy, configs/eightball/policy-sft.yaml, into
 * OUT/policy-sft) and policy-pref (the study's starting policy: policy-sft fine-tuned on the preferred answers, into
 * OUT/policy-pref) */
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

/* The study's starting policy: the SFT policy (random labels) fine-tuned on the training questions answered with
 * their preferred label (data/eightball/lm/policy_sft_preferred.jsonl), so that it answers by the kind of question
 * and a judge that pulls it elsewhere shows as a fall of gold (from the random-label policy a Yes-only policy is
 * no worse by the preference grades). */
jr_status eb_stage_policy_pref(eb_ctx *c, const void *arg, char *note, size_t cap) {
    (void)arg;
    char dir[PATH_MAX], o1[PATH_MAX + 16], o2[64], o3[PATH_MAX + 32];
    eb_path(c, dir, sizeof dir, "policy-pref");
    snprintf(o1, sizeof o1, "run.out_dir=%s", dir);
    snprintf(o2, sizeof o2, "trainer.steps=%d", c->z.pref_steps);
    snprintf(o3, sizeof o3, "model.path=%s/policy-sft/model", c->out);
    char *over[] = {o1, o2, o3, "model.init=null", "data.train=data/eightball/lm/policy_sft_preferred.jsonl"};
    int reused;
    jr_status st = eb_train_or_reuse(c, dir, "configs/eightball/policy-sft.yaml", over, 5, &reused);
    if (st) return st;
    snprintf(note, cap, "the study's start: the SFT policy +%d steps on the preferred answers%s", c->z.pref_steps, reused ? "; reused" : "");
    return JR_OK;
}
