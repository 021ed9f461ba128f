/* test_generate.c - KV-cache inference and batched generation against the training forward:
 * logits, log-probs at temperature T, batch invariance, seeds, shared prefill, stop rules, constraints */
#include "harness.h"

#include <omp.h>

#include "judgerl/cpu.h"
#include "judgerl/generate.h"
#include "judgerl/hfmodel.h"
#include "judgerl/kvcache.h"
#include "judgerl/lora.h"
#include "judgerl/model.h"
#include "judgerl/nn.h"

/* Tolerance between the cached incremental forward and the full training forward (both fp32, same
 * kernels, different summation order in attention): |a - b| <= 2e-5 + 2e-5 |b|. */
#define ATOL 2e-5
#define RTOL 2e-5

/* The options every lm of the tests below opens with (main runs some tests in fp32, then in bf16). */
static jr_kv_opts KVO;
static jr_status open_lm(jr_lm *lm, const jr_model *m, int slots, int ctx) { return jr_kv_lm_open_opts(lm, m, slots, ctx, &KVO); }

static const char *fixtures[] = {"llama_gqa", "qwen2_bias", "qwen3_qknorm", "qwen3_tied_bias"};

static int load_fixture(jr_model *m, const char *name) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/engine/%s", jt_root(), name);
    if (jr_model_load(m, dir)) { printf("  %s\n", jr_errmsg()); return -1; }
    return 0;
}

/* A random model with a 300-id vocabulary: 256 bytes, an eos id (256), 43 multi-byte pieces. */
#define NV 300
#define EOS 256
static char piece[NV][8];
static const char *tok_bytes[NV];
static int32_t tok_len[NV];
static jr_gen_vocab V;

static void vocab_init(void) {
    for (int i = 0; i < NV; i++) {
        if (i < 256) { piece[i][0] = (char)i; tok_len[i] = 1; }
        else if (i == EOS) { tok_bytes[i] = NULL; tok_len[i] = 0; continue; }
        else { snprintf(piece[i], sizeof piece[i], "%c%c", 'a' + (i % 26), 'a' + (i / 26) % 26); tok_len[i] = 2; }
        tok_bytes[i] = piece[i];
    }
    static const int32_t eos[1] = {EOS};
    V.tb = (jr_token_bytes){NV, tok_bytes, tok_len};
    V.eos = eos;
    V.n_eos = 1;
}

/* A random Qwen3-layout model (4 query heads, 2 key/value heads, q/k norms) of the given widths. */
static int random_model_sized(jr_model *m, int hidden, int layers, int head_dim, int inter, uint64_t seed, float std) {
    jr_model_config c;
    jr_model_config_init(&c, JR_ARCH_QWEN3);
    c.hidden_size = hidden;
    c.num_hidden_layers = layers;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.head_dim = head_dim;
    c.intermediate_size = inter;
    c.vocab_size = NV + 4; /* padded rows past the tokenizer */
    c.max_position_embeddings = 256;
    c.qk_norm = 1;
    if (jr_model_init_random(m, &c, seed, std)) { printf("  %s\n", jr_errmsg()); return -1; }
    return 0;
}

static int random_model(jr_model *m, float std) { return random_model_sized(m, 32, 2, 8, 64, 7, std); }

/* Prefills the first P of T random ids (seeded) into slot 1 of a cache opened with *o over m, then
 * decodes the rest one by one: the worst |kv - forward| - rtol |forward| over the logits of positions
 * P-1 .. T-1 against the training forward (T <= 64). */
static double kv_gap_to_forward(jr_model *m, const jr_kv_opts *o, int T, int P, uint64_t seed, double rtol) {
    int V0 = m->cfg.vocab_size;
    int32_t ids[64];
    jr_rng r;
    jr_rng_seed(&r, seed);
    for (int i = 0; i < T; i++) ids[i] = (int32_t)jr_rng_below(&r, (uint64_t)V0);
    jr_acts a;
    CHECK_OK(jr_acts_init(&a, m, 1, T));
    CHECK_OK(jr_model_forward(m, &a, ids, 1, T));
    jr_lm lm;
    CHECK_OK(jr_kv_lm_open_opts(&lm, m, 2, T + 8, o));
    float *lg = malloc(sizeof(float) * (size_t)V0);
    double worst = 0;
    CHECK_OK(lm.prefill(lm.impl, 1, ids, P, lg));
    for (int t = P - 1; t < T; t++) {
        if (t >= P) { int slot = 1; CHECK_OK(lm.decode(lm.impl, 1, &slot, &ids[t], lg)); }
        for (int v = 0; v < V0; v++) {
            double ref = a.logits[(size_t)t * V0 + v], d = fabs(lg[v] - ref) - rtol * fabs(ref);
            if (d > worst) worst = d;
        }
    }
    free(lg);
    jr_kv_lm_close(&lm);
    jr_acts_free(&a);
    return worst;
}

TEST(kv_logits_equal_training_forward) {
    jr_kv_opts o = jr_kv_opts_default();
    for (size_t f = 0; f < sizeof fixtures / sizeof *fixtures; f++) {
        jr_model m;
        if (load_fixture(&m, fixtures[f])) { CHECK(0); continue; }
        double worst = kv_gap_to_forward(&m, &o, 24, 9, f, RTOL);
        CHECK_MSG(worst <= ATOL, "%s: worst logit gap %.3g", fixtures[f], worst);
        jr_model_free(&m);
    }
}

