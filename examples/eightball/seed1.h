/* seed1.h - seed 1 reproduced: supervised 8-ball classifier, classifier judges trained on the preference grades, judge distillation, logits before/after */
#ifndef EIGHTBALL_SEED1_H
#define EIGHTBALL_SEED1_H

#include <stdint.h>
#include <jansson.h>

#include "judgerl/config.h"
#include "judgerl/status.h"

/* The options of `judgerl seed1` (keys seed1.*; run.seed and run.out_dir from jr_run_cfg). */
extern const jr_cfg_field eb_seed1_cfg[];

/* A classifier's shape (seed1.model.* / seed1.judge.*). */
typedef struct eb_seed1_clf_opts {
    int embed_dim, num_heads, hidden_dim, max_length;
} eb_seed1_clf_opts;

/* A training phase (seed1.sft.* / seed1.judge.*). */
typedef struct eb_seed1_train_opts {
    int epochs;
    double lr;
    int batch_size;
} eb_seed1_train_opts;

/* Every option of seed 1, typed (strings borrowed from the config). */
typedef struct eb_seed1_opts {
    const char *out_dir;  /* run.out_dir */
    uint64_t seed;        /* run.seed */
    const char *questions, *reinforce, *heldout, *preferences; /* data files */
    const char *probe;    /* the question whose logits are shown before/after */
    int probe_runs;
    eb_seed1_clf_opts model, judge;         /* policy and judge shapes */
    eb_seed1_train_opts sft, judge_train;   /* supervised policy, judges */
    struct { double lr, weight_decay, threshold; int iterations; } distill;
} eb_seed1_opts;

/* Fills o from a config loaded with jr_run_cfg and eb_seed1_cfg. */
jr_status eb_seed1_opts_from_config(eb_seed1_opts *o, const jr_config *c);

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
jr_status eb_seed1_run(const eb_seed1_opts *o, json_t **result);

#endif
