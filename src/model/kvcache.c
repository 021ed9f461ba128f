/* kvcache.c - transformer inference with a KV cache: prefill a prompt, copy a slot, decode one token per slot */
#include "judgerl/kvcache.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/nn.h"

typedef struct kv {
    const jr_model *m;
    int S, T;                  /* slots, positions per slot */
    int L, C, Hq, Hkv, D, QD, KD, F, V;
    float eps;
    float *k, *v;              /* (L, S, T, KD) */
    int *len;                  /* (S) positions filled */
    float *cos_t, *sin_t;      /* (T, D/2) */
    int R;                     /* rows the buffers hold */
    float *x, *ln, *q, *kk, *vv, *ao, *tmp, *gate, *up, *rstd, *qtmp, *att, *lnf;
    int32_t *pos;
    int *slot_of;
    int32_t *ids;
} kv;

double jr_kv_bytes(const jr_model *m, int n_slots, int max_ctx) {
    const jr_model_config *c = &m->cfg;
    return 2.0 * c->num_hidden_layers * (double)n_slots * max_ctx * c->num_key_value_heads * c->head_dim * sizeof(float);
}

typedef float v8 __attribute__((vector_size(32)));

/* dot(a, b) over n floats in a fixed order (16 lanes, then the tail), the same for every row. */
static float dot_fixed(const float *a, const float *b, int n) {
    v8 s0 = {0}, s1 = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        v8 a0, a1, b0, b1;
        memcpy(&a0, a + i, 32); memcpy(&a1, a + i + 8, 32);
        memcpy(&b0, b + i, 32); memcpy(&b1, b + i + 8, 32);
        s0 += a0 * b0;
        s1 += a1 * b1;
    }
    v8 s = s0 + s1;
    float r = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
    for (; i < n; i++) r += a[i] * b[i];
    return r;
}

/* out (N,OC) = inp (N,C) . weight (OC,C)^T + bias: each row computed alone (no blocking across
 * rows), so a row's result never depends on the batch it decodes in. Weight rows are read once
 * per call and reused for every row. */
static void matmul_rows(float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC) {
#pragma omp parallel for schedule(static) if ((long)OC * C * N > 65536)
    for (int o = 0; o < OC; o++) {
        const float *w = weight + (size_t)o * C;
        float b = bias ? bias[o] : 0.0f;
        for (int n = 0; n < N; n++) out[(size_t)n * OC + o] = dot_fixed(inp + (size_t)n * C, w, C) + b;
    }
}

/* Prefill (one sequence, many rows) uses the engine's sgemm; decode uses matmul_rows. */
static void mm(int decode, float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC) {
    if (decode) matmul_rows(out, inp, weight, bias, N, C, OC);
    else jr_matmul_forward(out, inp, weight, bias, N, C, OC);
}

static float *kslot(kv *s, float *base, int l, int slot) { return base + (((size_t)l * s->S + (size_t)slot) * s->T) * (size_t)s->KD; }

static void kv_free(kv *s) {
    if (!s) return;
    free(s->k); free(s->v); free(s->len); free(s->cos_t); free(s->sin_t);
    free(s->x); free(s->ln); free(s->q); free(s->kk); free(s->vv); free(s->ao); free(s->tmp);
    free(s->gate); free(s->up); free(s->rstd); free(s->qtmp); free(s->att); free(s->lnf);
    free(s->pos); free(s->slot_of); free(s->ids);
    free(s);
}