TEST(decode_rows_do_not_depend_on_the_batch) {
    jr_model m;
    if (random_model(&m, 0.5f)) { CHECK(0); return; }
    jr_lm lm;
    CHECK_OK(open_lm(&lm, &m, 8, 64));
    int V0 = lm.n_logits;
    float *alone = malloc(sizeof(float) * V0), *batch = malloc(sizeof(float) * 8 * V0);
    int32_t prompt[5] = {1, 2, 3, 4, 5};
    for (int s = 0; s < 8; s++) { prompt[0] = s; CHECK_OK(lm.prefill(lm.impl, s, prompt, 5, batch)); }
    /* slot 3 alone, then the same step for all 8 slots from a copy of the same state */
    int slots[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    int32_t toks[8] = {9, 8, 7, 6, 5, 4, 3, 2};
    CHECK_OK(lm.copy(lm.impl, 7, 3));
    int s3 = 3;
    CHECK_OK(lm.decode(lm.impl, 1, &s3, &toks[3], alone));
    int32_t t7[8] = {9, 8, 7, 6, 5, 4, 3, 6}; /* slot 7 (a copy of 3 before the step) gets token 6 too */
    int sl[7] = {0, 1, 2, 4, 5, 6, 7};
    int32_t tk[7] = {t7[0], t7[1], t7[2], t7[4], t7[5], t7[6], t7[7]};
    CHECK_OK(lm.decode(lm.impl, 7, sl, tk, batch));
    CHECK(memcmp(alone, batch + (size_t)6 * V0, sizeof(float) * (size_t)V0) == 0);
    (void)slots;
    free(alone);
    free(batch);
    jr_kv_lm_close(&lm);
    jr_model_free(&m);
}

/* A decode row's logits are bitwise the same alone and at any place in a batch of 2..12 rows (every
 * register block of the kernels: 4-row blocks, then 3, 2 or 1 rows left over), and a prompt's prefill
 * logits the same whole and alone as batched with other prompts and decode rows (jr_lm.extend). */
static void rows_same_alone_and_in_every_batch_size(void) {
    jr_model m;
    if (random_model(&m, 0.5f)) { CHECK(0); return; }
    jr_lm lm;
    CHECK_OK(open_lm(&lm, &m, 14, 64));
    int V0 = lm.n_logits;
    float *alone = malloc(sizeof(float) * V0), *batch = malloc(sizeof(float) * 14 * V0);
    int32_t prompt[5] = {1, 2, 3, 4, 5};
    for (int s = 0; s < 13; s++) { prompt[0] = s; CHECK_OK(lm.prefill(lm.impl, s, prompt, 5, batch)); }
    int32_t tok = 6, toks[13] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 10, 11, 12, 13};
    for (int N = 2; N <= 12; N++) {
        CHECK_OK(lm.copy(lm.impl, 13, 0)); /* slot 13: slot 0's state, decoded alone */
        int s13 = 13;
        CHECK_OK(lm.decode(lm.impl, 1, &s13, &tok, alone));
        CHECK_OK(lm.copy(lm.impl, 13, 0));
        int slots[12], at = 5 * N / 7;
        int32_t tk[12];
        for (int i = 0; i < N; i++) { slots[i] = i + 1; tk[i] = toks[i]; }
        slots[at] = 13;
        tk[at] = tok;
        CHECK_OK(lm.decode(lm.impl, N, slots, tk, batch));
        CHECK_MSG(!memcmp(alone, batch + (size_t)at * V0, sizeof(float) * (size_t)V0), "decode row %d of %d differs", at, N);
        for (int i = 0; i < N; i++) /* undo: every slot back to its prompt */
            if (slots[i] != 13) { prompt[0] = slots[i]; CHECK_OK(lm.prefill(lm.impl, slots[i], prompt, 5, batch)); }
    }
    if (lm.batch_prefill) { /* 3 prompts of 6, 3 and 1 tokens with 2 decode rows, against the 6-token one alone */
        int32_t p6[6] = {40, 41, 42, 43, 44, 45}, p3[3] = {7, 8, 9}, d1 = 3, d2 = 4, p1 = 17;
        CHECK_OK(lm.prefill(lm.impl, 13, p6, 6, alone));
        const int32_t *tp[5] = {&d1, p3, p6, &p1, &d2};
        int sl[5] = {1, 2, 13, 3, 4}, n[5] = {1, 3, 6, 1, 1}, st[5] = {5, 0, 0, 0, 5};
        CHECK_OK(lm.extend(lm.impl, 5, sl, tp, n, st, batch));
        CHECK_MSG(!memcmp(alone, batch + (size_t)2 * V0, sizeof(float) * (size_t)V0), "prefill batched differs from alone");
    }
    free(alone);
    free(batch);
    jr_kv_lm_close(&lm);
    jr_model_free(&m);
}

/* Log-probs the sampler recorded equal the training forward's over prompt + completion at the
 * same temperature (logits / T), for each of n sequences sharing one prefill. */
static void check_logprobs_vs_training_in(float temperature, float top_p, jr_compute comp, double atol) {
    jr_model m;
    if (random_model(&m, 0.3f)) { CHECK(0); return; }
    m.compute = comp; /* the trainer's matmuls; the sampler's (KV cache) are KVO's */
    jr_lm lm;
    CHECK_OK(open_lm(&lm, &m, 4, 64));
    int32_t prompt[6] = {72, 101, 108, 108, 111, 33};
    const int32_t *prompts[1] = {prompt};
    int lens[1] = {6};
    jr_gen_params p = jr_gen_params_default();
    p.sample.temperature = temperature;
    p.sample.top_p = top_p;
    p.max_tokens = 20;
    p.has_seed = 1;
    p.seed = 11;
    p.logprobs = 1;
    p.ignore_eos = 1;
    jr_gen_seq out[4];
    CHECK_OK(jr_generate(&lm, &V, 1, prompts, lens, 4, &p, out));
    float t = temperature > 0 ? temperature : 1.0f;
    int distinct = 0;
    double worst = 0, worst_raw = 0;
    int32_t first[20] = {0};
    if (out[0].n_tokens == 20) memcpy(first, out[0].tokens, sizeof first);
    for (int i = 0; i < 4; i++) {
        int n = out[i].n_tokens, T = 6 + n;
        CHECK(n == 20 && !strcmp(out[i].finish_reason, "length"));
        if (i > 0 && n == 20 && memcmp(out[i].tokens, first, sizeof first)) distinct = 1;
        int32_t ids[64], tg[64];
        memcpy(ids, prompt, sizeof prompt);
        memcpy(ids + 6, out[i].tokens, sizeof(int32_t) * (size_t)n);
        for (int k = 0; k < T; k++) tg[k] = k >= 5 && k + 1 < T ? ids[k + 1] : -1;
        jr_acts a;
        CHECK_OK(jr_acts_init(&a, &m, 1, T));
        CHECK_OK(jr_model_forward(&m, &a, ids, 1, T));
        float lp[64], raw[64];
        jr_model_logprobs(&m, &a, tg, t, lp);
        jr_model_logprobs(&m, &a, tg, 1.0f, raw);
        for (int k = 0; k < n; k++) {
            double d = fabs(out[i].logprobs[k] - lp[5 + k]) - RTOL * fabs(lp[5 + k]);
            if (d > worst) worst = d;
            d = fabs(out[i].raw_logprobs[k] - raw[5 + k]) - RTOL * fabs(raw[5 + k]);
            if (d > worst_raw) worst_raw = d;
        }
        jr_acts_free(&a);
        jr_gen_seq_free(&out[i]);
    }
    CHECK_MSG(worst <= atol, "T=%g: worst log-prob gap %.3g", temperature, worst);
    CHECK_MSG(worst_raw <= atol, "raw: worst log-prob gap %.3g", worst_raw);
    if (comp == JR_COMPUTE_BF16 || KVO.weights == JR_COMPUTE_BF16)
        printf("  T=%g: %s trainer vs %s sampler: worst log-prob gap %.3g (tolerance %.3g)\n", temperature,
               comp == JR_COMPUTE_BF16 ? "bf16" : "fp32", KVO.weights == JR_COMPUTE_BF16 ? "bf16" : "fp32",
               worst > worst_raw ? worst : worst_raw, atol);
    if (temperature > 0) CHECK(distinct);
    jr_kv_lm_close(&lm);
    jr_model_free(&m);
}

