/* transformer.c - forward and backward of the decoder stack over right-padded batches, log-probs, NLL */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/model.h"
#include "judgerl/nn.h"

/* The sizes every function below needs. */
typedef struct {
    int L, C, Hq, Hkv, D, QD, KD, F, V, qk_norm;
    float eps;
} dims;

static dims dims_of(const jr_model_config *c) {
    dims d;
    d.L = c->num_hidden_layers; d.C = c->hidden_size; d.Hq = c->num_attention_heads;
    d.Hkv = c->num_key_value_heads; d.D = c->head_dim; d.QD = d.Hq * d.D; d.KD = d.Hkv * d.D;
    d.F = c->intermediate_size; d.V = c->vocab_size; d.qk_norm = c->qk_norm; d.eps = (float)c->rms_norm_eps;
    return d;
}

/* The weights' bf16 copy made by this acts' last forward, at w's place, when it is m's (else NULL:
 * the product converts w itself). */
static const uint16_t *wbf(const jr_model *m, const jr_acts *a, const float *w) {
    if (!a->wb || a->wb_src != m->params || w < m->params || w >= m->params + m->n_params) return NULL;
    return a->wb + (w - m->params);
}

/* The matmuls of the stack in the model's compute type; a bf16 failure (no oneDNN kernel, out of
 * memory) is remembered in *st and leaves the rest of the pass to run (its result is discarded).
 * inp_b: inp already in bf16 (or NULL). */
static void mm_f(const jr_model *m, const jr_acts *a, jr_status *st, float *out, const float *inp,
                 const uint16_t *inp_b, const float *w, const float *b, int N, int C, int OC) {
    if (m->compute == JR_COMPUTE_F32) { jr_matmul_forward(out, inp, w, b, N, C, OC); return; }
    if (jr_matmul_bf16_fwd(out, inp, inp_b, w, wbf(m, a, w), b, N, C, OC) && !*st)
        *st = jr_fail(JR_EINTERNAL, "forward: %s", jr_matmul_bf16_error());
}

static void mm_b(const jr_model *m, const jr_acts *a, jr_status *st, float *dinp, float *dw, float *db,
                 const float *dout, const float *inp, const uint16_t *inp_b, const float *w, int N, int C, int OC) {
    if (dw && m->dw_hook.take && m->dw_hook.take(m->dw_hook.ud, w, dout, inp, N, C, OC)) dw = NULL;
    if (!dinp && !dw && !db) return;
    if (m->compute == JR_COMPUTE_F32) { jr_matmul_backward(dinp, dw, db, dout, inp, w, N, C, OC); return; }
    if (jr_matmul_bf16_bwd(dinp, dw, db, dout, inp, inp_b, w, wbf(m, a, w), N, C, OC) && !*st)
        *st = jr_fail(JR_EINTERNAL, "backward: %s", jr_matmul_bf16_error());
}

/* x (n) in bf16 in the acts' scratch, for the products that read it more than once; NULL in fp32. */
static const uint16_t *act_bf16(const jr_model *m, jr_acts *a, const float *x, long n) {
    if (m->compute == JR_COMPUTE_F32 || !a->xb) return NULL;
    jr_bf16_from_f32(a->xb, x, n);
    return a->xb;
}

/* bf16: the weights converted once per forward pass (the backward and chunked log-probs of the same
 * pass read the copy), and the activation scratch; allocated on the first bf16 pass. */
static jr_status weights_bf16(const jr_model *m, jr_acts *a) {
    if (m->compute == JR_COMPUTE_F32) return JR_OK;
    if (a->wb_n != m->n_params) {
        free(a->wb);
        a->wb_n = 0;
        a->wb_src = NULL;
        if (!(a->wb = aligned_alloc(64, ((m->n_params * 2 + 63) / 64) * 64)))
            return jr_fail(JR_ENOMEM, "forward: cannot allocate %.1f MiB for the bf16 weights",
                           m->n_params * 2.0 / 1048576);
        a->wb_n = m->n_params;
    }
    if (!a->xb) {
        size_t n = (size_t)a->B_max * a->T_max * m->cfg.hidden_size;
        if (!(a->xb = aligned_alloc(64, ((n * 2 + 63) / 64) * 64)))
            return jr_fail(JR_ENOMEM, "forward: cannot allocate %.1f MiB for bf16 activations", n * 2.0 / 1048576);
    }
    jr_bf16_from_f32(a->wb, m->params, (long)m->n_params);
    a->wb_src = m->params;
    return JR_OK;
}