/* Grows the per-row buffers to hold R rows. */
static jr_status rows_reserve(kv *s, int R) {
    if (R <= s->R) return JR_OK;
    size_t r = (size_t)R;
#define GROW(p, n) do { void *q_ = realloc((p), (n)); if (!q_) return jr_fail(JR_ENOMEM, "kv cache: out of memory for %d rows", R); (p) = q_; } while (0)
    GROW(s->x, r * s->C * sizeof(float));
    GROW(s->ln, r * s->C * sizeof(float));
    GROW(s->tmp, r * s->C * sizeof(float));
    GROW(s->q, r * s->QD * sizeof(float));
    GROW(s->qtmp, r * s->QD * sizeof(float));
    GROW(s->ao, r * s->QD * sizeof(float));
    GROW(s->kk, r * s->KD * sizeof(float));
    GROW(s->vv, r * s->KD * sizeof(float));
    GROW(s->gate, r * s->F * sizeof(float));
    GROW(s->up, r * s->F * sizeof(float));
    GROW(s->rstd, r * (size_t)(s->Hq > 1 ? s->Hq : 1) * sizeof(float));
    GROW(s->att, r * (size_t)s->Hq * s->T * sizeof(float));
    GROW(s->pos, r * sizeof(int32_t));
    GROW(s->slot_of, r * sizeof(int));
    GROW(s->ids, r * sizeof(int32_t));
#undef GROW
    s->R = R;
    return JR_OK;
}

/* Runs R rows (row r: token ids[r] of slot slot_of[r] at position pos[r]) through the model,
 * writing their keys and values into the cache; rows of one slot must come in position order.
 * Writes logits (V per row) for the rows listed in out_rows (n_out of them) into logits. */
static void forward_rows(kv *s, int R, const int *out_rows, int n_out, float *logits, int decode) {
    const jr_weights *w = &s->m->w;
    int C = s->C, D = s->D, Hq = s->Hq, Hkv = s->Hkv, KD = s->KD, QD = s->QD, F = s->F;
    int grp = Hq / Hkv;
    float scale = 1.0f / sqrtf((float)D);
    jr_embedding_forward(s->x, s->ids, w->embed, R, C);
    for (int l = 0; l < s->L; l++) {
        const jr_layer_w *lw = &w->layers[l];
        jr_rmsnorm_forward(s->ln, s->rstd, s->x, lw->attn_norm, R, C, s->eps);
        mm(decode, s->q, s->ln, lw->wq, lw->bq, R, C, QD);
        mm(decode, s->kk, s->ln, lw->wk, lw->bk, R, C, KD);
        mm(decode, s->vv, s->ln, lw->wv, lw->bv, R, C, KD);
        if (lw->q_norm) {
            jr_rmsnorm_forward(s->qtmp, s->rstd, s->q, lw->q_norm, R * Hq, D, s->eps);
            memcpy(s->q, s->qtmp, (size_t)R * QD * sizeof(float));
            jr_rmsnorm_forward(s->qtmp, s->rstd, s->kk, lw->k_norm, R * Hkv, D, s->eps);
            memcpy(s->kk, s->qtmp, (size_t)R * KD * sizeof(float));
        }
        jr_rope_forward(s->q, s->q, s->pos, s->cos_t, s->sin_t, R, Hq, D);
        jr_rope_forward(s->kk, s->kk, s->pos, s->cos_t, s->sin_t, R, Hkv, D);
        for (int r = 0; r < R; r++) {
            memcpy(kslot(s, s->k, l, s->slot_of[r]) + (size_t)s->pos[r] * KD, s->kk + (size_t)r * KD, (size_t)KD * sizeof(float));
            memcpy(kslot(s, s->v, l, s->slot_of[r]) + (size_t)s->pos[r] * KD, s->vv + (size_t)r * KD, (size_t)KD * sizeof(float));
        }
        /* Attention of each row over its slot's cache, positions 0..pos (causal). */
#pragma omp parallel for collapse(2) schedule(static)
        for (int r = 0; r < R; r++)
            for (int h = 0; h < Hq; h++) {
                const float *qv = s->q + (size_t)r * QD + (size_t)h * D;
                const float *kc = kslot(s, s->k, l, s->slot_of[r]) + (size_t)(h / grp) * D;
                const float *vc = kslot(s, s->v, l, s->slot_of[r]) + (size_t)(h / grp) * D;
                float *a = s->att + ((size_t)r * Hq + (size_t)h) * s->T;
                int P = s->pos[r] + 1;
                float mx = -INFINITY;
                for (int t = 0; t < P; t++) {
                    const float *kt = kc + (size_t)t * KD;
                    float dot = 0;
                    for (int d = 0; d < D; d++) dot += qv[d] * kt[d];
                    a[t] = dot * scale;
                    if (a[t] > mx) mx = a[t];
                }
                float sum = 0;
                for (int t = 0; t < P; t++) { a[t] = expf(a[t] - mx); sum += a[t]; }
                float inv = 1.0f / sum;
                float *o = s->ao + (size_t)r * QD + (size_t)h * D;
                for (int d = 0; d < D; d++) o[d] = 0;
                for (int t = 0; t < P; t++) {
                    const float *vt = vc + (size_t)t * KD;
                    float p = a[t] * inv;
                    for (int d = 0; d < D; d++) o[d] += p * vt[d];
                }
            }
        mm(decode, s->tmp, s->ao, lw->wo, lw->bo, R, QD, C);
        jr_add_inplace(s->x, s->tmp, (long)R * C);
        jr_rmsnorm_forward(s->ln, s->rstd, s->x, lw->mlp_norm, R, C, s->eps);
        mm(decode, s->gate, s->ln, lw->wgate, NULL, R, C, F);
        mm(decode, s->up, s->ln, lw->wup, NULL, R, C, F);
        jr_swiglu_forward(s->gate, s->gate, s->up, R, F);
        mm(decode, s->tmp, s->gate, lw->wdown, NULL, R, F, C);
        jr_add_inplace(s->x, s->tmp, (long)R * C);
    }
    /* Final norm and lm_head only for the rows whose logits are wanted. */
    if (n_out <= 0) return;
    for (int i = 0; i < n_out; i++) memcpy(s->tmp + (size_t)i * C, s->x + (size_t)out_rows[i] * C, (size_t)C * sizeof(float));
    jr_rmsnorm_forward(s->ln, s->rstd, s->tmp, w->final_norm, n_out, C, s->eps);
    mm(decode, logits, s->ln, w->lm_head, NULL, n_out, C, s->V);
}