static void check_logprobs_vs_training(float temperature, float top_p) {
    check_logprobs_vs_training_in(temperature, top_p, JR_COMPUTE_F32, ATOL);
}

TEST(sampler_logprobs_equal_training_logprobs) {
    check_logprobs_vs_training(0.7f, 0.9f);
    check_logprobs_vs_training(1.0f, 1.0f);
    check_logprobs_vs_training(0.0f, 1.0f);
}

/* With model.compute bfloat16 the trainer's log-probs differ from the fp32 sampler's by bf16
 * rounding only: |a - b| <= BF16_LP_ATOL + 2e-5 |b| (measured worst 0.092 nats at T=0.7 and 0.067
 * at T=1 on this model, whose weights (std 0.3) make large logits; AVX512-BF16, 2026-11-23). GRPO's
 * ratio does not see this gap: its old and reference log-probs come from the trainer's own forward
 * in the same compute type (grpo_train.c micro_logprobs), not from the sampler. */
#define BF16_LP_ATOL 0.15
TEST(sampler_logprobs_near_bf16_training_logprobs) {
    SKIP_WITHOUT_ONEDNN_BF16();
    printf("  path: %s, oneDNN ISA %s\n", jr_nn_bf16_native() ? "bf16 units" : "NO bf16 units (emulated)", jr_nn_isa());
    check_logprobs_vs_training_in(0.7f, 0.9f, JR_COMPUTE_BF16, BF16_LP_ATOL);
    check_logprobs_vs_training_in(1.0f, 1.0f, JR_COMPUTE_BF16, BF16_LP_ATOL);
}

TEST(seeded_request_same_alone_and_batched_with_31_others) {
    jr_model m;
    if (random_model(&m, 0.1f)) { CHECK(0); return; }
    int32_t prompt[4] = {10, 20, 30, 40};
    jr_gen_params p = jr_gen_params_default();
    p.sample.temperature = 1.0f;
    p.sample.top_p = 0.95f;
    p.max_tokens = 24;
    p.has_seed = 1;
    p.seed = 1234;
    jr_lm lm1;
    CHECK_OK(open_lm(&lm1, &m, 1, 64));
    jr_gen *g;
    CHECK_OK(jr_gen_open(&g, &lm1, &V, 1));
    jr_gen_req *r;
    CHECK_OK(jr_gen_add(g, prompt, 4, 1, &p, NULL, NULL, &r));
    while (!jr_gen_req_done(r)) CHECK_OK(jr_gen_step(g));
    const jr_gen_seq *a = jr_gen_req_seq(r, 0);
    int32_t alone[64];
    int n_alone = a->n_tokens;
    memcpy(alone, a->tokens, sizeof(int32_t) * (size_t)n_alone);
    jr_gen_close(g);
    jr_kv_lm_close(&lm1);

    /* Now with 31 other requests (other prompts, seeds, lengths), ours added in the middle of a run. */
    jr_lm lm;
    CHECK_OK(open_lm(&lm, &m, 32, 64));
    CHECK_OK(jr_gen_open(&g, &lm, &V, 99));
    jr_gen_req *others[31];
    for (int k = 0; k < 31; k++) {
        int32_t op[3] = {k, k + 1, 7};
        jr_gen_params q = p;
        q.seed = (uint64_t)k;
        q.has_seed = k % 2;
        q.max_tokens = 5 + k;
        CHECK_OK(jr_gen_add(g, op, 3, 1, &q, NULL, NULL, &others[k]));
    }
    CHECK_OK(jr_gen_step(g));
    CHECK_OK(jr_gen_step(g));
    CHECK_OK(jr_gen_add(g, prompt, 4, 1, &p, NULL, NULL, &r));
    while (!jr_gen_req_done(r)) CHECK_OK(jr_gen_step(g));
    const jr_gen_seq *b = jr_gen_req_seq(r, 0);
    CHECK(b->n_tokens == n_alone && !memcmp(b->tokens, alone, sizeof(int32_t) * (size_t)n_alone));
    jr_gen_close(g);
    jr_kv_lm_close(&lm);
    jr_model_free(&m);
}

typedef struct { char buf[4096]; size_t len; int done_calls; } collect;

static void on_ev(void *ud, jr_gen_req *r, int index, const jr_gen_seq *s, const char *d, size_t len, int from) {
    (void)r; (void)index; (void)from;
    collect *c = ud;
    memcpy(c->buf + c->len, d, len);
    c->len += len;
    if (s->done) c->done_calls++;
}