static size_t maxz(size_t a, size_t b) { return a > b ? a : b; }

jr_status jr_acts_init(jr_acts *a, const jr_model *m, int B_max, int T_max) {
    jr_acts_opts o = {0};
    return jr_acts_init_opts(a, m, B_max, T_max, &o);
}

jr_status jr_acts_init_opts(jr_acts *a, const jr_model *m, int B_max, int T_max, const jr_acts_opts *o) {
    memset(a, 0, sizeof *a);
    if (B_max < 1 || T_max < 1) return jr_fail(JR_EINVAL, "activations: batch %d x %d must be positive", B_max, T_max);
    dims d = dims_of(&m->cfg);
    size_t N = (size_t)B_max * T_max, L = (size_t)d.L;
    size_t lrows = N;
    if (o->logit_rows == JR_LOGIT_ROWS_AUTO) {
        long r = JR_LOGIT_CHUNK_BYTES / ((long)d.V * 4);
        lrows = r < 16 ? 16 : (size_t)r;
    } else if (o->logit_rows > 0) {
        lrows = (size_t)o->logit_rows;
    }
    if (lrows > N) lrows = N;
    size_t W = maxz(maxz((size_t)d.F, (size_t)d.QD), (size_t)d.C);
    /* floats per layer */
    size_t att = (size_t)B_max * d.Hq * T_max * (o->fused_attention ? 1 : (size_t)T_max); /* probabilities or lse */
    size_t per_layer = N * (3 * (size_t)d.C + 2 * (size_t)d.QD + 3 * (size_t)d.KD + (size_t)d.QD + 3 * (size_t)d.F) +
                       2 * N + (d.qk_norm ? N * (size_t)(d.Hq + d.Hkv) : 0) + att + N * (size_t)d.C; /* res_mid */
    size_t half = (size_t)d.D / 2;
    /* checkpointed: every layer keeps its input only; one set of the rest serves every layer */
    size_t kept = o->checkpoint ? N * (size_t)d.C * L + (per_layer - N * (size_t)d.C) : per_layer * L;
    size_t total = kept + N * (2 * (size_t)d.C + 1) + lrows * (size_t)d.V + 2 * (size_t)T_max * half +
                   2 * N * (size_t)d.C + 5 * N * W;
    size_t n_ptr_arrays = 20;
    a->block = jr_calloc(n_ptr_arrays * L, sizeof(float *));
    a->ids = jr_malloc(sizeof(int32_t) * N);
    a->pos = jr_malloc(sizeof(int32_t) * N);
    float *buf = aligned_alloc(64, ((sizeof(float) * total + 63) / 64) * 64);
    if (!a->block || !a->ids || !a->pos || !buf) {
        free(buf); free(a->block); free(a->ids); free(a->pos); memset(a, 0, sizeof *a);
        return jr_fail(JR_ENOMEM, "activations: cannot allocate %.1f MiB for batch %d x %d", total * 4.0 / 1048576,
                       B_max, T_max);
    }
    memset(buf, 0, sizeof(float) * total);
    a->bytes = sizeof(float) * total;
    a->B_max = B_max; a->T_max = T_max;
    a->logit_rows = (int)lrows;
    a->fused = o->fused_attention != 0;
    a->checkpoint = o->checkpoint != 0;
    float ***arr[] = {&a->res_in, &a->ln1, &a->ln1_rstd, &a->q, &a->k, &a->v, &a->qr, &a->kr, &a->qn_rstd,
                      &a->kn_rstd, &a->att, &a->ao, &a->res_mid, &a->ln2, &a->ln2_rstd, &a->gate, &a->up, &a->sw};
    float **ptrs = a->block;
    for (size_t i = 0; i < sizeof arr / sizeof *arr; i++) *arr[i] = ptrs + i * L;
    float *p = buf;
#define TAKE(n) (p += (n), p - (n))
    for (size_t l = 0; l < L; l++) a->res_in[l] = TAKE(N * d.C);
    for (size_t l = 0; l < L; l++) {
        if (a->checkpoint && l > 0) { /* the same buffers as layer 0 */
            for (size_t i = 1; i < sizeof arr / sizeof *arr; i++) (*arr[i])[l] = (*arr[i])[0];
            continue;
        }
        a->ln1[l] = TAKE(N * d.C);
        a->ln1_rstd[l] = TAKE(N);
        a->q[l] = TAKE(N * d.QD);
        a->k[l] = TAKE(N * d.KD);
        a->v[l] = TAKE(N * d.KD);
        a->qr[l] = TAKE(N * d.QD);
        a->kr[l] = TAKE(N * d.KD);
        a->qn_rstd[l] = d.qk_norm ? TAKE(N * d.Hq) : NULL;
        a->kn_rstd[l] = d.qk_norm ? TAKE(N * d.Hkv) : NULL;
        a->att[l] = TAKE(att);
        a->ao[l] = TAKE(N * d.QD);
        a->res_mid[l] = TAKE(N * d.C);
        a->ln2[l] = TAKE(N * d.C);
        a->ln2_rstd[l] = TAKE(N);
        a->gate[l] = TAKE(N * d.F);
        a->up[l] = TAKE(N * d.F);
        a->sw[l] = TAKE(N * d.F);
    }
    a->res_out = TAKE(N * d.C);
    a->lnf = TAKE(N * d.C);
    a->lnf_rstd = TAKE(N);
    a->logits = TAKE(lrows * d.V);
    a->cos_t = TAKE((size_t)T_max * half);
    a->sin_t = TAKE((size_t)T_max * half);
    a->scratch = TAKE(2 * N * d.C + 5 * N * W);
#undef TAKE
    /* rotary tables from the config's inverse frequencies (rope_theta, llama3 scaling) */
    float *inv_f = jr_malloc(sizeof(float) * (half ? half : 1));
    double *inv_d = jr_malloc(sizeof(double) * (half ? half : 1));
    if (!inv_f || !inv_d) { free(inv_f); free(inv_d); jr_acts_free(a); return JR_ENOMEM; }
    jr_model_rope_inv_freq(&m->cfg, inv_f);
    for (size_t i = 0; i < half; i++) inv_d[i] = inv_f[i];
    jr_rope_table(a->cos_t, a->sin_t, inv_d, T_max, d.D);
    free(inv_f); free(inv_d);
    return JR_OK;
}

