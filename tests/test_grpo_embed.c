/* test_grpo_embed.c - GRPO embedded in a C program through the step API (grpo_trainer.h), no YAML: its own
 * reward callback (1 when the completion starts with a lowercase letter) through jr_env_from_fn; the mean
 * reward rises by >= 0.3 in 16 steps while the same run with shuffled rewards (the control) does not */
#include "harness.h"
#include "judgerl/grpo_trainer.h"
#include "judgerl/fsutil.h"
#include "judgerl/hfmodel.h"

static double starts_lower(void *ud, const json_t *row, const char *text, size_t len, int *scored, const char **why) {
    (void)ud; (void)row; (void)scored; (void)why;
    return len > 0 && text[0] >= 'a' && text[0] <= 'z';
}

static jr_status tiny_policy(void *ud, jr_model *m) { /* a fresh random model from a config.json */
    jr_model_config cfg;
    jr_status st = jr_model_config_load(&cfg, ud);
    if (!st) st = jr_model_init_random(m, &cfg, 1, 0.02f);
    jr_model_config_free(&cfg);
    return st;
}

/* The ~30 lines a user writes: options, a policy, a reward, then step until done. Returns the mean
 * reward of the last 5 steps minus the first 5 (NAN on error). */
static double train(const char *out_dir, const char *prompts, int shuffle) {
    char model_json[1024];
    snprintf(model_json, sizeof model_json, "%s/configs/models/tiny-byte.json", jt_root());
    jr_grpo_setup s;
    CHECK_OK(jr_grpo_setup_defaults(&s));
    s.run = (jr_run_opts){.seed = 1, .out_dir = out_dir};
    s.trainer.steps = 16;
    s.trainer.batch_size = 64;
    s.trainer.lr = 1e-2;
    s.trainer.lr_schedule = JR_SCHED_CONSTANT;
    s.trainer.tensorboard = 0;
    s.grpo.num_generations = s.grpo.prompts_per_step = 8;
    s.grpo.max_prompt_length = 16;
    s.grpo.max_completion_length = 8;
    s.grpo.shuffle_rewards = shuffle;
    s.policy = (jr_model_source){.load = tiny_policy, .ud = model_json};
    s.data.train = prompts;
    s.data.seed = 1;
    jr_env env;
    CHECK_OK(jr_env_from_fn(&env, starts_lower, NULL));
    s.env = &env;
    jr_grpo_trainer *t = NULL;
    double r[16] = {0}, gain = NAN;
    jr_status st = jr_grpo_open(&t, &s);
    for (int i = 0; !st && !jr_grpo_done(t); i++) {
        st = jr_grpo_step(t);
        r[i] = jr_grpo_reward_mean(t);
    }
    CHECK_OK(st = jr_grpo_close(t, st));
    jr_env_close(&env);
    if (!st) gain = (r[11] + r[12] + r[13] + r[14] + r[15] - r[0] - r[1] - r[2] - r[3] - r[4]) / 5;
    return gain;
}

static char *dir, prompts[1200];

/* Options built in C skip the config's checks: a zeroed field is a clear error, not a wrong run. */
TEST(zeroed_options_are_refused_by_name) {
    jr_env env;
    CHECK_OK(jr_env_from_fn(&env, starts_lower, NULL));
    jr_grpo_setup s = {0};
    s.run.out_dir = dir;
    s.trainer = (jr_trainer_opts){.steps = 1, .batch_size = 8, .log_every = 1, .tokenizer = "byte", .beta1 = 0.9,
                                  .beta2 = 0.999, .eps = 1e-8};
    s.data.train = prompts;
    s.env = &env;
    jr_grpo_trainer *t = (jr_grpo_trainer *)&s;
    s.trainer.log_every = 0;
    CHECK(jr_grpo_open(&t, &s) == JR_EINVAL && !t && strstr(jr_errmsg(), "log_every=0"));
    s.trainer.log_every = 1;
    s.trainer.beta2 = 0;
    CHECK(jr_grpo_open(&t, &s) == JR_EINVAL && strstr(jr_errmsg(), "beta2"));
    s.trainer.beta2 = 0.999;
    CHECK(jr_grpo_open(&t, &s) == JR_EINVAL && strstr(jr_errmsg(), "no model source"));
    char model_json[1024];
    snprintf(model_json, sizeof model_json, "%s/configs/models/tiny-byte.json", jt_root());
    s.policy = (jr_model_source){.load = tiny_policy, .ud = model_json};
    CHECK(jr_grpo_open(&t, &s) == JR_EINVAL && strstr(jr_errmsg(), "num_generations=0"));
    jr_env_close(&env);
}

TEST(embedded_grpo_learns_own_reward) {
    char out[1200];
    snprintf(out, sizeof out, "%s/learn", dir);
    double g = train(out, prompts, 0);
    CHECK_MSG(g >= 0.3, "gain %.3f", g);
    snprintf(out, sizeof out, "%s/learn/model/model.safetensors", dir);
    CHECK(jr_path_exists(out));
}

TEST(embedded_grpo_shuffled_control_does_not_learn) {
    char out[1200];
    snprintf(out, sizeof out, "%s/control", dir);
    double g = train(out, prompts, 1);
    CHECK_MSG(g < 0.1, "gain %.3f", g);
}

int main(void) {
    dir = jt_tmpdir("grpo_embed");
    snprintf(prompts, sizeof prompts, "%s/prompts.jsonl", dir);
    FILE *f = fopen(prompts, "w");
    for (int i = 0; f && i < 32; i++) fprintf(f, "{\"prompt\": \"Item %d:\", \"idx\": %d}\n", i, i);
    if (f) fclose(f);
    RUN(zeroed_options_are_refused_by_name);
    RUN(embedded_grpo_learns_own_reward);
    RUN(embedded_grpo_shuffled_control_does_not_learn);
    free(dir);
    return jt_done();
}