static jr_status kv_prefill(void *impl, int slot, const int32_t *toks, int n, float *logits) {
    kv *s = impl;
    if (slot < 0 || slot >= s->S) return jr_fail(JR_EINVAL, "kv cache: slot %d outside [0, %d)", slot, s->S);
    if (n <= 0 || n > s->T) return jr_fail(JR_EINVAL, "kv cache: a prompt of %d tokens does not fit %d positions", n, s->T);
    for (int i = 0; i < n; i++)
        if (toks[i] < 0 || toks[i] >= s->V) return jr_fail(JR_EINVAL, "kv cache: token id %d at position %d outside [0, %d)", toks[i], i, s->V);
    /* Long prompts go through in chunks to bound the row buffers. */
    const int chunk = 256;
    s->len[slot] = 0;
    for (int at = 0; at < n; at += chunk) {
        int R = n - at < chunk ? n - at : chunk;
        jr_status st = rows_reserve(s, R);
        if (st) return st;
        for (int r = 0; r < R; r++) {
            s->ids[r] = toks[at + r];
            s->pos[r] = at + r;
            s->slot_of[r] = slot;
        }
        int last = R - 1;
        forward_rows(s, R, &last, at + R < n ? 0 : 1, logits, 0); /* logits of the last position only */
    }
    s->len[slot] = n;
    return JR_OK;
}

static jr_status kv_copy(void *impl, int dst, int src) {
    kv *s = impl;
    if (dst < 0 || dst >= s->S || src < 0 || src >= s->S) return jr_fail(JR_EINVAL, "kv cache: slot %d or %d outside [0, %d)", dst, src, s->S);
    if (dst == src) return JR_OK;
    size_t n = (size_t)s->len[src] * (size_t)s->KD * sizeof(float);
    for (int l = 0; l < s->L; l++) {
        memcpy(kslot(s, s->k, l, dst), kslot(s, s->k, l, src), n);
        memcpy(kslot(s, s->v, l, dst), kslot(s, s->v, l, src), n);
    }
    s->len[dst] = s->len[src];
    return JR_OK;
}

