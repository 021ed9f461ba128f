/* stage_judges.c - the demo's stage judges: the unbiased LM judge (configs/eightball/judge-sft.yaml, from a random
 * model) into OUT/judge-unbiased, then two trained from it: the Yes-biased one into OUT/judge-biased (GRPO stage
 * grpo-biased, the probes) and the sycophantic one into OUT/judge-syco (the study) */
#include <limits.h>
#include <stdio.h>

#include "eightball/eightball.h"

/* A judge trained c->z.biased_steps further from the unbiased one (model du) on data, into OUT/judge-NAME. */
static jr_status biased_judge(eb_ctx *c, const char *du, const char *name, const char *data, int *reused) {
    char dir[PATH_MAX], o1[PATH_MAX + 16], o2[64], o3[PATH_MAX + 32], o4[PATH_MAX + 16];
    eb_path(c, dir, sizeof dir, "judge-%s", name);
    snprintf(o1, sizeof o1, "run.out_dir=%s", dir);
    snprintf(o2, sizeof o2, "trainer.steps=%d", c->z.biased_steps);
    snprintf(o3, sizeof o3, "model.path=%s/model", du);
    snprintf(o4, sizeof o4, "data.train=%s", data);
    char *over[] = {o1, o2, o3, "model.init=null", o4, "run.seed=3"};
    return eb_train_or_reuse(c, dir, "configs/eightball/judge-sft.yaml", over, 6, reused);
}

jr_status eb_stage_judges(eb_ctx *c, const void *arg, char *note, size_t cap) {
    (void)arg;
    char du[PATH_MAX], o1[PATH_MAX + 16], o2[64];
    eb_path(c, du, sizeof du, "judge-unbiased");
    snprintf(o1, sizeof o1, "run.out_dir=%s", du);
    snprintf(o2, sizeof o2, "trainer.steps=%d", c->z.judge_steps);
    char *ju[] = {o1, o2};
    int reused = 0, reused2 = 0, reused3 = 0;
    jr_status st = eb_train_or_reuse(c, du, "configs/eightball/judge-sft.yaml", ju, 2, &reused);
    if (!st) st = biased_judge(c, du, "biased", "data/eightball/lm/judge_sft_yes.jsonl", &reused2);
    if (!st) st = biased_judge(c, du, "syco", "data/eightball/lm/judge_sft_syco.jsonl", &reused3);
    if (st) return st;
    snprintf(note, cap, "unbiased: %d steps on the preference grades; biased: +%d steps on the Yes-skewed grades; "
                        "syco (the study's): +%d steps on the sycophantic grades (Yes Good, caution on risky questions Bad)%s",
             c->z.judge_steps, c->z.biased_steps, c->z.biased_steps, reused && reused2 && reused3 ? "; reused" : "");
    return JR_OK;
}
