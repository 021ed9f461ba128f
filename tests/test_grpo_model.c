/* test_grpo_model.c - GRPO through the real model and LoRA against the PyTorch twin
 * (tools/grpo_model_twin.py): the clipped objective's gradient w.r.t. every weight (loss_type grpo,
 * beta > 0, asymmetric clip, temperature 0.7, ratios partly clipped); a PEFT adapter loaded onto the
 * qwen2_bias fixture model gives the twin's log-probs and adapter gradients; the PEFT export keeps
 * PEFT's names and values and reloads to the same outputs; merging equals the adapted model; the
 * reference pass (adapters off) is the base model bit for bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "judgerl/grpo.h"
#include "judgerl/fsutil.h"
#include "judgerl/lora.h"
#include "judgerl/model.h"
#include "judgerl/safetensors.h"

static char model_dir[1024], fix_dir[1024];

static void *read_t(const jr_safetensors *st, const char *name, int64_t *n) {
    const jr_st_tensor *t = jr_st_find(st, name);
    if (!t) return NULL;
    void *out = malloc(4 * (size_t)t->numel);
    if (t->dtype == JR_DT_I32) memcpy(out, t->data, 4 * (size_t)t->numel);
    else if (jr_st_read_f32(st, t, out)) { free(out); return NULL; }
    if (n) *n = t->numel;
    return out;
}

/* Log-probs (B,T) of the fixture batch at temperature 0.7 under m, and optionally the backward of
 * sum(w * lp) into m->grads. */
static void run_batch(jr_model *m, const jr_safetensors *ex, float *lp, int backward) {
    int64_t n;
    int32_t *ids = read_t(ex, "ids", &n), *tg = read_t(ex, "targets", NULL);
    float *w = read_t(ex, "weights", NULL);
    int B = 2, T = (int)n / 2;
    jr_acts a;
    CHECK_OK(jr_acts_init(&a, m, B, T));
    CHECK_OK(jr_model_forward(m, &a, ids, B, T));
    jr_model_logprobs(m, &a, tg, 0.7f, lp);
    if (backward) {
        jr_model_zero_grads(m);
        jr_model_backward(m, &a, tg, 0.7f, w);
    }
    jr_acts_free(&a);
    free(ids); free(tg); free(w);
}

TEST(lora_matches_twin) {
    char p[1200];
    snprintf(p, sizeof p, "%s/expected.safetensors", fix_dir);
    jr_safetensors ex;
    CHECK_OK(jr_st_open(&ex, p));
    if (jt_failed_case) return;
    jr_model m;
    CHECK_OK(jr_model_load(&m, model_dir));
    CHECK_OK(jr_model_alloc_grads(&m));
    jr_lora l;
    CHECK_OK(jr_lora_init(&l, &m, 2, 6.0, JR_LORA_ALL, 1));
    CHECK_OK(jr_lora_load_peft(&l, fix_dir));
    if (jt_failed_case) { jr_model_free(&m); jr_st_close(&ex); return; }
    int64_t n;
    float *want = read_t(&ex, "logprobs", &n), *lp = calloc((size_t)n, sizeof(float));
    run_batch(&m, &ex, lp, 1);
    for (int i = 0; i < n; i++) CHECK_NEAR(lp[i], want[i], 1e-5, 1e-5);
    jr_lora_grads(&l);
    for (int i = 0; i < l.ad.n_tensors; i++) {
        char name[160];
        snprintf(name, sizeof name, "grad.%s", l.ad.tensors[i].name);
        int64_t k;
        float *g = read_t(&ex, name, &k);
        CHECK_MSG(g && k == l.ad.tensors[i].numel, "%s missing or mis-sized", name);
        if (!g) continue;
        double mx = 0;
        for (int j = 0; j < k; j++) mx = fmax(mx, fabs(g[j]));
        const float *mine = l.ad.grads + l.ad.offset[i];
        for (int j = 0; j < k; j++) CHECK_NEAR(mine[j], g[j], 1e-4 * mx, 1e-4);
        free(g);
    }
    /* direct mode (jr_lora_direct, what the trainers use): the backward adds the adapters' gradients
     * itself, the same within fp32 rounding as projecting the full weight gradient (kept in g1),
     * accumulating over two passes, and forms no gradient of a frozen matmul weight or the embedding */
    float *g1 = malloc(sizeof(float) * l.ad.n_params);
    memcpy(g1, l.ad.grads, sizeof(float) * l.ad.n_params);
    CHECK_OK(jr_lora_direct(&l, 1));
    jr_lora_zero_grads(&l);
    run_batch(&m, &ex, lp, 1);
    run_batch(&m, &ex, lp, 1); /* run_batch zeroes m's gradients, not the adapters': these add up */
    jr_lora_grads(&l);         /* a no-op in direct mode */
    double gmx = 0;
    for (size_t j = 0; j < l.ad.n_params; j++) gmx = fmax(gmx, fabs(g1[j]));
    int bad = 0;
    for (size_t j = 0; j < l.ad.n_params; j++) bad += !(fabs(l.ad.grads[j] - 2 * g1[j]) <= 1e-5 * fabs(g1[j]) + 1e-6 * gmx);
    CHECK_MSG(bad == 0 && gmx > 0, "%d of %zu adapter gradients differ in direct mode", bad, l.ad.n_params);
    int wq = jr_model_find(&m, "model.layers.0.self_attn.q_proj.weight"), emb = jr_model_find(&m, "model.embed_tokens.weight");
    CHECK(wq >= 0 && emb >= 0);
    size_t nz = 0;
    if (wq >= 0 && emb >= 0) {
        const float *gq = m.grads + m.offset[wq], *ge = m.grads + m.offset[emb];
        for (int64_t j = 0; j < m.tensors[wq].numel; j++) nz += gq[j] != 0;
        for (int64_t j = 0; j < m.tensors[emb].numel; j++) nz += ge[j] != 0;
    }
    CHECK_MSG(nz == 0, "%zu gradient entries of a frozen weight or the embedding formed in direct mode", nz);
    free(g1);
    jr_lora_direct(&l, 0);
    /* adapters off: the base model, bit for bit */
    jr_model base;
    CHECK_OK(jr_model_load(&base, model_dir));
    jr_lora_off(&l);
    CHECK(!memcmp(base.params, m.params, sizeof(float) * m.n_params));
    jr_lora_on(&l);
    CHECK(memcmp(base.params, m.params, sizeof(float) * m.n_params) != 0);
    /* merge of the twin's adapter into a freshly loaded base equals the adapted model */
    CHECK_OK(jr_lora_merge_into(&base, fix_dir));
    float *lp2 = calloc((size_t)n, sizeof(float));
    run_batch(&base, &ex, lp2, 0);
    for (int i = 0; i < n; i++) CHECK_NEAR(lp2[i], want[i], 1e-5, 1e-5);
    free(lp2);
    jr_model_free(&base);
    free(want); free(lp);
    jr_lora_free(&l);
    jr_model_free(&m);
    jr_st_close(&ex);
}