TEST(stop_strings_eos_length_and_streamed_text) {
    jr_model m;
    if (random_model(&m, 0.1f)) { CHECK(0); return; }
    jr_lm lm;
    CHECK_OK(open_lm(&lm, &m, 4, 64));
    jr_gen *g;
    CHECK_OK(jr_gen_open(&g, &lm, &V, 5));
    int32_t prompt[2] = {1, 2};
    /* A bias makes "ab" likely (id 256+26*... is not "ab": use bytes 'a','b'); the stop string "b" ends it. */
    int32_t bid[2] = {'a', 'b'};
    float bval[2] = {8, 7};
    jr_gen_params p = jr_gen_params_default();
    p.sample.n_bias = 2;
    p.sample.bias_ids = bid;
    p.sample.bias_vals = bval;
    p.max_tokens = 40;
    p.has_seed = 1;
    p.seed = 3;
    const char *stop[1] = {"ab"};
    p.stop = stop;
    p.n_stop = 1;
    p.ignore_eos = 1;
    collect c = {{0}, 0, 0};
    jr_gen_req *r;
    CHECK_OK(jr_gen_add(g, prompt, 2, 1, &p, on_ev, &c, &r));
    while (!jr_gen_req_done(r)) CHECK_OK(jr_gen_step(g));
    const jr_gen_seq *s = jr_gen_req_seq(r, 0);
    CHECK_STR(s->finish_reason, "stop");
    CHECK(strstr(s->text, "ab") == NULL && s->n_tokens < 40);
    CHECK(c.len == s->text_len && !memcmp(c.buf, s->text, s->text_len) && c.done_calls == 1);
    jr_gen_release(g, r);
    /* eos forced by a bias: finish "stop" after one token, no text */
    int32_t eid = EOS;
    float ev = 100;
    jr_gen_params q = jr_gen_params_default();
    q.sample.n_bias = 1;
    q.sample.bias_ids = &eid;
    q.sample.bias_vals = &ev;
    CHECK_OK(jr_gen_add(g, prompt, 2, 2, &q, NULL, NULL, &r));
    while (!jr_gen_req_done(r)) CHECK_OK(jr_gen_step(g));
    CHECK(jr_gen_req_seq(r, 1)->n_tokens == 1 && jr_gen_req_seq(r, 1)->text_len == 0);
    CHECK_STR(jr_gen_req_seq(r, 1)->finish_reason, "stop");
    jr_gen_release(g, r);
    /* max_tokens: "length" */
    q = jr_gen_params_default();
    q.max_tokens = 3;
    q.ignore_eos = 1;
    CHECK_OK(jr_gen_add(g, prompt, 2, 1, &q, NULL, NULL, &r));
    while (!jr_gen_req_done(r)) CHECK_OK(jr_gen_step(g));
    CHECK(jr_gen_req_seq(r, 0)->n_tokens == 3);
    CHECK_STR(jr_gen_req_seq(r, 0)->finish_reason, "length");
    jr_gen_release(g, r);
    /* padded rows (ids 300..303) are never sampled, even when biased up */
    int32_t pid = NV + 1;
    float pv = 100;
    q = jr_gen_params_default();
    q.sample.n_bias = 1;
    q.sample.bias_ids = &pid;
    q.sample.bias_vals = &pv;
    q.max_tokens = 30;
    q.ignore_eos = 1;
    CHECK_OK(jr_gen_add(g, prompt, 2, 1, &q, NULL, NULL, &r));
    while (!jr_gen_req_done(r)) CHECK_OK(jr_gen_step(g));
    for (int k = 0; k < jr_gen_req_seq(r, 0)->n_tokens; k++) CHECK(jr_gen_req_seq(r, 0)->tokens[k] < NV);
    jr_gen_release(g, r);
    jr_gen_close(g);
    jr_kv_lm_close(&lm);
    jr_model_free(&m);
}

TEST(constrained_choice_from_a_random_model) {
    jr_model m;
    if (random_model(&m, 1.0f)) { CHECK(0); return; }
    jr_lm lm;
    CHECK_OK(open_lm(&lm, &m, 8, 64));
    const char *choices[3] = {"GOOD", "BAD", "UNSURE"};
    jr_constraint *c;
    CHECK_OK(jr_constraint_choice(&c, &V.tb, choices, 3));
    int32_t p0[3] = {5, 6, 7}, p1[2] = {100, 3};
    const int32_t *prompts[2] = {p0, p1};
    int lens[2] = {3, 2};
    jr_gen_params p = jr_gen_params_default();
    p.constraint = c;
    p.max_tokens = 32;
    p.sample.temperature = 1.5f;
    jr_gen_seq out[16];
    CHECK_OK(jr_generate(&lm, &V, 2, prompts, lens, 8, &p, out));
    for (int i = 0; i < 16; i++) {
        CHECK_MSG(!strcmp(out[i].text, "GOOD") || !strcmp(out[i].text, "BAD") || !strcmp(out[i].text, "UNSURE"), "got '%s'", out[i].text);
        CHECK_STR(out[i].finish_reason, "stop");
        jr_gen_seq_free(&out[i]);
    }
    jr_constraint_free(c);
    jr_kv_lm_close(&lm);
    jr_model_free(&m);
}

/* bf16 generation (jr_kv_opts.weights = BF16, optionally a bf16 KV cache) against the fp32 training
 * forward: |a - b| <= BF16_LOGIT_ATOL + 2% |b| per logit (bf16 rounding of weights and activations;
 * the same bound the bf16 trainer's tests use), with the AVX512-BF16 kernel and the fp32 fallback. */
#define BF16_LOGIT_ATOL 0.1
static void bf16_logits_one(int fallback, int kv_bf16) {
    jr_matmul_rows_bf16_force_fallback(fallback);
    for (size_t f = 0; f < sizeof fixtures / sizeof *fixtures; f++) {
        jr_model m;
        if (load_fixture(&m, fixtures[f])) { CHECK(0); continue; }
        int T = 24, P = 9, V0 = m.cfg.vocab_size;
        int32_t ids[24];
        jr_rng r;
        jr_rng_seed(&r, f);
        for (int i = 0; i < T; i++) ids[i] = (int32_t)jr_rng_below(&r, (uint64_t)V0);
        jr_acts a;
        CHECK_OK(jr_acts_init(&a, &m, 1, T));
        CHECK_OK(jr_model_forward(&m, &a, ids, 1, T));
        jr_lm lm, lm32;
        jr_kv_opts o = {JR_COMPUTE_BF16, kv_bf16, 1};
        CHECK_OK(jr_kv_lm_open_opts(&lm, &m, 2, 32, &o));
        CHECK_OK(jr_kv_lm_open(&lm32, &m, 2, 32));
        float *lg = malloc(sizeof(float) * (size_t)V0), *lg32 = malloc(sizeof(float) * (size_t)V0);
        double worst = 0, gap32 = 0;
        CHECK_OK(lm.prefill(lm.impl, 1, ids, P, lg));
        CHECK_OK(lm32.prefill(lm32.impl, 1, ids, P, lg32));
        for (int t = P - 1; t < T; t++) {
            if (t >= P) {
                int slot = 1;
                CHECK_OK(lm.decode(lm.impl, 1, &slot, &ids[t], lg));
                CHECK_OK(lm32.decode(lm32.impl, 1, &slot, &ids[t], lg32));
            }
            for (int v = 0; v < V0; v++) {
                double ref = a.logits[(size_t)t * V0 + v], d = fabs(lg[v] - ref) - 0.02 * fabs(ref);
                if (d > worst) worst = d;
                if (fabs(lg[v] - lg32[v]) > gap32) gap32 = fabs(lg[v] - lg32[v]);
            }
        }
        printf("  %s, %s kernel, KV cache %s: worst logit gap to fp32 %.3g beyond 2%% (tolerance %.3g), max |bf16 - fp32| %.3g\n",
               fixtures[f], jr_matmul_rows_bf16_kernel(), kv_bf16 ? "bf16" : "fp32", worst, BF16_LOGIT_ATOL, gap32);
        CHECK_MSG(worst <= BF16_LOGIT_ATOL, "%s: worst logit gap %.3g", fixtures[f], worst);
        CHECK_MSG(gap32 > 0, "%s: bf16 logits equal the fp32 ones bit for bit: the bf16 path did not run", fixtures[f]);
        free(lg);
        free(lg32);
        jr_kv_lm_close(&lm);
        jr_kv_lm_close(&lm32);
        jr_acts_free(&a);
        jr_model_free(&m);
    }
    jr_matmul_rows_bf16_force_fallback(0);
}

