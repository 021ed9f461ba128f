/* test_classifier.c - seed 1's classifier against its PyTorch twin (logits, loss, gradients, Adam/AdamW), non-causal attention by finite differences, vocabulary, save/load */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "harness.h"
#include "judgerl/attn_full.h"
#include "judgerl/classifier.h"

static json_t *fx;

static json_t *fixture(void) {
    if (fx) return fx;
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/clf_twin.json", jt_root());
    fx = json_load_file(path, 0, NULL);
    return fx;
}

static void floats(json_t *a, float *out, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = (float)json_number_value(json_array_get(a, i));
}

static int load_twin(jr_clf *c, int32_t *ids, int32_t *labels) {
    json_t *f = fixture(), *d = json_object_get(f, "dims");
    jr_clf_dims dims = {(int)json_integer_value(json_object_get(d, "vocab")), (int)json_integer_value(json_object_get(d, "embed")),
                        (int)json_integer_value(json_object_get(d, "heads")), (int)json_integer_value(json_object_get(d, "hidden")),
                        (int)json_integer_value(json_object_get(d, "labels")), (int)json_integer_value(json_object_get(d, "max_len"))};
    if (jr_clf_init(c, dims, NULL)) return -1;
    if (json_array_size(json_object_get(f, "params")) != c->n_params) return -1;
    floats(json_object_get(f, "params"), c->params, c->n_params);
    for (size_t i = 0; i < json_array_size(json_object_get(f, "ids")); i++)
        ids[i] = (int32_t)json_integer_value(json_array_get(json_object_get(f, "ids"), i));
    for (size_t i = 0; i < 3; i++) labels[i] = (int32_t)json_integer_value(json_array_get(json_object_get(f, "labels"), i));
    return 0;
}

TEST(forward_backward_match_torch) {
    if (!fixture()) { CHECK_MSG(0, "tests/fixtures/clf_twin.json missing"); return; }
    jr_clf c;
    int32_t ids[30], labels[3];
    CHECK(load_twin(&c, ids, labels) == 0);
    const float *lg = jr_clf_forward(&c, ids, 3);
    json_t *el = json_object_get(fx, "logits");
    for (size_t i = 0; i < 9; i++) CHECK_NEAR(lg[i], json_number_value(json_array_get(el, i)), 1e-5, 1e-4);
    float dl[9];
    double loss = jr_clf_xent(&c, labels, dl);
    CHECK_NEAR(loss, json_number_value(json_object_get(fx, "loss")), 1e-5, 1e-5);
    jr_clf_zero_grad(&c);
    jr_clf_backward(&c, dl);
    json_t *eg = json_object_get(fx, "grads");
    double maxerr = 0;
    for (size_t i = 0; i < c.n_params; i++) {
        double e = fabs(c.grads[i] - json_number_value(json_array_get(eg, i)));
        if (e > maxerr) maxerr = e;
    }
    CHECK_MSG(maxerr < 2e-5, "max gradient error %g", maxerr);
    jr_clf_free(&c);
}

static void opt_case(int adamw, const char *key) {
    if (!fixture()) { CHECK_MSG(0, "fixture missing"); return; }
    jr_clf c;
    jr_clf_adam o;
    int32_t ids[30], labels[3];
    CHECK(load_twin(&c, ids, labels) == 0);
    CHECK_OK(jr_clf_adam_init(&o, &c, adamw, adamw ? 0.01 : 0.0));
    float dl[9];
    for (int s = 0; s < 3; s++) {
        jr_clf_forward(&c, ids, 3);
        jr_clf_xent(&c, labels, dl);
        jr_clf_zero_grad(&c);
        jr_clf_backward(&c, dl);
        jr_clf_adam_step(&o, &c, 1e-2);
    }
    json_t *ep = json_object_get(fx, key);
    /* The key bias (in_proj_bias[E:2E]) has a mathematically zero gradient (softmax ignores a
     * constant added to every score); both sides hold float noise there, which Adam normalises
     * into steps of up to lr, so those entries are only checked to stay within 3 steps. */
    size_t kb0 = c.off[JR_CLF_INB] + (size_t)c.d.embed, kb1 = kb0 + (size_t)c.d.embed;
    double maxerr = 0;
    for (size_t i = 0; i < c.n_params; i++) {
        double e = fabs(c.params[i] - json_number_value(json_array_get(ep, i)));
        if (i >= kb0 && i < kb1) { CHECK(e <= 6e-2 + 1e-6); continue; }
        if (e > maxerr) maxerr = e;
    }
    CHECK_MSG(maxerr < 1e-4, "%s: max parameter error %g after 3 steps", key, maxerr);
    jr_clf_adam_free(&o);
    jr_clf_free(&c);
}

TEST(adam_steps_match_torch) { opt_case(0, "after_adam"); }
TEST(adamw_steps_match_torch) { opt_case(1, "after_adamw"); }

/* Non-causal attention: every output depends on every key; gradient by central differences of
 * L = sum(w * out). */