TEST(peft_export_round_trip) {
    jr_model m;
    CHECK_OK(jr_model_load(&m, model_dir));
    jr_lora l;
    CHECK_OK(jr_lora_init(&l, &m, 2, 6.0, JR_LORA_ALL, 1));
    CHECK_OK(jr_lora_load_peft(&l, fix_dir));
    char *tmp = jt_tmpdir("lora");
    char out[1200], p[1300];
    snprintf(out, sizeof out, "%s/adapter", tmp);
    CHECK_OK(jr_lora_save_peft(&l, out, "qwen2_bias", 0.0));
    /* same tensor names and values as the twin's PEFT file */
    jr_safetensors a, b;
    snprintf(p, sizeof p, "%s/adapter_model.safetensors", out);
    CHECK_OK(jr_st_open(&a, p));
    snprintf(p, sizeof p, "%s/adapter_model.safetensors", fix_dir);
    CHECK_OK(jr_st_open(&b, p));
    CHECK(a.n == b.n && a.n == 28);
    for (int i = 0; i < b.n && !jt_failed_case; i++) {
        const jr_st_tensor *tb = &b.tensors[i], *ta = jr_st_find(&a, tb->name);
        CHECK_MSG(ta != NULL, "exported adapter lacks %s", tb->name);
        if (ta) CHECK(ta->numel == tb->numel && ta->shape[0] == tb->shape[0] && !memcmp(ta->data, tb->data, 4 * (size_t)tb->numel));
    }
    jr_st_close(&a);
    jr_st_close(&b);
    /* the config PEFT reads */
    snprintf(p, sizeof p, "%s/adapter_config.json", out);
    json_error_t e;
    json_t *c = json_load_file(p, 0, &e);
    CHECK(c != NULL);
    CHECK_STR(json_string_value(json_object_get(c, "peft_type")), "LORA");
    CHECK_STR(json_string_value(json_object_get(c, "task_type")), "CAUSAL_LM");
    CHECK(json_integer_value(json_object_get(c, "r")) == 2);
    CHECK(json_number_value(json_object_get(c, "lora_alpha")) == 6.0);
    CHECK(json_array_size(json_object_get(c, "target_modules")) == 7);
    json_decref(c);
    /* reloaded into fresh adapters: the same weights */
    jr_model m2;
    CHECK_OK(jr_model_load(&m2, model_dir));
    jr_lora l2;
    CHECK_OK(jr_lora_init(&l2, &m2, 2, 6.0, JR_LORA_ALL, 99));
    CHECK_OK(jr_lora_load_peft(&l2, out));
    CHECK(!memcmp(m.params, m2.params, sizeof(float) * m.n_params));
    /* a rank mismatch is an error naming the tensor */
    jr_lora l3;
    jr_model m3;
    CHECK_OK(jr_model_load(&m3, model_dir));
    CHECK_OK(jr_lora_init(&l3, &m3, 3, 6.0, JR_LORA_ALL, 1));
    CHECK(jr_lora_load_peft(&l3, out) != 0 && strstr(jr_errmsg(), "lora_A.weight"));
    jr_lora_free(&l3);
    jr_model_free(&m3);
    jr_lora_free(&l2);
    jr_model_free(&m2);
    jr_lora_free(&l);
    jr_model_free(&m);
    free(tmp);
}

