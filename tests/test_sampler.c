/* test_sampler.c - sampling math (greedy, top-k, top-p, min-p, bias, masks, vocabulary bound) and log-probs */
#include "harness.h"

#include "judgerl/sampler.h"

static const float L5[5] = {1.0f, 3.0f, 2.0f, 0.5f, 2.9f};

TEST(greedy_is_argmax_and_respects_mask_bias_and_size) {
    jr_sample_params p = jr_sample_params_default();
    p.temperature = 0;
    jr_sample_scratch w = {0};
    jr_rng r;
    jr_rng_seed(&r, 1);
    int32_t t;
    CHECK_OK(jr_sample(L5, 5, &p, NULL, &r, &w, &t));
    CHECK(t == 1);
    uint8_t mask[5] = {1, 0, 1, 1, 1};
    CHECK_OK(jr_sample(L5, 5, &p, mask, &r, &w, &t));
    CHECK(t == 4);
    int32_t bid = 3;
    float bval = 10;
    p.n_bias = 1;
    p.bias_ids = &bid;
    p.bias_vals = &bval;
    CHECK_OK(jr_sample(L5, 5, &p, NULL, &r, &w, &t));
    CHECK(t == 3);
    p.n_bias = 0;
    /* the tokenizer holds 1 id: the padded rows past it are never chosen */
    CHECK_OK(jr_sample(L5, 1, &p, NULL, &r, &w, &t));
    CHECK(t == 0);
    uint8_t none[5] = {0};
    CHECK(jr_sample(L5, 5, &p, none, &r, &w, &t) == JR_EINVAL);
    jr_sample_scratch_free(&w);
}

/* Draws many samples and compares frequencies with the expected truncated distribution. */
static void freq(const jr_sample_params *p, int n_valid, double *f, int draws) {
    jr_sample_scratch w = {0};
    jr_rng r;
    jr_rng_seed(&r, 42);
    for (int i = 0; i < 5; i++) f[i] = 0;
    for (int d = 0; d < draws; d++) {
        int32_t t;
        if (jr_sample(L5, n_valid, p, NULL, &r, &w, &t) == JR_OK) f[t] += 1.0 / draws;
    }
    jr_sample_scratch_free(&w);
}

TEST(temperature_distribution_matches_softmax) {
    jr_sample_params p = jr_sample_params_default();
    p.temperature = 0.7f;
    double f[5], e[5], s = 0;
    freq(&p, 5, f, 200000);
    for (int i = 0; i < 5; i++) s += e[i] = exp(L5[i] / 0.7);
    for (int i = 0; i < 5; i++) CHECK_NEAR(f[i], e[i] / s, 0.005, 0);
}

TEST(top_k_top_p_min_p_truncate) {
    jr_sample_params p = jr_sample_params_default();
    double f[5];
    p.top_k = 2; /* ids 1 and 4 */
    freq(&p, 5, f, 100000);
    double a = exp(3.0), b = exp(2.9);
    CHECK_NEAR(f[1], a / (a + b), 0.01, 0);
    CHECK_NEAR(f[4], b / (a + b), 0.01, 0);
    CHECK(f[0] == 0 && f[2] == 0 && f[3] == 0);
    p.top_k = 0;
    /* probabilities: sorted 1 (0.402), 4 (0.363), 2 (0.148), 0 (0.054), 3 (0.033); top_p 0.7 keeps 1, 4 */
    p.top_p = 0.7f;
    freq(&p, 5, f, 50000);
    CHECK(f[1] > 0 && f[4] > 0 && f[2] == 0 && f[0] == 0 && f[3] == 0);
    p.top_p = 0.8f; /* 0.402 + 0.363 = 0.765 < 0.8: keeps id 2 too */
    freq(&p, 5, f, 50000);
    CHECK(f[2] > 0 && f[0] == 0 && f[3] == 0);
    p.top_p = 1;
    p.min_p = 0.3f; /* p/pmax: id2 = e^-1 = 0.37 kept, id0 = e^-2 = 0.135 dropped */
    freq(&p, 5, f, 50000);
    CHECK(f[2] > 0 && f[0] == 0 && f[3] == 0);
}

TEST(logprobs_are_log_softmax_over_all_rows) {
    double s = 0;
    for (int i = 0; i < 5; i++) s += exp(L5[i] / 2.0);
    CHECK_NEAR(jr_logprob_at(L5, 5, 2.0f, 2), L5[2] / 2.0 - log(s), 1e-6, 0);
    s = 0;
    for (int i = 0; i < 5; i++) s += exp(L5[i]);
    int32_t ids[3];
    float lps[3];
    CHECK(jr_top_logprobs(L5, 5, 5, 3, ids, lps) == 3);
    CHECK(ids[0] == 1 && ids[1] == 4 && ids[2] == 2);
    CHECK_NEAR(lps[1], 2.9 - log(s), 1e-6, 0);
    /* top alternatives never name a padded id, but are normalised over every row */
    CHECK(jr_top_logprobs(L5, 5, 3, 5, ids, lps) == 3);
    CHECK(ids[0] == 1 && ids[1] == 2 && ids[2] == 0);
    CHECK_NEAR(lps[0], 3.0 - log(s), 1e-6, 0);
}

TEST(same_seed_same_draws) {
    jr_sample_params p = jr_sample_params_default();
    jr_sample_scratch w = {0};
    jr_rng a, b;
    jr_rng_seed2(&a, 7, 3);
    jr_rng_seed2(&b, 7, 3);
    int same = 1;
    for (int i = 0; i < 100; i++) {
        int32_t x, y;
        jr_sample(L5, 5, &p, NULL, &a, &w, &x);
        jr_sample(L5, 5, &p, NULL, &b, &w, &y);
        same &= x == y;
    }
    CHECK(same);
    jr_sample_scratch_free(&w);
}

int main(void) {
    RUN(greedy_is_argmax_and_respects_mask_bias_and_size);
    RUN(temperature_distribution_matches_softmax);
    RUN(top_k_top_p_min_p_truncate);
    RUN(logprobs_are_log_softmax_over_all_rows);
    RUN(same_seed_same_draws);
    return jt_done();
}
