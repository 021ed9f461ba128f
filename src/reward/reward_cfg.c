/* reward_cfg.c - the reward registry's options (reward.components) */
#include "judgerl/reward.h"

static const jr_cfg_field component_cfg[] = {
    {"name", JR_CFG_STRING, "null", "the component's name in outputs (default: fn)", NULL, NULL, 0, 0},
    {"fn", JR_CFG_STRING, NULL, "reward function: reference, rubric, verif, pairwise, label, pointwise, exact, math_verify, final_answer, code_tests, format, rule, length, efficiency, simplicity, repetition, ifeval", NULL, NULL, 0, 0},
    {"weight", JR_CFG_FLOAT, "1.0", "weight of the component in the row's reward", NULL, NULL, 0, 0},
    {"optional", JR_CFG_BOOL, "false", "an unscored optional component is left out of the sum instead of leaving the row unscored", NULL, NULL, 0, 0},
    {"gate", JR_CFG_STRING, "null", "the name of another component: this one counts only in rows where that one is scored "
     "and above 0 (e.g. efficiency gated on correctness: a cost term that cannot outweigh being wrong), else it adds 0", NULL, NULL, 0, 0},
    {"params", JR_CFG_ANY, "{}", "the function's parameters (docs/PROTOCOLS.md)", NULL, NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

const jr_cfg_field jr_reward_cfg[] = {
    {"reward.components", JR_CFG_OBJLIST, "[]", "reward functions combined with weights per row: [{name, fn, weight, optional, gate, params}]", NULL, component_cfg, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};