TEST(fresh_adapters_leave_the_model_unchanged) {
    jr_model m, base;
    CHECK_OK(jr_model_load(&m, model_dir));
    CHECK_OK(jr_model_load(&base, model_dir));
    jr_lora l;
    CHECK_OK(jr_lora_init(&l, &m, 4, 8.0, JR_LORA_Q | JR_LORA_V, 3));
    CHECK(l.n_t == 2 * m.cfg.num_hidden_layers);
    CHECK(!memcmp(base.params, m.params, sizeof(float) * m.n_params)); /* B = 0 */
    unsigned bits;
    CHECK(jr_lora_parse_targets("q_proj, v,down", &bits) == 0 && bits == (JR_LORA_Q | JR_LORA_V | JR_LORA_DOWN));
    CHECK(jr_lora_parse_targets("q,lm_head", &bits) != 0 && strstr(jr_errmsg(), "lm_head"));
    jr_lora_free(&l);
    jr_model_free(&m);
    jr_model_free(&base);
}

TEST(policy_gradient_matches_twin) {
    char p[1200];
    snprintf(p, sizeof p, "%s/tests/fixtures/grpo/policy_grad.safetensors", jt_root());
    jr_safetensors ex;
    CHECK_OK(jr_st_open(&ex, p));
    if (jt_failed_case) return;
    jr_model m;
    CHECK_OK(jr_model_load(&m, model_dir));
    CHECK_OK(jr_model_alloc_grads(&m));
    int64_t n;
    int32_t *ids = read_t(&ex, "ids", &n), *tg = read_t(&ex, "targets", NULL);
    float *old = read_t(&ex, "old", NULL), *ref = read_t(&ex, "ref", NULL), *adv = read_t(&ex, "adv", NULL);
    float *want = read_t(&ex, "loss", NULL);
    int B = 2, T = (int)n / 2;
    float *lp = calloc((size_t)n, sizeof(float)), *dlp = calloc((size_t)n, sizeof(float)), *mask = calloc((size_t)n, sizeof(float));
    for (int i = 0; i < n; i++) mask[i] = tg[i] >= 0;
    jr_acts a;
    CHECK_OK(jr_acts_init(&a, &m, B, T));
    CHECK_OK(jr_model_forward(&m, &a, ids, B, T));
    jr_model_logprobs(&m, &a, tg, 0.7f, lp);
    jr_policy_loss_cfg pc = {JR_LOSS_GRPO, 0.2, 0.28, 0.04, 0, 0, 0};
    jr_policy_loss_stats st;
    CHECK_OK(jr_policy_loss(&st, dlp, lp, old, ref, mask, adv, NULL, B, T, &pc));
    CHECK_NEAR(st.loss, want[0], 1e-5, 1e-5);
    CHECK(st.clip_region > 0 && st.clip_region < 1); /* the fixture exercises both branches */
    jr_model_zero_grads(&m);
    jr_model_backward(&m, &a, tg, 0.7f, dlp);
    for (int i = 0; i < m.n_tensors; i++) {
        char name[160];
        snprintf(name, sizeof name, "grad.%s", m.tensors[i].name);
        int64_t k;
        float *g = read_t(&ex, name, &k);
        CHECK_MSG(g && k == m.tensors[i].numel, "%s missing or mis-sized", name);
        if (!g) continue;
        double mx = 0;
        for (int j = 0; j < k; j++) mx = fmax(mx, fabs(g[j]));
        const float *mine = m.grads + m.offset[i];
        for (int j = 0; j < k && !jt_failed_case; j++) CHECK_NEAR(mine[j], g[j], 1e-4 * mx, 1e-4);
        free(g);
    }
    jr_acts_free(&a);
    free(ids); free(tg); free(old); free(ref); free(adv); free(want); free(lp); free(dlp); free(mask);
    jr_model_free(&m);
    jr_st_close(&ex);
}

int main(void) {
    snprintf(model_dir, sizeof model_dir, "%s/tests/fixtures/engine/qwen2_bias", jt_root());
    snprintf(fix_dir, sizeof fix_dir, "%s/tests/fixtures/grpo/lora", jt_root());
    RUN(policy_gradient_matches_twin);
    RUN(lora_matches_twin);
    RUN(peft_export_round_trip);
    RUN(fresh_adapters_leave_the_model_unchanged);
    return jt_done();
}