TEST(bf16_kv_logits_near_training_forward) {
    printf("  CPU kernel: %s\n", jr_matmul_rows_bf16_kernel());
    bf16_logits_one(0, 0);
    bf16_logits_one(0, 1);
    bf16_logits_one(1, 0);
}

/* Head sizes 64 and 128 (the common ones: attention has its own register kernel for them, which the
 * fixtures' small heads never reach) against the training forward: fp32 cache within ATOL + RTOL |b|,
 * bf16 cache (keys and values rounded) within BF16_LOGIT_ATOL + 2% |b|; prefill then decode steps. */
TEST(wide_head_kv_logits_near_training_forward) {
    for (int D = 64; D <= 128; D *= 2)
        for (int kv_bf16 = 0; kv_bf16 < 2; kv_bf16++) {
            jr_model_config c;
            jr_model_config_init(&c, JR_ARCH_QWEN3);
            c.hidden_size = 40; /* not a multiple of 16: the matmuls' tails too */
            c.num_hidden_layers = 2;
            c.num_attention_heads = 2;
            c.num_key_value_heads = 1;
            c.head_dim = D;
            c.intermediate_size = 48;
            c.vocab_size = NV + 4;
            c.max_position_embeddings = 256;
            c.qk_norm = 1;
            jr_model m;
            if (jr_model_init_random(&m, &c, 11, 0.3f)) { CHECK_MSG(0, "%s", jr_errmsg()); return; }
            jr_kv_opts o = jr_kv_opts_default();
            o.kv_bf16 = kv_bf16;
            double atol = kv_bf16 ? BF16_LOGIT_ATOL : ATOL, rtol = kv_bf16 ? 0.02 : RTOL;
            double worst = kv_gap_to_forward(&m, &o, 40, 17, (uint64_t)D + (uint64_t)kv_bf16, rtol);
            printf("  head_dim %d, KV cache %s: worst logit gap %.3g beyond %g%% (tolerance %.3g)\n", D, kv_bf16 ? "bf16" : "fp32", worst, 100 * rtol, atol);
            CHECK_MSG(worst <= atol, "head_dim %d, KV cache %s: worst logit gap %.3g", D, kv_bf16 ? "bf16" : "fp32", worst);
            jr_model_free(&m);
        }
}

/* The bf16 kernels against a float64 product of the same bf16 operands, odd shapes (tails), and
 * batch invariance of the kernel itself (one row alone == the same row among 7 others, bitwise). */
static float rb16(float f) { uint16_t h; jr_bf16_from_f32(&h, &f, 1); uint32_t u = (uint32_t)h << 16; memcpy(&f, &u, 4); return f; }
TEST(bf16_rows_kernel_exact_and_batch_invariant) {
    /* every leftover-row block (N % 4 = 1, 2, 3) with and without the next group prefetched (OC >= 16),
     * C over the kernel's k chunk (1024) with a tail, more rows than a pass of the chunked sums (64) */
    int shapes[][3] = {{1, 32, 16}, {7, 45, 19}, {8, 768, 33}, {3, 1000, 5}, {13, 64, 64}, {2, 96, 40}, {6, 64, 24}, {5, 33, 17},
                       {70, 2100, 24}, {9, 1100, 17}}; /* the last two: C cut in k chunks, rows in passes of 64 */
    for (int fb = 0; fb < 2; fb++) {
        jr_matmul_rows_bf16_force_fallback(fb);
        for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
            int N = shapes[k][0], C = shapes[k][1], OC = shapes[k][2];
            jr_rng r;
            jr_rng_seed(&r, k + 100);
            float *x = malloc(sizeof(float) * (size_t)N * C), *wf = malloc(sizeof(float) * (size_t)OC * C);
            float *bias = malloc(sizeof(float) * (size_t)OC), *out = malloc(sizeof(float) * (size_t)N * OC);
            float *one = malloc(sizeof(float) * (size_t)OC);
            uint16_t *w = malloc(sizeof(uint16_t) * (size_t)OC * C), *scr = malloc(sizeof(uint16_t) * (size_t)N * C);
            for (long i = 0; i < (long)N * C; i++) x[i] = (float)jr_rng_normal(&r);
            for (long i = 0; i < (long)OC * C; i++) wf[i] = (float)jr_rng_normal(&r);
            for (int i = 0; i < OC; i++) bias[i] = (float)jr_rng_normal(&r);
            jr_bf16_from_f32(w, wf, (long)OC * C);
            jr_matmul_rows_bf16(out, x, w, bias, N, C, OC, scr);
            int bad = 0;
            for (int n = 0; n < N; n++)
                for (int o = 0; o < OC; o++) {
                    double ref = bias[o], mag = fabs(bias[o]);
                    for (int c = 0; c < C; c++) {
                        double p = (double)rb16(x[(size_t)n * C + c]) * rb16(wf[(size_t)o * C + c]);
                        ref += p;
                        mag += fabs(p);
                    }
                    if (fabs(out[(size_t)n * OC + o] - ref) > 1e-5 * mag + 1e-6) bad++;
                }
            CHECK_MSG(bad == 0, "%s kernel, %d x %d x %d: %d outputs off", jr_matmul_rows_bf16_kernel(), N, C, OC, bad);
            for (int n = 0; n < N; n++) {
                jr_matmul_rows_bf16(one, x + (size_t)n * C, w, bias, 1, C, OC, scr);
                CHECK_MSG(!memcmp(one, out + (size_t)n * OC, sizeof(float) * (size_t)OC),
                          "%d x %d x %d: row %d alone differs", N, C, OC, n);
            }
            free(x); free(wf); free(bias); free(out); free(one); free(w); free(scr);
        }
    }
    jr_matmul_rows_bf16_force_fallback(0);
}