void jr_acts_free(jr_acts *a) {
    if (!a) return;
    if (a->res_in) free(a->res_in[0]);
    free(a->wb);
    free(a->xb);
    free(a->block);
    free(a->ids);
    free(a->pos);
    memset(a, 0, sizeof *a);
}

/* Layer l of the forward over a->B x a->T from a->res_in[l]. full = 0 (the backward recomputing a
 * checkpointed layer) stops after SwiGLU: the down projection's output is the next layer's input,
 * which is kept, and its backward needs only sw. */
static void layer_forward(const jr_model *m, jr_acts *a, int l, int full, jr_status *stp) {
    dims d = dims_of(&m->cfg);
    int B = a->B, T = a->T, N = B * T;
    jr_status st = *stp;
    const jr_layer_w *lw = &m->w.layers[l];
    float *next = l + 1 < d.L ? a->res_in[l + 1] : a->res_out;
    jr_rmsnorm_forward(a->ln1[l], a->ln1_rstd[l], a->res_in[l], lw->attn_norm, N, d.C, d.eps);
    const uint16_t *xb = act_bf16(m, a, a->ln1[l], (long)N * d.C);
    mm_f(m, a, &st, a->q[l], a->ln1[l], xb, lw->wq, lw->bq, N, d.C, d.QD);
    mm_f(m, a, &st, a->k[l], a->ln1[l], xb, lw->wk, lw->bk, N, d.C, d.KD);
    mm_f(m, a, &st, a->v[l], a->ln1[l], xb, lw->wv, lw->bv, N, d.C, d.KD);
    const float *qin = a->q[l], *kin = a->k[l];
    if (d.qk_norm) { /* per-head RMSNorm before RoPE (Qwen3) */
        jr_rmsnorm_forward(a->qr[l], a->qn_rstd[l], a->q[l], lw->q_norm, N * d.Hq, d.D, d.eps);
        jr_rmsnorm_forward(a->kr[l], a->kn_rstd[l], a->k[l], lw->k_norm, N * d.Hkv, d.D, d.eps);
        qin = a->qr[l]; kin = a->kr[l];
    }
    jr_rope_forward(a->qr[l], qin, a->pos, a->cos_t, a->sin_t, N, d.Hq, d.D);
    jr_rope_forward(a->kr[l], kin, a->pos, a->cos_t, a->sin_t, N, d.Hkv, d.D);
    if (!a->fused)
        jr_attention_forward(a->ao[l], a->att[l], a->qr[l], a->kr[l], a->v[l], B, T, d.Hq, d.Hkv, d.D);
    else if (jr_attention_fused_forward(a->ao[l], a->att[l], a->qr[l], a->kr[l], a->v[l], B, T, d.Hq, d.Hkv, d.D) && !st)
        st = jr_fail(JR_ENOMEM, "forward: no memory for the attention scratch");
    mm_f(m, a, &st, a->res_mid[l], a->ao[l], NULL, lw->wo, lw->bo, N, d.QD, d.C);
    jr_add_inplace(a->res_mid[l], a->res_in[l], (long)N * d.C);
    jr_rmsnorm_forward(a->ln2[l], a->ln2_rstd[l], a->res_mid[l], lw->mlp_norm, N, d.C, d.eps);
    xb = act_bf16(m, a, a->ln2[l], (long)N * d.C);
    mm_f(m, a, &st, a->gate[l], a->ln2[l], xb, lw->wgate, NULL, N, d.C, d.F);
    mm_f(m, a, &st, a->up[l], a->ln2[l], xb, lw->wup, NULL, N, d.C, d.F);
    jr_swiglu_forward(a->sw[l], a->gate[l], a->up[l], N, d.F);
    if (full) {
        mm_f(m, a, &st, next, a->sw[l], NULL, lw->wdown, NULL, N, d.F, d.C);
        jr_add_inplace(next, a->res_mid[l], (long)N * d.C);
    }
    *stp = st;
}

