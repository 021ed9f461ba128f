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

/* The study's starting policy: a policy SFT'd on random labels, one per question (data/eightball/lm/policy_sft_random.jsonl,
 * c->z.policy_steps steps, into OUT/policy-random), fine-tuned on the training questions answered with their preferred label
 * (data/eightball/lm/policy_sft_preferred.jsonl, into OUT/policy-pref), so that it answers by the kind of question and a
 * judge that pulls it elsewhere shows as a fall of gold (from a random-label policy a Yes-only policy is no worse by the
 * preference grades). The study's settings were chosen from this start (the demo's policy-sft, which answers every
 * question with every label, is the start of the GRPO stages). */
jr_status eb_stage_policy_pref(eb_ctx *c, const void *arg, char *note, size_t cap) {
    (void)arg;
    char rdir[PATH_MAX], dir[PATH_MAX], o1[PATH_MAX + 16], o2[64], o3[PATH_MAX + 32];
    eb_path(c, rdir, sizeof rdir, "policy-random");
    snprintf(o1, sizeof o1, "run.out_dir=%s", rdir);
    snprintf(o2, sizeof o2, "trainer.steps=%d", c->z.policy_steps);
    char *rover[] = {o1, o2, "data.train=data/eightball/lm/policy_sft_random.jsonl"};
    int reused, reused2;
    jr_status st = eb_train_or_reuse(c, rdir, "configs/eightball/policy-sft.yaml", rover, 3, &reused);
    if (st) return st;
    eb_path(c, dir, sizeof dir, "policy-pref");
    snprintf(o1, sizeof o1, "run.out_dir=%s", dir);
    snprintf(o2, sizeof o2, "trainer.steps=%d", c->z.pref_steps);
    snprintf(o3, sizeof o3, "model.path=%s/model", rdir);
    char *over[] = {o1, o2, o3, "model.init=null", "data.train=data/eightball/lm/policy_sft_preferred.jsonl"};
    if ((st = eb_train_or_reuse(c, dir, "configs/eightball/policy-sft.yaml", over, 5, &reused2))) return st;
    snprintf(note, cap, "the study's start: %d steps on random labels (one per question) +%d steps on the preferred answers%s",
             c->z.policy_steps, c->z.pref_steps, reused && reused2 ? "; reused" : "");
    return JR_OK;
}
