/* seed1.h - seed 1 reproduced: supervised 8-ball classifier, classifier judges trained on the preference grades, judge distillation, logits before/after */
#ifndef JUDGERL_SEED1_H
#define JUDGERL_SEED1_H

#include <jansson.h>

#include "judgerl/config.h"
#include "judgerl/status.h"

/* The options of `judgerl seed1` (keys seed1.*; run.seed and run.out_dir from jr_run_cfg). */
extern const jr_cfg_field jr_seed1_cfg[];

/* Runs seed 1 end to end under out_dir (created): the policy classifier trained on the questions
 * with their random labels (Adam), the question judge (question -> preferred label) and the
 * answer judge ("answer question" -> grade 0/1) trained on the preference grades, then two
 * distillation runs from the same policy (AdamW, seed1.distill.*): "question" as the seed (the
 * judge labels the question alone and the policy is trained toward its confident label) and
 * "answer" (the policy answers by sampling, the judge grades that answer, a confident verdict
 * becomes a +1/-1 policy-gradient reward). Models are saved in out_dir/{policy,judge_question,
 * judge_answer,policy_question,policy_answer}; out_dir/seed1.json (also returned in *result,
 * caller decrefs) holds the losses, the judges' accuracies and, per variant, the probe
 * question's averaged logits before/after, steps taken, agreement with the judge and the
 * held-out answer distributions. On error *result is NULL; finished files stay. */
jr_status jr_seed1_run(const jr_config *cfg, json_t **result);

#endif
