/* stage_judges.c - the demo's stage judges: the unbiased LM judge (configs/eightball/judge-sft.yaml, from a random
 * model) into OUT/judge-unbiased, then the Yes-biased one trained from it into OUT/judge-biased */
#include <limits.h>
#include <stdio.h>

#include "eightball/eightball.h"

jr_status eb_stage_judges(eb_ctx *c, const void *arg, char *note, size_t cap) {
    (void)arg;
    char du[PATH_MAX], db[PATH_MAX], o1[PATH_MAX + 16], o2[64], o3[PATH_MAX + 32];
    eb_path(c, du, sizeof du, "judge-unbiased");
    eb_path(c, db, sizeof db, "judge-biased");
    snprintf(o1, sizeof o1, "run.out_dir=%s", du);
    snprintf(o2, sizeof o2, "trainer.steps=%d", c->z.judge_steps);
    char *ju[] = {o1, o2};
    int reused = 0, reused2 = 0;
    jr_status st = eb_train_or_reuse(c, du, "configs/eightball/judge-sft.yaml", ju, 2, &reused);
    if (st) return st;
    snprintf(o1, sizeof o1, "run.out_dir=%s", db);
    snprintf(o2, sizeof o2, "trainer.steps=%d", c->z.biased_steps);
    snprintf(o3, sizeof o3, "model.path=%s/model", du);
    char *jb[] = {o1, o2, o3, "model.init=null", "data.train=data/eightball/lm/judge_sft_yes.jsonl", "run.seed=3"};
    st = eb_train_or_reuse(c, db, "configs/eightball/judge-sft.yaml", jb, 6, &reused2);
    if (st) return st;
    snprintf(note, cap, "unbiased: %d steps on the preference grades; biased: +%d steps on the sycophantic grades "
                        "(Yes Good, caution on risky questions Bad)%s",
             c->z.judge_steps, c->z.biased_steps, reused && reused2 ? "; reused" : "");
    return JR_OK;
}