/* With bf16 weights in both the sampler and the trainer (oneDNN, other summation order), their
 * log-probs agree to |a - b| <= BF16_BOTH_LP_ATOL + 2e-5 |b| (measured: see the test's output). */
#define BF16_BOTH_LP_ATOL 0.15
TEST(bf16_sampler_logprobs_near_training_logprobs) {
    check_logprobs_vs_training_in(0.7f, 0.9f, JR_COMPUTE_F32, BF16_LP_ATOL);
    check_logprobs_vs_training_in(1.0f, 1.0f, JR_COMPUTE_F32, BF16_LP_ATOL);
    SKIP_WITHOUT_ONEDNN_BF16();
    check_logprobs_vs_training_in(0.7f, 0.9f, JR_COMPUTE_BF16, BF16_BOTH_LP_ATOL);
    check_logprobs_vs_training_in(1.0f, 1.0f, JR_COMPUTE_BF16, BF16_BOTH_LP_ATOL);
}

/* The second half of bf16_chunked_batched_prefill_same_tokens_and_no_stall: the 40-token prompt
 * (seeded by p) arrives while 5 requests decode, cut into chunks of at most 7 tokens (fixed, or
 * sized by an ITL target when itl > 0); its tokens must be `alone`'s. Returns the steps it took to
 * its first token. */
static int chunked_among_others(jr_model *m, const jr_kv_opts *o, const jr_gen_params *p, const int32_t *prompt,
                                int32_t alone[2][16], double itl) {
    jr_lm lm;
    jr_gen *g;
    jr_gen_req *r;
    CHECK_OK(jr_kv_lm_open_opts(&lm, m, 8, 64, o));
    CHECK_OK(jr_gen_open(&g, &lm, &V, 5));
    jr_gen_set_prefill_chunk(g, 7);
    jr_gen_set_itl_target(g, itl);
    jr_gen_req *others[5];
    for (int k = 0; k < 5; k++) {
        int32_t op[5] = {k, k + 1, 7, 9, 200};
        jr_gen_params q = *p;
        q.seed = (uint64_t)k + 1000;
        q.max_tokens = 60;
        CHECK_OK(jr_gen_add(g, op, 5, 1, &q, NULL, NULL, &others[k]));
    }
    for (int i = 0; i < 100 && jr_gen_req_seq(others[4], 0)->n_tokens < 2; i++) CHECK_OK(jr_gen_step(g)); /* all 25 in */
    int before = jr_gen_req_seq(others[0], 0)->n_tokens;
    CHECK_OK(jr_gen_add(g, prompt, 40, 2, p, NULL, NULL, &r));
    int steps = 0, taken = 0, idle = 0, stalls = 0;
    while (jr_gen_req_seq(r, 0)->n_tokens == 0 && steps <= 4000) {
        /* the running sequence gets a token every step until it is done (its 60 tokens may end before the
         * prompt's first token when the ITL target spreads the prompt over more steps, e.g. under ASan) */
        int was_done = jr_gen_req_done(others[0]), prev = jr_gen_req_seq(others[0], 0)->n_tokens;
        CHECK_OK(jr_gen_step(g));
        stalls += !was_done && jr_gen_req_seq(others[0], 0)->n_tokens != prev + 1;
        steps++;
        int t = jr_gen_last_prefill_tokens(g);
        CHECK_MSG(t >= 0 && t <= 7, "a step took %d prompt tokens (chunk 7)", t);
        taken += t;
        idle += t == 0;
    }
    CHECK_MSG(taken == 40, "the steps took %d prompt tokens for a 40-token prompt", taken);
    /* a fixed chunk never leaves a step without prompt tokens; the ITL target may (a row that costs
     * more than the slack of one step goes in every few steps), by the measured costs */
    CHECK_MSG(itl > 0 || idle == 0, "%d steps of %d took no prompt token", idle, steps);
    CHECK_MSG(stalls == 0 && (jr_gen_req_seq(others[0], 0)->n_tokens == before + steps || jr_gen_req_done(others[0])),
              "the running sequence got %d tokens in %d steps (%d steps without one while it ran)",
              jr_gen_req_seq(others[0], 0)->n_tokens - before, steps, stalls);
    while (!jr_gen_req_done(r)) CHECK_OK(jr_gen_step(g));
    for (int i = 0; i < 2; i++)
        CHECK_MSG(jr_gen_req_seq(r, i)->n_tokens == 16 && !memcmp(jr_gen_req_seq(r, i)->tokens, alone[i], 16 * sizeof(int32_t)),
                  "sequence %d differs when its prompt is chunked (itl target %g) and batched", i, itl);
    jr_gen_close(g);
    jr_kv_lm_close(&lm);
    return steps;
}

/* jr_malloc_weights: 64-byte aligned below 2 MiB, 2 MiB aligned from there (the kernels' rows start
 * on cache lines; huge pages need the alignment), the whole length usable (ASan checks the writes),
 * and a size that rounding up would wrap is refused with a message instead of a short buffer. */
TEST(weights_buffer_aligned_and_refuses_a_wrapping_size) {
    size_t sizes[] = {1, 100, 4096 + 3, ((size_t)2 << 20) - 1, (size_t)2 << 20, ((size_t)3 << 20) + 5};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        unsigned char *p = jr_malloc_weights(sizes[i]);
        CHECK_MSG(p != NULL, "%zu bytes", sizes[i]);
        if (!p) continue;
        size_t align = sizes[i] >= ((size_t)2 << 20) ? (size_t)2 << 20 : 64;
        CHECK_MSG((uintptr_t)p % align == 0, "%zu bytes at %p: not %zu-byte aligned", sizes[i], (void *)p, align);
        memset(p, 0xab, sizes[i]);
        CHECK(p[sizes[i] - 1] == 0xab);
        free(p);
    }
    jr_err_clear();
    CHECK(jr_malloc_weights(SIZE_MAX - 100) == NULL);
    CHECK_MSG(strstr(jr_errmsg(), "out of memory") != NULL, "message: %s", jr_errmsg());
}

/* Batched, chunked prefill (jr_lm.batch_prefill, fp32 and bf16 weights, at every kernel level): a seeded
 * request with a 40-token prompt gives the same tokens prefilled whole and alone as cut into 7-token chunks
 * among 5 other requests' prompts and decode rows; while it is being prefilled the running sequences keep
 * getting one token per step. With an ITL target (jr_gen_set_itl_target) the prompt is cut by the measured
 * step times instead: any cut, never over the chunk, the same tokens. */
