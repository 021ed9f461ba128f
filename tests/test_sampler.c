/* test_sampler.c - sampling math (greedy, top-k, top-p, min-p, bias, masks, vocabulary bound) and log-probs */
#include "harness.h"

#include "judgerl/sampler.h"
#include "sample/sampler_internal.h"

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
    CHECK(jr_top_logprobs(L5, 5, 5, NULL, 3, ids, lps) == 3);
    CHECK(ids[0] == 1 && ids[1] == 4 && ids[2] == 2);
    CHECK_NEAR(lps[1], 2.9 - log(s), 1e-6, 0);
    /* top alternatives never name a padded id, but are normalised over every row */
    CHECK(jr_top_logprobs(L5, 5, 3, NULL, 5, ids, lps) == 3);
    CHECK(ids[0] == 1 && ids[1] == 2 && ids[2] == 0);
    CHECK_NEAR(lps[0], 3.0 - log(s), 1e-6, 0);
    /* under a constraint's mask: only allowed ids, normalised over them (what the token is drawn from) */
    const uint8_t allow[5] = {1, 0, 1, 0, 0};
    double sa = exp(L5[0]) + exp(L5[2]);
    CHECK(jr_top_logprobs(L5, 5, 5, allow, 3, ids, lps) == 2);
    CHECK(ids[0] == 2 && ids[1] == 0);
    CHECK_NEAR(lps[0], L5[2] - log(sa), 1e-6, 0);
    CHECK_NEAR(exp(lps[0]) + exp(lps[1]), 1.0, 1e-6, 0);
    CHECK_NEAR(jr_logsumexp_allowed(L5, 5, 1.0f, allow), log(sa), 1e-9, 0);
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

/* A plain reference: sort every candidate (when truncating), then top-k, top-p, one draw. */
static const float *ref_z;
static int ref_cmp(const void *a, const void *b) {
    int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    if (ref_z[i] != ref_z[j]) return ref_z[i] > ref_z[j] ? -1 : 1;
    return (i > j) - (i < j);
}

static int32_t ref_sample(const float *logits, int n, const jr_sample_params *p, jr_rng *r) {
    float *pr = malloc(sizeof(float) * n);
    int32_t *idx = malloc(sizeof(int32_t) * n);
    float mx = -INFINITY;
    for (int i = 0; i < n; i++) mx = logits[i] > mx ? logits[i] : mx;
    for (int i = 0; i < n; i++) { pr[i] = expf((logits[i] - mx) * (1.0f / p->temperature)); idx[i] = i; }
    ref_z = pr;
    if ((p->top_k > 0 && p->top_k < n) || p->top_p < 1) qsort(idx, (size_t)n, sizeof *idx, ref_cmp); /* else: id order */
    int k = n;
    if (p->top_k > 0 && p->top_k < k) k = p->top_k;
    if (p->top_p < 1) {
        double tot = 0, cum = 0;
        for (int c = 0; c < k; c++) tot += pr[idx[c]];
        for (int c = 0; c < k; c++) { cum += pr[idx[c]]; if (cum >= p->top_p * tot) { k = c + 1; break; } }
    }
    double tot = 0, cum = 0;
    for (int c = 0; c < k; c++) tot += pr[idx[c]];
    double u = jr_rng_double(r) * tot;
    int32_t out = idx[k - 1];
    for (int c = 0; c < k; c++) { cum += pr[idx[c]]; if (u < cum) { out = idx[c]; break; } }
    free(pr);
    free(idx);
    return out;
}

TEST(truncation_equals_full_sort_reference) {
    enum { V = 5000 };
    float *lg = malloc(sizeof(float) * V);
    jr_rng g;
    jr_rng_seed(&g, 77);
    jr_sample_scratch w = {0};
    int same = 1;
    const float tps[4] = {1.0f, 0.95f, 0.5f, 0.1f};
    const int tks[3] = {0, 40, 1000};
    for (int it = 0; it < 120; it++) {
        double scale = it % 3 == 0 ? 0.1 : it % 3 == 1 ? 2.0 : 8.0; /* flat to peaked */
        for (int i = 0; i < V; i++) lg[i] = (float)(scale * jr_rng_normal(&g));
        jr_sample_params p = jr_sample_params_default();
        p.temperature = 0.8f;
        p.top_p = tps[it % 4];
        p.top_k = tks[(it / 4) % 3];
        jr_rng a, b;
        jr_rng_seed2(&a, 5, (uint64_t)it);
        b = a;
        int32_t x;
        CHECK_OK(jr_sample(lg, V, &p, NULL, &a, &w, &x));
        int32_t y = ref_sample(lg, V, &p, &b);
        if (x != y) { same = 0; printf("  it %d: top_p %g top_k %d: %d vs reference %d\n", it, p.top_p, p.top_k, x, y); }
    }
    CHECK(same);
    free(lg);
    jr_sample_scratch_free(&w);
}

/* The vector exp pass is bitwise glibc's expf on every input it is given (a stride through all 2^32
 * float patterns, the special bounds and their neighbours, every tail length) and its total is the
 * index-order double sum. (All 2^32 patterns were checked once by hand: no difference.) */
static int exp_pass_matches(const float *x, int n, float zmax, float inv_t, float *z) {
    memcpy(z, x, sizeof(float) * (size_t)n);
    double tot = jr_sample_exp_sum(z, n, zmax, inv_t), want = 0;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        float e = expf((x[i] - zmax) * inv_t);
        want += e;
        if (memcmp(&e, &z[i], sizeof e) && !(isnan(e) && isnan(z[i]))) {
            if (bad++ < 3) printf("  exp(%a) = %a, glibc %a\n", (double)((x[i] - zmax) * inv_t), (double)z[i], (double)e);
        }
    }
    if (!(tot == want || (isnan(tot) && isnan(want)))) { printf("  total %a, index-order sum %a\n", tot, want); bad++; }
    return bad;
}