static jr_status kv_decode(void *impl, int n, const int *slots, const int32_t *toks, float *logits) {
    kv *s = impl;
    jr_status st = rows_reserve(s, n);
    if (st) return st;
    if (n <= 0) return JR_OK;
    int *rows = calloc((size_t)n, sizeof *rows);
    if (!rows) return jr_fail(JR_ENOMEM, "kv cache: out of memory");
    for (int r = 0; r < n; r++) {
        int sl = slots[r];
        if (sl < 0 || sl >= s->S) { free(rows); return jr_fail(JR_EINVAL, "kv cache: slot %d outside [0, %d)", sl, s->S); }
        if (s->len[sl] >= s->T) { free(rows); return jr_fail(JR_EINVAL, "kv cache: slot %d is full (%d positions)", sl, s->T); }
        if (toks[r] < 0 || toks[r] >= s->V) { free(rows); return jr_fail(JR_EINVAL, "kv cache: token id %d outside [0, %d)", toks[r], s->V); }
        s->ids[r] = toks[r];
        s->pos[r] = s->len[sl];
        s->slot_of[r] = sl;
        rows[r] = r;
    }
    forward_rows(s, n, rows, n, logits, 1);
    for (int r = 0; r < n; r++) s->len[slots[r]]++;
    free(rows);
    return JR_OK;
}

jr_status jr_kv_lm_open(jr_lm *lm, const jr_model *m, int n_slots, int max_ctx) {
    memset(lm, 0, sizeof *lm);
    if (n_slots <= 0 || max_ctx <= 1) return jr_fail(JR_EINVAL, "kv cache: need at least 1 slot and 2 positions (got %d, %d)", n_slots, max_ctx);
    const jr_model_config *c = &m->cfg;
    kv *s = calloc(1, sizeof *s);
    if (!s) return jr_fail(JR_ENOMEM, "kv cache: out of memory");
    s->m = m;
    s->S = n_slots;
    s->T = max_ctx;
    s->L = c->num_hidden_layers;
    s->C = c->hidden_size;
    s->Hq = c->num_attention_heads;
    s->Hkv = c->num_key_value_heads;
    s->D = c->head_dim;
    s->QD = s->Hq * s->D;
    s->KD = s->Hkv * s->D;
    s->F = c->intermediate_size;
    s->V = c->vocab_size;
    s->eps = (float)c->rms_norm_eps;
    size_t cache = (size_t)s->L * (size_t)s->S * (size_t)s->T * (size_t)s->KD;
    s->k = malloc(cache * sizeof(float));
    s->v = malloc(cache * sizeof(float));
    s->len = calloc((size_t)s->S, sizeof *s->len);
    int half = s->D / 2;
    s->cos_t = malloc((size_t)s->T * (size_t)half * sizeof(float));
    s->sin_t = malloc((size_t)s->T * (size_t)half * sizeof(float));
    float *inv_f = malloc((size_t)(half ? half : 1) * sizeof(float));
    double *inv_d = malloc((size_t)(half ? half : 1) * sizeof(double));
    if (!s->k || !s->v || !s->len || !s->cos_t || !s->sin_t || !inv_f || !inv_d) {
        free(inv_f); free(inv_d);
        kv_free(s);
        return jr_fail(JR_ENOMEM, "kv cache: cannot allocate %.1f MiB for %d slots x %d positions", 2.0 * cache * 4 / 1048576, n_slots, max_ctx);
    }
    /* The same rotary tables as the training forward (jr_acts_init). */
    jr_model_rope_inv_freq(c, inv_f);
    for (int i = 0; i < half; i++) inv_d[i] = inv_f[i];
    jr_rope_table(s->cos_t, s->sin_t, inv_d, s->T, s->D);
    free(inv_f);
    free(inv_d);
    jr_status st = rows_reserve(s, n_slots > 16 ? n_slots : 16);
    if (st) { kv_free(s); return st; }
    lm->impl = s;
    lm->n_logits = s->V;
    lm->n_slots = s->S;
    lm->max_ctx = s->T;
    lm->prefill = kv_prefill;
    lm->copy = kv_copy;
    lm->decode = kv_decode;
    return JR_OK;
}

void jr_kv_lm_close(jr_lm *lm) {
    kv_free(lm->impl);
    memset(lm, 0, sizeof *lm);
}
