/* protocols_cfg.c - the options of the reference, rubric, pairwise, label and VerIF protocols */
#include "judgerl/protocols.h"

const jr_cfg_field jr_protocols_cfg[] = {
    /* reference correctness */
    {"judge.reference.template", JR_CFG_STRING, "null", "template file; null = templates/reference.txt", NULL, NULL, 0, 0},
    {"judge.reference.system", JR_CFG_STRING, "\"\"", "system message of each call (empty = none)", NULL, NULL, 0, 0},
    {"judge.reference.correct", JR_CFG_FLOAT, "1.0", "reward of a response equivalent to the reference (seed 2: 10)", NULL, NULL, 0, 0},
    {"judge.reference.incorrect", JR_CFG_FLOAT, "0.0", "reward of a response that is not (seed 2: -5)", NULL, NULL, 0, 0},
    {"judge.reference.shortcircuit", JR_CFG_BOOL, "true", "reward components: an extracted answer equivalent to the reference after normalisation is correct without a call", NULL, NULL, 0, 0},
    /* rubric (HealthBench / RuscaRL) */
    {"judge.rubric.mode", JR_CFG_ENUM, "per_criterion", "per_criterion: one call per criterion returning {explanation, criteria_met} (HealthBench); batched: one call for all returning PRESENT / NOT_PRESENT (RuscaRL)", "per_criterion|batched", NULL, 0, 0},
    {"judge.rubric.template", JR_CFG_STRING, "null", "per-criterion template; null = templates/rubric_criterion.txt", NULL, NULL, 0, 0},
    {"judge.rubric.batch_template", JR_CFG_STRING, "null", "batched template; null = templates/rubric_batch.txt", NULL, NULL, 0, 0},
    {"judge.rubric.fallback", JR_CFG_BOOL, "true", "batched: when the batched call fails, grade each criterion with its own call", NULL, NULL, 0, 0},
    {"judge.rubric.on_failure", JR_CFG_ENUM, "unscored", "a criterion that cannot be graded leaves the sample unscored; not_present counts it as not met (seed 3's old behaviour)", "unscored|not_present", NULL, 0, 0},
    {"judge.rubric.clip_sample", JR_CFG_BOOL, "false", "clip each sample's score to [0, 1] (HealthBench clips only aggregates)", NULL, NULL, 0, 0},
    /* pairwise */
    {"judge.pairwise.template", JR_CFG_STRING, "null", "template file; null = templates/pairwise.txt", NULL, NULL, 0, 0},
    {"judge.pairwise.system", JR_CFG_STRING, "\"\"", "system message of each call (empty = none)", NULL, NULL, 0, 0},
    {"judge.pairwise.other_field", JR_CFG_STRING, "response_b", "row field holding the response compared against `response`", NULL, NULL, 0, 0},
    {"judge.pairwise.swap", JR_CFG_BOOL, "true", "judge both orders; disagreement is a tie", NULL, NULL, 0, 0},
    {"judge.pairwise.win", JR_CFG_FLOAT, "1.0", "reward when `response` wins", NULL, NULL, 0, 0},
    {"judge.pairwise.tie", JR_CFG_FLOAT, "0.5", "reward on a tie (or when the orders disagree)", NULL, NULL, 0, 0},
    {"judge.pairwise.loss", JR_CFG_FLOAT, "0.0", "reward when `response` loses", NULL, NULL, 0, 0},
    /* label with confidence */
    {"judge.label.template", JR_CFG_STRING, "null", "template file; null = templates/label.txt", NULL, NULL, 0, 0},
    {"judge.label.system", JR_CFG_STRING, "\"\"", "system message of each call (empty = none)", NULL, NULL, 0, 0},
    {"judge.label.labels", JR_CFG_LIST, "[\"Yes\", \"No\", \"Maybe\"]", "the labels the judge picks from (distinct first tokens)", NULL, NULL, 0, 0},
    {"judge.label.values", JR_CFG_LIST, "[]", "reward of each label, in order; [] = 1 for the first label, 0 for the others", NULL, NULL, 0, 0},
    {"judge.label.confidence", JR_CFG_ENUM, "auto", "auto: log-probs when the server returns them, else verbalised; logprobs: required; verbal: never ask for log-probs", "auto|logprobs|verbal", NULL, 0, 0},
    {"judge.label.top_logprobs", JR_CFG_INT, "10", "alternatives asked per token", NULL, NULL, 1, 20},
    {"judge.label.threshold", JR_CFG_FLOAT, "0.4", "verdicts with confidence below this are rejected: the sample is unscored (seed 1: 0.4)", NULL, NULL, 0, 1},
    {"judge.label.max_logprob_gap", JR_CFG_FLOAT, "3.0", "log-probs are unreliable (confidence null) when the chosen token's log-prob is more than this below the best alternative's (the server constrained after computing them)", NULL, NULL, 0, 1000},
    {"judge.label.unreliable", JR_CFG_ENUM, "reject", "a verdict whose log-probs are unreliable (a label absent from the top log-probs, or the gap above): reject = not confident, the sample is unscored; accept = scored with confidence null", "reject|accept", NULL, 0, 0},
    /* VerIF */
    {"judge.verif.template", JR_CFG_STRING, "null", "template of the [llm] check; null = templates/verif.txt", NULL, NULL, 0, 0},
    {"judge.verif.system", JR_CFG_STRING, "\"\"", "system message of the call (empty = none)", NULL, NULL, 0, 0},
    {"judge.verif.rule_reduction", JR_CFG_ENUM, "mean", "how [rule] results combine: mean (VerIF's paper) or all_pass (VerIF's released code)", "mean|all_pass", NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};