TEST(exp_pass_bitwise_glibc_expf) {
    enum { B = 4096 };
    float x[B], z[B];
    int bad = 0;
    for (uint64_t b = 0; b < (1ull << 32); b += (uint64_t)B * 1021) { /* ~1M patterns, every exponent */
        for (int i = 0; i < B; i++) {
            uint32_t u = (uint32_t)(b + (uint64_t)i * 1021);
            memcpy(&x[i], &u, sizeof u);
        }
        bad += exp_pass_matches(x, B, 0.0f, 1.0f, z);
    }
    const float edge[] = {0x1.62e42ep6f, -0x1.9fe368p6f, -0x1.9d1d9ep6f, 88.0f, -88.0f, -87.33f, 0.0f, -0.0f,
                          INFINITY, -INFINITY, NAN, 0x1p-149f, -0x1p-149f, 1e-30f, -1e-8f};
    int m = 0;
    for (size_t e = 0; e < sizeof edge / sizeof *edge; e++)
        for (int d = -40; d <= 40; d++) { /* each bound and 40 floats either side */
            float v = edge[e];
            for (int k = 0; k < (d < 0 ? -d : d); k++) v = nextafterf(v, d < 0 ? -INFINITY : INFINITY);
            x[m++] = v;
        }
    bad += exp_pass_matches(x, m, 0.0f, 1.0f, z);
    jr_rng g;
    jr_rng_seed(&g, 9);
    for (int i = 0; i < B; i++) x[i] = (float)(6.0 * jr_rng_normal(&g));
    for (int n = 1; n <= 40; n++) bad += exp_pass_matches(x, n, 1.25f, 1.0f / 0.7f, z); /* every tail */
    bad += exp_pass_matches(x, B, 14.0f, 1.0f / 0.3f, z);
    CHECK_MSG(bad == 0, "%d differences from glibc's expf", bad);
}

/* Draws with the one-pass path (no mask, no truncation) and the general one (a mask, NaN, -inf; +inf
 * scores) equal the scalar reference draw for draw, and greedy keeps the first of equal maxima. */
TEST(draws_equal_reference_with_masks_and_specials) {
    enum { V = 20011 };
    float *lg = malloc(sizeof(float) * V);
    uint8_t *allow = malloc(V);
    jr_rng g, a, b;
    jr_rng_seed(&g, 31);
    jr_sample_scratch w = {0};
    int same = 1;
    for (int it = 0; it < 60; it++) {
        for (int i = 0; i < V; i++) {
            lg[i] = (float)((it % 2 ? 0.3 : 5.0) * jr_rng_normal(&g));
            allow[i] = jr_rng_below(&g, 10) != 0;
        }
        jr_sample_params p = jr_sample_params_default();
        p.temperature = it % 3 == 0 ? 1.0f : 0.6f;
        int32_t x, y;
        jr_rng_seed2(&a, 11, (uint64_t)it);
        b = a;
        CHECK_OK(jr_sample(lg, V, &p, NULL, &a, &w, &x));
        y = ref_sample(lg, V, &p, &b);
        same &= x == y;
        /* the general path: masked ids (and NaN, -inf) are never drawn; the draw is the reference's over the rest */
        lg[7] = NAN, lg[8] = -INFINITY, allow[7] = allow[8] = 1;
        float *sub = malloc(sizeof(float) * V);
        int32_t *map = malloc(sizeof(int32_t) * V);
        int n = 0;
        for (int i = 0; i < V; i++)
            if (allow[i] && i != 7 && i != 8) sub[n] = lg[i], map[n++] = i;
        CHECK_OK(jr_sample(lg, V, &p, allow, &a, &w, &x));
        y = map[ref_sample(sub, n, &p, &b)];
        same &= x == y && allow[x];
        free(sub);
        free(map);
    }
    CHECK(same);
    lg[0] = -0.0f, lg[1] = 0.0f, lg[2] = 0.0f;
    for (int i = 3; i < V; i++) lg[i] = -1.0f;
    jr_sample_params p = jr_sample_params_default();
    p.temperature = 0;
    int32_t t;
    CHECK_OK(jr_sample(lg, V, &p, NULL, &a, &w, &t));
    CHECK(t == 0);
    lg[5] = INFINITY, lg[9] = INFINITY;
    CHECK_OK(jr_sample(lg, V, &p, NULL, &a, &w, &t));
    CHECK(t == 5);
    for (int i = 0; i < V; i++) lg[i] = NAN;
    CHECK(jr_sample(lg, V, &p, NULL, &a, &w, &t) == JR_EINVAL);
    free(lg);
    free(allow);
    jr_sample_scratch_free(&w);
}

int main(void) {
    RUN(greedy_is_argmax_and_respects_mask_bias_and_size);
    RUN(temperature_distribution_matches_softmax);
    RUN(top_k_top_p_min_p_truncate);
    RUN(logprobs_are_log_softmax_over_all_rows);
    RUN(same_seed_same_draws);
    RUN(truncation_equals_full_sort_reference);
    RUN(exp_pass_bitwise_glibc_expf);
    RUN(draws_equal_reference_with_masks_and_specials);
    return jt_done();
}
