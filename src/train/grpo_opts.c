/* grpo_opts.c - the grpo.* and lora.* options of trainer.algo grpo | rloo and their typed form (jr_grpo_opts) */
#include <string.h>

#include "judgerl/grpo_trainer.h"
#include "judgerl/train.h"

const jr_cfg_field jr_grpo_cfg[] = {
    {"grpo.num_generations", JR_CFG_INT, "8", "G: completions sampled per prompt (TRL num_generations)", NULL, NULL, 2, 4096},
    {"grpo.prompts_per_step", JR_CFG_INT, "4",
     "prompts per generation batch (TRL generation_batch_size / num_generations; verl data.train_batch_size)", NULL,
     NULL, 1, 1e6},
    {"grpo.max_prompt_length", JR_CFG_INT, "256", "prompt tokens kept (longer prompts keep their last tokens)", NULL,
     NULL, 1, 1e7},
    {"grpo.max_completion_length", JR_CFG_INT, "256", "tokens sampled per completion at most", NULL, NULL, 1, 1e7},
    {"grpo.temperature", JR_CFG_FLOAT, "1.0", "sampling temperature; log-probs use logits / temperature as TRL does",
     NULL, NULL, 1e-4, 100},
    {"grpo.top_p", JR_CFG_FLOAT, "1.0", "nucleus sampling mass (1 = off)", NULL, NULL, 1e-6, 1},
    {"grpo.top_k", JR_CFG_INT, "0", "keep the k most likely tokens (0 = off)", NULL, NULL, 0, 1e9},
    {"grpo.min_p", JR_CFG_FLOAT, "0.0", "drop tokens below min_p x the top probability (0 = off)", NULL, NULL, 0, 1},
    {"grpo.beta", JR_CFG_FLOAT, "0.0",
     "KL coefficient toward the reference policy (k3 estimator); 0 skips the reference pass", NULL, NULL, 0, 1e6},
    {"grpo.epsilon", JR_CFG_FLOAT, "0.2", "lower clip range: ratios below 1 - epsilon are clipped", NULL, NULL, 0, 10},
    {"grpo.epsilon_high", JR_CFG_FLOAT, "-1",
     "upper clip range 1 + epsilon_high (DAPO clip-higher); -1 = same as epsilon", NULL, NULL, -1, 10},
    {"grpo.num_iterations", JR_CFG_INT, "1",
     "mu: optimizer steps per generation batch (old log-probs are kept per batch); trainer.steps counts optimizer steps",
     NULL, NULL, 1, 1024},
    {"grpo.loss_type", JR_CFG_ENUM, "dapo", "loss normalisation (TRL loss_type)", "grpo|bnpo|dr_grpo|dapo", NULL, 0, 0},
    {"grpo.scale_rewards", JR_CFG_ENUM, "group", "advantage scaling after the group mean (TRL scale_rewards)",
     "group|batch|none", NULL, 0, 0},
    {"grpo.reward_weights", JR_CFG_LIST, "[]",
     "weight of each reward.components entry, in order ([] = the components' own weights)", NULL, NULL, 0, 0},
    {"grpo.multi_objective_aggregation", JR_CFG_ENUM, "sum_then_normalize",
     "combine reward components before (sum_then_normalize) or after (normalize_then_sum) group normalisation",
     "sum_then_normalize|normalize_then_sum", NULL, 0, 0},
    {"grpo.mask_truncated_completions", JR_CFG_BOOL, "false",
     "completions cut at max_completion_length take no part in the loss", NULL, NULL, 0, 0},
    {"grpo.filter_groups", JR_CFG_BOOL, "false",
     "dynamic sampling (verl algorithm.filter_groups): drop groups whose rewards all agree and generate more", NULL,
     NULL, 0, 0},
    {"grpo.max_num_gen_batches", JR_CFG_INT, "4",
     "with filter_groups: generation batches per step at most (verl max_num_gen_batches; 0 = no limit)", NULL, NULL, 0,
     1e6},
    {"grpo.overlong_buffer", JR_CFG_BOOL, "false",
     "DAPO overlong penalty (verl reward_model.overlong_buffer.enable)", NULL, NULL, 0, 0},
    {"grpo.overlong_buffer_len", JR_CFG_INT, "16", "tokens before max_completion_length where the penalty starts",
     NULL, NULL, 1, 1e7},
    {"grpo.overlong_penalty_factor", JR_CFG_FLOAT, "1.0", "weight of the overlong penalty (reaches -factor)", NULL,
     NULL, 0, 1e6},
    {"grpo.log_completions_every", JR_CFG_INT, "0",
     "every N steps print a table of sample completions with their rewards and append them to samples.jsonl (0 = off)",
     NULL, NULL, 0, 1e12},
    {"grpo.log_completions_n", JR_CFG_INT, "4", "completions in that table", NULL, NULL, 1, 1e6},
    {"grpo.length_control", JR_CFG_BOOL, "false",
     "mitigation: regress the reward on completion length (bytes) over each rollout batch and train on the residual "
     "(+ the batch mean), so a judge's length preference adds no advantage (docs/MONITOR.md)", NULL, NULL, 0, 0},
    {"grpo.shuffle_rewards", JR_CFG_BOOL, "false",
     "control experiment: permute the rewards across the step's scored samples before the advantages", NULL, NULL,
     0, 0},
    {"grpo.async_generation", JR_CFG_BOOL, "false",
     "one-step-ahead generation (TRL async GRPO, verl async rollout): the next batch is sampled by the weights "
     "before this update while the update runs; off-policy by one step, importance-corrected by the generating "
     "weights' log-probs; a resumed run then regenerates its first batch on-policy (not bit-exact)", NULL, NULL, 0,
     0},
    {"grpo.max_in_flight", JR_CFG_INT, "0",
     "samples being rewarded at once at most; generation waits for results past it (0 = no bound)", NULL, NULL, 0, 1e9},
    {"grpo.reward_deadline_s", JR_CFG_FLOAT, "0",
     "after generation, wait at most this long for the step's rewards; later ones are unscored, reason deadline "
     "(0 = no deadline; the judge's own timeouts still apply)", NULL, NULL, 0, 1e9},
    {"lora.enabled", JR_CFG_BOOL, "false", "train LoRA adapters instead of every weight", NULL, NULL, 0, 0},
    {"lora.rank", JR_CFG_INT, "8", "adapter rank r", NULL, NULL, 1, 65536},
    {"lora.alpha", JR_CFG_FLOAT, "16", "adapter scale alpha (updates are scaled by alpha / r)", NULL, NULL, 0, 1e6},
    {"lora.dropout", JR_CFG_FLOAT, "0.0",
     "dropout on the adapter input; only 0 is supported (log-prob ratios need it off)", NULL, NULL, 0, 1},
    {"lora.target_modules", JR_CFG_STRING, "q,k,v,o,gate,up,down",
     "projections that get adapters (q, k, v, o, gate, up, down; or all)", NULL, NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

static int parse_enum(const char *v, const char *const *names) {
    for (int i = 0; names[i]; i++)
        if (!strcmp(v, names[i])) return i;
    return 0;
}

jr_status jr_grpo_opts_from_config(jr_grpo_opts *o, const jr_config *c) {
    memset(o, 0, sizeof *o);
    o->rloo = !strcmp(jr_cfg_str(c, "trainer.algo"), "rloo");
    o->num_generations = (int)jr_cfg_int(c, "grpo.num_generations");
    o->prompts_per_step = (int)jr_cfg_int(c, "grpo.prompts_per_step");
    o->max_prompt_length = (int)jr_cfg_int(c, "grpo.max_prompt_length");
    o->max_completion_length = (int)jr_cfg_int(c, "grpo.max_completion_length");
    o->temperature = jr_cfg_float(c, "grpo.temperature");
    o->top_p = jr_cfg_float(c, "grpo.top_p");
    o->top_k = (int)jr_cfg_int(c, "grpo.top_k");
    o->min_p = jr_cfg_float(c, "grpo.min_p");
    o->beta = jr_cfg_float(c, "grpo.beta");
    o->epsilon = jr_cfg_float(c, "grpo.epsilon");
    o->epsilon_high = jr_cfg_float(c, "grpo.epsilon_high");
    o->num_iterations = (int)jr_cfg_int(c, "grpo.num_iterations");
    o->loss_type = (jr_loss_type)parse_enum(jr_cfg_str(c, "grpo.loss_type"),
                                            (const char *const[]){"grpo", "bnpo", "dr_grpo", "dapo", NULL});
    o->scale_rewards = (jr_scale_rewards)parse_enum(jr_cfg_str(c, "grpo.scale_rewards"),
                                                    (const char *const[]){"group", "batch", "none", NULL});
    json_t *rw = jr_cfg_json(c, "grpo.reward_weights");
    if (json_array_size(rw) > JR_GRPO_MAX_WEIGHTS)
        return jr_fail(JR_EINVAL, "%s: grpo.reward_weights has %zu entries (at most %d)", c->source,
                       json_array_size(rw), JR_GRPO_MAX_WEIGHTS);
    o->n_reward_weights = (int)json_array_size(rw);
    for (int k = 0; k < o->n_reward_weights; k++) o->reward_weights[k] = json_number_value(json_array_get(rw, (size_t)k));
    o->normalize_then_sum = !strcmp(jr_cfg_str(c, "grpo.multi_objective_aggregation"), "normalize_then_sum");
    o->mask_truncated_completions = jr_cfg_bool(c, "grpo.mask_truncated_completions");
    o->filter_groups = jr_cfg_bool(c, "grpo.filter_groups");
    o->max_num_gen_batches = (int)jr_cfg_int(c, "grpo.max_num_gen_batches");
    o->overlong_buffer = jr_cfg_bool(c, "grpo.overlong_buffer");
    o->overlong_buffer_len = (int)jr_cfg_int(c, "grpo.overlong_buffer_len");
    o->overlong_penalty_factor = jr_cfg_float(c, "grpo.overlong_penalty_factor");
    o->log_completions_every = jr_cfg_int(c, "grpo.log_completions_every");
    o->log_completions_n = (int)jr_cfg_int(c, "grpo.log_completions_n");
    o->shuffle_rewards = jr_cfg_bool(c, "grpo.shuffle_rewards");
    o->length_control = jr_cfg_bool(c, "grpo.length_control");
    o->async_generation = jr_cfg_bool(c, "grpo.async_generation");
    o->max_in_flight = (int)jr_cfg_int(c, "grpo.max_in_flight");
    o->reward_deadline_s = jr_cfg_float(c, "grpo.reward_deadline_s");
    o->max_unscored_frac = jr_cfg_float(c, "judge.max_unscored_frac");
    return JR_OK;
}