jr_status jr_model_forward(jr_model *m, jr_acts *a, const int32_t *ids, int B, int T) {
    if (m->w16) return jr_fail(JR_EUNSUPPORTED, "forward: the model was loaded for bf16 inference (jr_model_load_bf16): no fp32 weights");
    if (B < 1 || T < 1 || B > a->B_max || T > a->T_max)
        return jr_fail(JR_EINVAL, "forward: batch %d x %d outside the allocated %d x %d", B, T, a->B_max, a->T_max);
    dims d = dims_of(&m->cfg);
    int N = B * T;
    for (int n = 0; n < N; n++) {
        if (ids[n] < 0 || ids[n] >= d.V)
            return jr_fail(JR_EINVAL, "forward: token id %d at row %d position %d is outside the vocabulary [0, %d)",
                           ids[n], n / T, n % T, d.V);
        a->ids[n] = ids[n];
        a->pos[n] = n % T;
    }
    a->B = B; a->T = T;
    jr_status st = weights_bf16(m, a);
    if (st) { a->B = a->T = 0; return st; }
    const jr_weights *w = &m->w;
    jr_embedding_forward(a->res_in[0], a->ids, w->embed, N, d.C);
    for (int l = 0; l < d.L; l++) layer_forward(m, a, l, 1, &st);
    jr_rmsnorm_forward(a->lnf, a->lnf_rstd, a->res_out, w->final_norm, N, d.C, d.eps);
    if (a->logit_rows >= N) mm_f(m, a, &st, a->logits, a->lnf, NULL, w->lm_head, NULL, N, d.C, d.V);
    if (st) a->B = a->T = 0;
    return st;
}

jr_status jr_model_logprobs_ent(const jr_model *m, const jr_acts *a, const int32_t *targets, float temperature,
                                float *lp, float *ent) {
    int N = a->B * a->T, V = m->cfg.vocab_size, C = m->cfg.hidden_size;
    jr_status st = JR_OK;
    for (int r0 = 0; r0 < N && !st; r0 += a->logit_rows) { /* one pass when the forward kept every logit */
        int rows = N - r0 < a->logit_rows ? N - r0 : a->logit_rows;
        if (a->logit_rows < N) mm_f(m, a, &st, a->logits, a->lnf + (size_t)r0 * C, NULL, m->w.lm_head, NULL, rows, C, V);
        jr_logprob_forward(lp + r0, a->logits, targets + r0, rows, V, 1.0f / temperature);
        if (ent) jr_entropy_forward(ent + r0, a->logits, targets + r0, rows, V, (float)(1.0 / temperature));
    }
    return st;
}