TEST(attn_full_finite_differences) {
    enum { B = 2, T = 4, H = 2, D = 3, N = B * T * H * D };
    float q[N], k[N], v[N], w[N], out[N], att[B * H * T * T], dq[N] = {0}, dk[N] = {0}, dv[N] = {0};
    jr_rng r;
    jr_rng_seed(&r, 7);
    for (int i = 0; i < N; i++) {
        q[i] = (float)jr_rng_normal(&r);
        k[i] = (float)jr_rng_normal(&r);
        v[i] = (float)jr_rng_normal(&r);
        w[i] = (float)jr_rng_normal(&r);
    }
    jr_attn_full_forward(out, att, q, k, v, B, T, H, D);
    /* rows sum to 1 and the first query attends to the last key (no causal mask) */
    for (int row = 0; row < B * H * T; row++) {
        double s = 0;
        for (int j = 0; j < T; j++) s += att[row * T + j];
        CHECK_NEAR(s, 1.0, 1e-5, 0);
    }
    CHECK(att[T - 1] > 0);
    jr_attn_full_backward(dq, dk, dv, w, att, q, k, v, B, T, H, D);
    float *xs[3] = {q, k, v}, *gs[3] = {dq, dk, dv};
    for (int which = 0; which < 3; which++)
        for (int i = 0; i < N; i += 5) {
            float keep = xs[which][i];
            double lp = 0, lm = 0, h = 1e-2;
            xs[which][i] = keep + (float)h;
            jr_attn_full_forward(out, att, q, k, v, B, T, H, D);
            for (int j = 0; j < N; j++) lp += (double)w[j] * out[j];
            xs[which][i] = keep - (float)h;
            jr_attn_full_forward(out, att, q, k, v, B, T, H, D);
            for (int j = 0; j < N; j++) lm += (double)w[j] * out[j];
            xs[which][i] = keep;
            CHECK_NEAR(gs[which][i], (lp - lm) / (2 * h), 2e-3, 2e-2);
        }
}

TEST(vocab_as_python) {
    if (!fixture()) { CHECK_MSG(0, "fixture missing"); return; }
    json_t *t = json_object_get(fx, "texts"), *ev = json_object_get(fx, "vocab"), *pi = json_object_get(fx, "probe_ids");
    const char *texts[8];
    int n = (int)json_array_size(t);
    for (int i = 0; i < n; i++) texts[i] = json_string_value(json_array_get(t, i));
    jr_vocab v;
    CHECK_OK(jr_vocab_build(&v, texts, n));
    CHECK(v.n == (int)json_array_size(ev));
    for (int i = 0; i < v.n && i < (int)json_array_size(ev); i++) CHECK_STR(v.words[i], json_string_value(json_array_get(ev, i)));
    int32_t ids[10];
    int real = jr_vocab_encode(&v, json_string_value(json_object_get(fx, "probe")), ids, 10);
    CHECK(real == 5);
    for (int i = 0; i < 10; i++) CHECK(ids[i] == json_integer_value(json_array_get(pi, i)));
    /* truncation at max_len */
    CHECK(jr_vocab_encode(&v, "a b c d e f g h i j k l", ids, 10) == 10);
    jr_vocab_free(&v);
}

TEST(save_load_roundtrip) {
    jr_clf c, c2;
    jr_vocab v, v2;
    jr_rng r;
    jr_rng_seed(&r, 3);
    const char *texts[] = {"Will I win?", "Should I go?"};
    CHECK_OK(jr_vocab_build(&v, texts, 2));
    jr_clf_dims d = {v.n, 16, 2, 32, 3, 10};
    CHECK_OK(jr_clf_init(&c, d, &r));
    char *dir = jt_tmpdir("clf");
    CHECK_OK(jr_clf_save(&c, &v, dir));
    CHECK_OK(jr_clf_load(&c2, &v2, dir));
    CHECK(c2.n_params == c.n_params && !memcmp(c.params, c2.params, sizeof(float) * c.n_params));
    CHECK(v2.n == v.n && jr_vocab_id(&v2, "win?") == jr_vocab_id(&v, "win?") && jr_vocab_id(&v2, "nope") == 1);
    /* a missing directory is one clear error */
    jr_clf c3;
    jr_vocab v3;
    CHECK(jr_clf_load(&c3, &v3, "/nonexistent/dir") != 0);
    CHECK(strstr(jr_errmsg(), "classifier.json") != NULL);
    /* shape errors are caught */
    jr_clf_dims bad = {v.n, 15, 2, 32, 3, 10};
    CHECK(jr_clf_init(&c3, bad, &r) != 0);
    jr_clf_free(&c);
    jr_clf_free(&c2);
    jr_vocab_free(&v);
    jr_vocab_free(&v2);
    free(dir);
}

int main(void) {
    RUN(forward_backward_match_torch);
    RUN(adam_steps_match_torch);
    RUN(adamw_steps_match_torch);
    RUN(attn_full_finite_differences);
    RUN(vocab_as_python);
    RUN(save_load_roundtrip);
    json_decref(fx);
    return jt_done();
}