static void chunked_batched_prefill(jr_compute weights) {
    jr_model m;
    if (random_model(&m, 0.1f)) { CHECK(0); return; }
    int32_t prompt[40];
    for (int i = 0; i < 40; i++) prompt[i] = (int32_t)((i * 37 + 11) % 256);
    jr_gen_params p = jr_gen_params_default();
    p.sample.temperature = 1.0f;
    p.max_tokens = 16;
    p.has_seed = 1;
    p.seed = 77;
    p.ignore_eos = 1;
    jr_kv_opts o = {weights, 0, 1};
    jr_lm lm1;
    CHECK_OK(jr_kv_lm_open_opts(&lm1, &m, 2, 64, &o));
    CHECK_MSG(lm1.batch_prefill == 1, "no batched prefill at kernel level %s", jr_kernel_level());
    jr_gen *g;
    CHECK_OK(jr_gen_open(&g, &lm1, &V, 1));
    jr_gen_set_prefill_chunk(g, 0);
    jr_gen_req *r;
    CHECK_OK(jr_gen_add(g, prompt, 40, 2, &p, NULL, NULL, &r));
    while (!jr_gen_req_done(r)) CHECK_OK(jr_gen_step(g));
    int32_t alone[2][16];
    for (int i = 0; i < 2; i++) {
        CHECK(jr_gen_req_seq(r, i)->n_tokens == 16);
        memcpy(alone[i], jr_gen_req_seq(r, i)->tokens, sizeof alone[i]);
    }
    jr_gen_close(g);
    jr_kv_lm_close(&lm1);

    int steps = chunked_among_others(&m, &o, &p, prompt, alone, 0);
    CHECK_MSG(steps == 6, "a 40-token prompt in chunks of 7 took %d steps", steps); /* ceil(40 / 7) */
    steps = chunked_among_others(&m, &o, &p, prompt, alone, 1.5);
    CHECK_MSG(steps >= 6 && steps <= 4000, "with an ITL target a 40-token prompt took %d steps", steps);
    jr_model_free(&m);
}

TEST(fp32_chunked_batched_prefill_same_tokens_and_no_stall) { chunked_batched_prefill(JR_COMPUTE_F32); }
TEST(bf16_chunked_batched_prefill_same_tokens_and_no_stall) { chunked_batched_prefill(JR_COMPUTE_BF16); }

/* The kernels run at the level JR_CPU forces (tests/run.sh runs this program at every level the CPU has),
 * so that the batch-invariance checks above hold for that level's kernels, not the highest one's. */
TEST(kernels_at_the_forced_level) {
    const char *want = getenv("JR_CPU");
    printf("  kernel level: %s\n", jr_kernel_level());
    if (want && *want && strcmp(want, "native")) CHECK_MSG(!strcmp(jr_kernel_level(), want), "JR_CPU=%s, kernels at %s", want, jr_kernel_level());
    else CHECK(!strcmp(jr_kernel_level(), jr_cpu_level_name(jr_cpu_level_max())));
}

/* Prefill + 3 decode steps of a fixed prompt through a bf16-weight cache: all the logits, in out. */
static void bf16_logits_of(const jr_model *m, float *out) {
    jr_kv_opts o = {JR_COMPUTE_BF16, 0, 1};
    jr_lm lm;
    CHECK_OK(jr_kv_lm_open_opts(&lm, m, 1, 32, &o));
    int V0 = m->cfg.vocab_size, slot = 0;
    int32_t ids[12];
    for (int i = 0; i < 12; i++) ids[i] = (int32_t)((i * 13 + 5) % V0);
    CHECK_OK(lm.prefill(lm.impl, 0, ids, 9, out));
    for (int t = 9; t < 12; t++) CHECK_OK(lm.decode(lm.impl, 1, &slot, &ids[t], out + (size_t)(t - 8) * V0));
    jr_kv_lm_close(&lm);
}

/* jr_model_load_bf16 (no fp32 copy of the matmul weights): the same logits, bitwise, as jr_model_load
 * + a bf16-weight cache, from fp32 files (converted tensor by tensor) and from bf16 files (as
 * stored), for the 4 fixtures (tied and untied heads, biases, q/k norms); what needs fp32 refuses it. */
TEST(bf16_loaded_model_same_logits_as_fp32_loaded) {
    char *tmp = jt_tmpdir("bf16load");
    for (size_t f = 0; f < sizeof fixtures / sizeof *fixtures; f++) {
        char dir[1024], dir16[1100];
        snprintf(dir, sizeof dir, "%s/tests/fixtures/engine/%s", jt_root(), fixtures[f]);
        snprintf(dir16, sizeof dir16, "%s/%s", tmp, fixtures[f]);
        jr_model m, mb;
        CHECK_OK(jr_model_load(&m, dir));
        int V0 = m.cfg.vocab_size;
        float *a = malloc(sizeof(float) * 4 * V0), *b = malloc(sizeof(float) * 4 * V0);
        const float **ptrs = malloc(sizeof *ptrs * (size_t)m.n_tensors);
        for (int i = 0; i < m.n_tensors; i++) ptrs[i] = m.params + m.offset[i];
        CHECK_OK(jr_hfdir_write(dir16, &m.cfg, NULL, ptrs, JR_DT_BF16, 0));
        for (int k = 0; k < 2; k++) { /* the fp32 files, then the bf16 ones */
            jr_model mf;
            CHECK_OK(jr_model_load(&mf, k ? dir16 : dir));
            CHECK_OK(jr_model_load_bf16(&mb, k ? dir16 : dir));
            CHECK(mb.w16 != NULL && mb.n_params < mf.n_params / 2);
            bf16_logits_of(&mf, a);
            bf16_logits_of(&mb, b);
            CHECK_MSG(!memcmp(a, b, sizeof(float) * 4 * V0), "%s (%s files): logits differ", fixtures[f], k ? "bf16" : "fp32");
            jr_kv_opts o32 = jr_kv_opts_default();
            jr_lm lm;
            CHECK(jr_kv_lm_open_opts(&lm, &mb, 1, 8, &o32) == JR_EINVAL);
            jr_acts acts;
            int32_t ids[2] = {1, 2};
            CHECK_OK(jr_acts_init(&acts, &mf, 1, 2));
            CHECK(jr_model_forward(&mb, &acts, ids, 1, 2) == JR_EUNSUPPORTED);
            CHECK(jr_model_alloc_grads(&mb) == JR_EUNSUPPORTED);
            CHECK(jr_lora_merge_into(&mb, dir) == JR_EUNSUPPORTED); /* before it reads the (absent) adapter */
            jr_acts_free(&acts);
            jr_model_free(&mf);
            jr_model_free(&mb);
        }
        free(ptrs); free(a); free(b);
        jr_model_free(&m);
    }
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    CHECK(system(cmd) == 0);
    free(tmp);
}