jr_status jr_model_logprobs(const jr_model *m, const jr_acts *a, const int32_t *targets, float temperature, float *lp) {
    return jr_model_logprobs_ent(m, a, targets, temperature, lp, NULL);
}

static void zero(float *p, size_t n) { memset(p, 0, sizeof(float) * n); }

jr_status jr_model_backward(jr_model *m, jr_acts *a, const int32_t *targets, float temperature, const float *dlp) {
    if (!m->grads) return jr_fail(JR_EINVAL, "backward: the model has no gradient buffer (jr_model_alloc_grads)");
    if (a->B < 1 || a->T < 1) return jr_fail(JR_EINVAL, "backward: no forward pass to differentiate");
    if (!(temperature > 0)) return jr_fail(JR_EINVAL, "backward: temperature %g must be positive", temperature);
    dims d = dims_of(&m->cfg);
    int B = a->B, T = a->T, N = B * T;
    jr_status st = JR_OK;
    size_t W = maxz(maxz((size_t)d.F, (size_t)d.QD), (size_t)d.C);
    float *dres = a->scratch, *dln = dres + (size_t)N * d.C;
    float *s[5];
    for (int i = 0; i < 5; i++) s[i] = dln + (size_t)N * d.C + (size_t)i * N * W;
    const jr_weights *w = &m->w;
    jr_weights *g = &m->g;

    /* head: logits -> dlogits in place, lm_head and final norm (chunked: each chunk's logits again) */
    zero(dln, (size_t)N * d.C);
    for (int r0 = 0; r0 < N; r0 += a->logit_rows) {
        int rows = N - r0 < a->logit_rows ? N - r0 : a->logit_rows;
        const float *lnf = a->lnf + (size_t)r0 * d.C;
        if (a->logit_rows < N) mm_f(m, a, &st, a->logits, lnf, NULL, w->lm_head, NULL, rows, d.C, d.V);
        jr_logprob_backward_inplace(a->logits, dlp + r0, targets + r0, rows, d.V, 1.0f / temperature);
        mm_b(m, a, &st, dln + (size_t)r0 * d.C, g->lm_head, NULL, a->logits, lnf, NULL, w->lm_head, rows, d.C, d.V);
    }
    zero(dres, (size_t)N * d.C);
    jr_rmsnorm_backward(dres, g->final_norm, dln, a->res_out, w->final_norm, a->lnf_rstd, N, d.C);

    for (int l = d.L - 1; l >= 0; l--) {
        const jr_layer_w *lw = &w->layers[l];
        jr_layer_w *gw = &g->layers[l];
        if (a->checkpoint && l + 1 < d.L) layer_forward(m, a, l, 0, &st); /* the last layer's are still there */
        /* MLP: dres is d(layer output) */
        float *dsw = s[0], *dgate = s[1], *dup = s[2];
        zero(dsw, (size_t)N * d.F);
        mm_b(m, a, &st, dsw, gw->wdown, NULL, dres, a->sw[l], NULL, lw->wdown, N, d.F, d.C);
        zero(dgate, (size_t)N * d.F); zero(dup, (size_t)N * d.F);
        jr_swiglu_backward(dgate, dup, dsw, a->gate[l], a->up[l], N, d.F);
        zero(dln, (size_t)N * d.C);
        const uint16_t *xb = act_bf16(m, a, a->ln2[l], (long)N * d.C);
        mm_b(m, a, &st, dln, gw->wgate, NULL, dgate, a->ln2[l], xb, lw->wgate, N, d.C, d.F);
        mm_b(m, a, &st, dln, gw->wup, NULL, dup, a->ln2[l], xb, lw->wup, N, d.C, d.F);
        jr_rmsnorm_backward(dres, gw->mlp_norm, dln, a->res_mid[l], lw->mlp_norm, a->ln2_rstd[l], N, d.C);
        /* attention: dres is now d(res_mid) */
        float *dao = s[0], *dq = s[1], *dk = s[2], *dv = s[3], *dkr = s[4];
        zero(dao, (size_t)N * d.QD);
        mm_b(m, a, &st, dao, gw->wo, gw->bo, dres, a->ao[l], NULL, lw->wo, N, d.QD, d.C);
        zero(dq, (size_t)N * d.QD); zero(dk, (size_t)N * d.KD); zero(dv, (size_t)N * d.KD);
        if (!a->fused)
            jr_attention_backward(dq, dk, dv, dao, a->att[l], a->qr[l], a->kr[l], a->v[l], B, T, d.Hq, d.Hkv, d.D);
        else if (jr_attention_fused_backward(dq, dk, dv, dao, a->att[l], a->qr[l], a->kr[l], a->v[l], B, T, d.Hq, d.Hkv,
                                             d.D) && !st)
            st = jr_fail(JR_ENOMEM, "backward: no memory for the attention scratch");
        float *dqn = s[0], *dkn = s[4]; /* gradients before rope */
        (void)dkr;
        zero(dqn, (size_t)N * d.QD); zero(dkn, (size_t)N * d.KD);
        jr_rope_backward(dqn, dq, a->pos, a->cos_t, a->sin_t, N, d.Hq, d.D);
        jr_rope_backward(dkn, dk, a->pos, a->cos_t, a->sin_t, N, d.Hkv, d.D);
        float *dqp = dqn, *dkp = dkn; /* gradients of the projections' outputs */
        if (d.qk_norm) {
            zero(dq, (size_t)N * d.QD); zero(dk, (size_t)N * d.KD);
            jr_rmsnorm_backward(dq, gw->q_norm, dqn, a->q[l], lw->q_norm, a->qn_rstd[l], N * d.Hq, d.D);
            jr_rmsnorm_backward(dk, gw->k_norm, dkn, a->k[l], lw->k_norm, a->kn_rstd[l], N * d.Hkv, d.D);
            dqp = dq; dkp = dk;
        }
        zero(dln, (size_t)N * d.C);
        xb = act_bf16(m, a, a->ln1[l], (long)N * d.C);
        mm_b(m, a, &st, dln, gw->wq, gw->bq, dqp, a->ln1[l], xb, lw->wq, N, d.C, d.QD);
        mm_b(m, a, &st, dln, gw->wk, gw->bk, dkp, a->ln1[l], xb, lw->wk, N, d.C, d.KD);
        mm_b(m, a, &st, dln, gw->wv, gw->bv, dv, a->ln1[l], xb, lw->wv, N, d.C, d.KD);
        jr_rmsnorm_backward(dres, gw->attn_norm, dln, a->res_in[l], lw->attn_norm, a->ln1_rstd[l], N, d.C);
    }
    if (!m->dw_hook.take || !m->dw_hook.take(m->dw_hook.ud, w->embed, NULL, NULL, N, d.C, d.V))
        jr_embedding_backward(g->embed, dres, a->ids, N, d.C);
    a->B = a->T = 0; /* the logits are consumed */
    return st;
}

