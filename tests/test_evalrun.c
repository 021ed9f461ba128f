/* test_evalrun.c - `judgerl eval`'s tables (jr_eval_acc): pass@k is jr_pass_at_k_mean over the prompts
 * per component and source, with the pass threshold; unscored samples are left out of every mean and
 * counted with their reasons; IFEval fractions; the flat eval/ metric names training logs */
#include <math.h>
#include <string.h>

#include "harness.h"
#include "judgerl/eval.h"
#include "judgerl/evalrun.h"

static double get(const json_t *o, const char *path) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    const json_t *v = o;
    for (char *s = strtok(buf, "."); s && v; s = strtok(NULL, ".")) v = json_object_get(v, s);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* 5 prompts x 6 samples over two sources, a 0/1 component and a graded one, some unscored */
TEST(passk_per_source_and_threshold) {
    const char *names[2] = {"ok", "score"};
    int ks[3] = {1, 3, 6};
    jr_eval_acc *a = jr_eval_acc_new(2, names, 0.5, ks, 3);
    CHECK(a);
    int n[2][5] = {{0}}, c[2][5] = {{0}}; /* component 0/1, per prompt: scored, passing (value >= 0.5) */
    double sum = 0;
    int scored = 0, unscored = 0;
    for (int p = 0; p < 5; p++)
        for (int i = 0; i < 6; i++) {
            double v[2] = {(p * 7 + i * 3) % 4 == 0 ? 1.0 : 0.0, ((p + i) % 5) / 4.0};
            uint8_t sc[2] = {!(p == 4 && i == 5), 1};
            char g[16];
            snprintf(g, sizeof g, "p%d", p);
            int ok = sc[0] && sc[1];
            jr_eval_score s = {.source = p < 2 ? "math" : "code", .group = g, .has_reward = 1, .reward_scored = ok,
                               .reward = ok ? v[0] + v[1] : NAN, .reason = ok ? NULL : "component 'ok': judge failed",
                               .vals = v, .vscored = sc};
            CHECK_OK(jr_eval_acc_add(a, &s));
            for (int k = 0; k < 2; k++)
                if (sc[k]) { n[k][p]++; c[k][p] += v[k] >= 0.5; }
            if (ok) { sum += v[0] + v[1]; scored++; } else unscored++;
        }
    json_t *s = jr_eval_acc_summary(a);
    CHECK_NEAR(get(s, "reward.mean"), sum / scored, 0, 1e-15);
    CHECK(get(s, "reward.unscored") == unscored && unscored == 1);
    for (int k = 0; k < 2; k++) {
        char key[64];
        for (int i = 0; i < 3; i++) {
            snprintf(key, sizeof key, "reward.components.%s.pass@%d", names[k], ks[i]);
            double want = jr_pass_at_k_mean(n[k], c[k], 5, ks[i]);
            if (isnan(want)) CHECK_MSG(isnan(get(s, key)), "%s: reported though a prompt has < k samples", key);
            else CHECK_MSG(get(s, key) == want, "%s = %g, want %g", key, get(s, key), want);
        }
        snprintf(key, sizeof key, "by_source.math.components.%s.pass@3", names[k]);
        CHECK(get(s, key) == jr_pass_at_k_mean(n[k], c[k], 2, 3));
        snprintf(key, sizeof key, "by_source.code.components.%s.pass@1", names[k]);
        CHECK(get(s, key) == jr_pass_at_k_mean(n[k] + 2, c[k] + 2, 3, 1));
    }
    CHECK(isnan(get(s, "reward.components.ok.pass@6"))); /* prompt 4 has 5 scored samples of "ok" */
    CHECK(get(s, "unscored_reasons.reward: component 'ok': judge failed") == 1);
    json_decref(s);
    jr_eval_acc_free(a);
}

static void put(void *ud, const char *key, double v) { json_object_set_new(ud, key, json_real(v)); }

TEST(ifeval_fractions_and_flat_names) {
    jr_eval_acc *a = jr_eval_acc_new(1, (const char *const[]){"fmt"}, 1.0, (const int[]){1}, 1);
    CHECK(a);
    /* 3 scored IFEval samples: 2/3 + 1/1 + 0/2 instructions strict, loose all pass; one unscored */
    jr_eval_score s1 = {.source = "a", .group = "x", .has_ifeval = 1, .ifeval_scored = 1, .n_instr = 3, .strict_ok = 2, .loose_ok = 3, .loose_all = 1};
    jr_eval_score s2 = {.source = "a", .group = "y", .has_ifeval = 1, .ifeval_scored = 1, .n_instr = 1, .strict_ok = 1, .loose_ok = 1, .strict_all = 1, .loose_all = 1};
    jr_eval_score s3 = {.source = "b", .group = "z", .has_ifeval = 1, .ifeval_scored = 1, .n_instr = 2, .strict_ok = 0, .loose_ok = 2, .loose_all = 1};
    jr_eval_score s4 = {.source = "b", .group = "w", .has_ifeval = 1, .ifeval_reason = "the row lacks kwargs"};
    CHECK_OK(jr_eval_acc_add(a, &s1));
    CHECK_OK(jr_eval_acc_add(a, &s2));
    CHECK_OK(jr_eval_acc_add(a, &s3));
    CHECK_OK(jr_eval_acc_add(a, &s4));
    json_t *s = jr_eval_acc_summary(a);
    CHECK(get(s, "ifeval.prompt_strict") == 1.0 / 3 && get(s, "ifeval.inst_strict") == 3.0 / 6);
    CHECK(get(s, "ifeval.prompt_loose") == 1.0 && get(s, "ifeval.inst_loose") == 1.0);
    CHECK(get(s, "ifeval.unscored") == 1 && get(s, "unscored_reasons.ifeval: the row lacks kwargs") == 1);
    CHECK(!json_object_get(s, "reward")); /* no reward asked for: no reward table, no 0s */
    json_t *flat = json_object();
    jr_eval_summary_flat(s, "eval/", 1, put, flat);
    CHECK(get(flat, "eval/ifeval/prompt_strict") == 1.0 / 3);
    CHECK(!json_object_get(flat, "eval/reward"));
    json_decref(flat);
    json_decref(s);
    jr_eval_acc_free(a);
}

TEST(parse_ks) {
    int ks[4];
    CHECK(jr_eval_parse_ks("1,10,100", ks, 4) == 3 && ks[2] == 100);
    CHECK(jr_eval_parse_ks("1,,2", ks, 4) == -1 && jr_eval_parse_ks("0", ks, 4) == -1 && jr_eval_parse_ks("1,2,3,4,5", ks, 4) == -1);
}

int main(void) {
    RUN(passk_per_source_and_threshold);
    RUN(ifeval_fractions_and_flat_names);
    RUN(parse_ks);
    return jt_done();
}