/* Products whose C is cut in k chunks (src/nn/rows_block.h: over 512 inputs in fp32, 1024 in bf16; here
 * hidden 520 and intermediate 1100, both with a tail) and prompts over 64 rows (the chunked sums' row
 * passes): the last logits of a 70-token prompt prefilled whole are bitwise those of its 69 first
 * tokens prefilled and the 70th decoded alone (one row: no chunks), and of the prompt batched with a
 * decode row of another slot; a decode row among 3 (chunks of 128 at up to 8 rows) is bitwise alone's. */
static void long_rows_and_inputs_same_as_decoded_alone(void) {
    jr_model m;
    if (random_model_sized(&m, 520, 1, 16, 1100, 5, 0.3f)) { CHECK(0); return; }
    jr_lm lm;
    CHECK_OK(open_lm(&lm, &m, 3, 80));
    int V0 = lm.n_logits;
    float *whole = malloc(sizeof(float) * V0), *alone = malloc(sizeof(float) * V0), *two = malloc(sizeof(float) * 2 * V0);
    int32_t p[70];
    for (int i = 0; i < 70; i++) p[i] = (int32_t)((i * 37 + 5) % NV);
    CHECK_OK(lm.prefill(lm.impl, 0, p, 70, whole));
    CHECK_OK(lm.prefill(lm.impl, 1, p, 69, alone));
    int s1 = 1;
    CHECK_OK(lm.decode(lm.impl, 1, &s1, &p[69], alone));
    CHECK_MSG(!memcmp(whole, alone, sizeof(float) * (size_t)V0), "70-token prefill differs from 69 + one decoded");
    /* one thread: no thread team for the pass (kvcache.c's forward_team) nor for a product, the same sums */
    int nth = omp_get_max_threads();
    omp_set_num_threads(1);
    CHECK_OK(lm.prefill(lm.impl, 2, p, 70, alone));
    omp_set_num_threads(nth);
    CHECK_MSG(!memcmp(whole, alone, sizeof(float) * (size_t)V0), "70-token prefill on one thread differs from the team's");
    if (lm.batch_prefill) {
        int32_t d = 9;
        const int32_t *tp[2] = {&d, p};
        int sl[2] = {1, 2}, n[2] = {1, 70}, st[2] = {70, 0};
        CHECK_OK(lm.extend(lm.impl, 2, sl, tp, n, st, two));
        CHECK_MSG(!memcmp(whole, two + V0, sizeof(float) * (size_t)V0), "the prompt batched with a decode row differs");
    }
    /* 3 decode rows (k chunks of 128 at up to 8 rows) against one of them alone */
    float *three = malloc(sizeof(float) * 3 * V0);
    int sl3[3] = {0, 1, 2}, s0 = 0;
    int32_t t3[3] = {11, 12, 13};
    CHECK_OK(lm.copy(lm.impl, 2, 0));
    CHECK_OK(lm.decode(lm.impl, 1, &s0, &t3[0], alone));
    CHECK_OK(lm.copy(lm.impl, 0, 2));
    CHECK_OK(lm.decode(lm.impl, 3, sl3, t3, three));
    CHECK_MSG(!memcmp(alone, three, sizeof(float) * (size_t)V0), "a decode row among 3 differs from alone");
    free(whole); free(alone); free(two); free(three);
    jr_kv_lm_close(&lm);
    jr_model_free(&m);
}

int main(void) {
    vocab_init();
    KVO = jr_kv_opts_default();
    RUN(kernels_at_the_forced_level);
    RUN(kv_logits_equal_training_forward);
    RUN(decode_rows_do_not_depend_on_the_batch);
    jt_run("rows_same_alone_and_in_every_batch_size", rows_same_alone_and_in_every_batch_size);
    jt_run("long_rows_and_inputs_same_as_decoded_alone", long_rows_and_inputs_same_as_decoded_alone);
    RUN(sampler_logprobs_equal_training_logprobs);
    RUN(sampler_logprobs_near_bf16_training_logprobs);
    RUN(seeded_request_same_alone_and_batched_with_31_others);
    RUN(stop_strings_eos_length_and_streamed_text);
    RUN(constrained_choice_from_a_random_model);
    RUN(fp32_chunked_batched_prefill_same_tokens_and_no_stall);
    /* generation in bf16: weights kept in bf16, then the bf16 KV cache too */
    RUN(bf16_rows_kernel_exact_and_batch_invariant);
    RUN(bf16_kv_logits_near_training_forward);
    RUN(wide_head_kv_logits_near_training_forward);
    KVO = (jr_kv_opts){JR_COMPUTE_BF16, 0, 1};
    jt_run("bf16_decode_rows_do_not_depend_on_the_batch", decode_rows_do_not_depend_on_the_batch);
    jt_run("bf16_rows_same_alone_and_in_every_batch_size", rows_same_alone_and_in_every_batch_size);
    jt_run("bf16_long_rows_and_inputs_same_as_decoded_alone", long_rows_and_inputs_same_as_decoded_alone);
    jt_run("bf16_seeded_request_same_alone_and_batched_with_31_others", seeded_request_same_alone_and_batched_with_31_others);
    RUN(bf16_sampler_logprobs_near_training_logprobs);
    RUN(weights_buffer_aligned_and_refuses_a_wrapping_size);
    RUN(bf16_chunked_batched_prefill_same_tokens_and_no_stall);
    RUN(bf16_loaded_model_same_logits_as_fp32_loaded);
    jt_run("bf16_stop_strings_eos_length_and_streamed_text", stop_strings_eos_length_and_streamed_text);
    KVO.kv_bf16 = 1;
    jt_run("bf16_kv_cache_decode_rows_do_not_depend_on_the_batch", decode_rows_do_not_depend_on_the_batch);
    jt_run("bf16_kv_cache_seeded_request_same_alone_and_batched_with_31_others", seeded_request_same_alone_and_batched_with_31_others);
    jr_matmul_rows_bf16_force_fallback(1);
    jt_run("bf16_fallback_seeded_request_same_alone_and_batched_with_31_others", seeded_request_same_alone_and_batched_with_31_others);
    jr_matmul_rows_bf16_force_fallback(0);
    return jt_done();
}