jr_status jr_model_nll(jr_model *m, jr_acts *a, const int32_t *ids, const int32_t *targets, int B, int T,
                       float scale, float *lp, double *nll_sum, long *n_tok) {
    jr_status st = jr_model_forward(m, a, ids, B, T);
    if (st) return st;
    int N = B * T;
    for (int n = 0; n < N; n++)
        if (targets[n] >= m->cfg.vocab_size)
            return jr_fail(JR_EINVAL, "loss: target id %d at row %d position %d is outside the vocabulary [0, %d)",
                           targets[n], n / T, n % T, m->cfg.vocab_size);
    if ((st = jr_model_logprobs(m, a, targets, 1.0f, lp))) return st;
    double s = 0;
    long cnt = 0;
    for (int n = 0; n < N; n++)
        if (targets[n] >= 0) { s -= lp[n]; cnt++; }
    *nll_sum = s;
    *n_tok = cnt;
    if (scale != 0.0f) {
        if (!m->grads && (st = jr_model_alloc_grads(m))) return st;
        for (int n = 0; n < N; n++) lp[n] = targets[n] >= 0 ? -scale : 0.0f;
        if ((st = jr_model_backward(m, a, targets, 1.0f, lp))) return st;
    }
    return JR_OK;
}

double jr_model_train_flops(const jr_model *m, int B, int T) {
    dims d = dims_of(&m->cfg);
    double N = (double)B * T;
    double pm = (double)d.L * ((double)d.C * d.QD * 2 + (double)d.C * d.KD * 2 + 3.0 * d.C * d.F) + (double)d.V * d.C;
    double attn_fwd = 4.0 * B * d.Hq * d.D * ((double)T * (T + 1) / 2) * d.L; /* q.k and p.v, causal half */
    return 6.0 * N * pm + 3.0 * attn_fwd;
}
