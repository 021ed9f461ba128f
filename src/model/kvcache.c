/* kvcache.c - transformer inference with a KV cache: prefill a prompt, copy a slot, decode one token per slot */
#include "judgerl/kvcache.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/nn.h"
#include "nn/kernels.h"

/* One layer's matmul weights in bf16. */
typedef struct lw16 { uint16_t *q, *k, *v, *o, *gate, *up, *down; } lw16;

typedef struct kv {
    const jr_model *m;
    int S, T;                  /* slots, positions per slot */
    int L, C, Hq, Hkv, D, QD, KD, F, V;
    float eps;
    jr_kv_opts o;
    void *k, *v;               /* (L, S, T, KD) floats, or bf16 when o.kv_bf16 */
    size_t esz;                /* bytes per cached element */
    uint16_t *wb;              /* o.weights == BF16: every matmul weight in bf16 (one buffer), unless the
                                * model holds them (m->w16): then only a tied lm_head's copy */
    lw16 *lb;                  /* per layer, into wb */
    uint16_t *head_b;          /* lm_head (V, C) in bf16, into wb */
    uint16_t *a16;             /* bf16 copy of a matmul's input rows */
    int *len;                  /* (S) positions filled */
    float *cos_t, *sin_t;      /* (T, D/2) */
    int R;                     /* rows the buffers hold */
    float *x, *ln, *q, *kk, *vv, *ao, *tmp, *gate, *up, *rstd, *qtmp, *att, *lnf;
    int32_t *pos;
    int *slot_of;
    int32_t *ids;
} kv;

jr_kv_opts jr_kv_opts_default(void) { return (jr_kv_opts){JR_COMPUTE_F32, 0, 1}; }

/* One product of a prod_n call. */
typedef jr_rows_mm rows_mm;

/* The np products of one input (q, k, v; gate, up). fp32 weights: the level's rows kernel (batch-invariant,
 * one fixed order per output) for every row, decode and prefill alike, in one thread team. bf16 weights:
 * jr_matmul_rows_bf16 (batch-invariant), or oneDNN for 64 rows and more when the lm is not deterministic
 * (its blocking, hence its rounding, depends on the rows). */
static void mm_n(kv *s, const rows_mm *p, const uint16_t *const *wb, const float *inp, int N, int C, int np) {
    if (!wb[0]) { jr_kernels()->rows_f32(p, np, inp, N, C); return; }
    for (int i = 0; i < np; i++) {
        if (!s->o.deterministic && N >= 64 && !jr_matmul_bf16w_forward(p[i].out, inp, wb[i], p[i].bias, N, C, p[i].OC)) continue;
        jr_matmul_rows_bf16(p[i].out, inp, wb[i], p[i].bias, N, C, p[i].OC, s->a16);
    }
}

/* Element (position 0) of slot `slot` in layer l of cache base. */
static char *kslot(kv *s, void *base, int l, int slot) {
    return (char *)base + (((size_t)l * s->S + (size_t)slot) * s->T) * (size_t)s->KD * s->esz;
}

/* Converts the model's fp32 matmul weights into the bf16 copy. */
static void sync_weights(kv *s) {
    const jr_weights *w = &s->m->w;
    if (s->m->w16) { /* the model's own bf16 weights (they do not change); a tied lm_head is the embedding */
        if (s->m->cfg.tie_word_embeddings) jr_bf16_from_f32(s->head_b, w->embed, (long)s->V * (long)s->C);
        return;
    }
    size_t C = (size_t)s->C, QD = (size_t)s->QD, KD = (size_t)s->KD, F = (size_t)s->F;
    for (int l = 0; l < s->L; l++) {
        const jr_layer_w *lw = &w->layers[l];
        jr_bf16_from_f32(s->lb[l].q, lw->wq, (long)(QD * C));
        jr_bf16_from_f32(s->lb[l].k, lw->wk, (long)(KD * C));
        jr_bf16_from_f32(s->lb[l].v, lw->wv, (long)(KD * C));
        jr_bf16_from_f32(s->lb[l].o, lw->wo, (long)(C * QD));
        jr_bf16_from_f32(s->lb[l].gate, lw->wgate, (long)(F * C));
        jr_bf16_from_f32(s->lb[l].up, lw->wup, (long)(F * C));
        jr_bf16_from_f32(s->lb[l].down, lw->wdown, (long)(C * F));
    }
    jr_bf16_from_f32(s->head_b, w->lm_head, (long)s->V * (long)C);
}

/* Points the layers (and an untied lm_head) at a model's own bf16 weights (jr_model_load_bf16); a
 * tied lm_head gets a bf16 copy of the embedding. */
static int borrow_weights(kv *s) {
    const jr_model *m = s->m;
    s->lb = calloc((size_t)s->L, sizeof *s->lb);
    if (!s->lb) return -1;
    for (int i = 0; i < m->n_tensors; i++) {
        const jr_model_tensor *t = &m->tensors[i];
        uint16_t *p = m->w16 + m->offset[i];
        lw16 *lb = t->layer >= 0 ? &s->lb[t->layer] : NULL;
        switch (t->role) {
        case JR_T_Q: lb->q = p; break;
        case JR_T_K: lb->k = p; break;
        case JR_T_V: lb->v = p; break;
        case JR_T_O: lb->o = p; break;
        case JR_T_GATE: lb->gate = p; break;
        case JR_T_UP: lb->up = p; break;
        case JR_T_DOWN: lb->down = p; break;
        case JR_T_LM_HEAD: s->head_b = p; break;
        default: break;
        }
    }
    if (m->cfg.tie_word_embeddings && !(s->head_b = s->wb = jr_malloc_weights((size_t)s->V * (size_t)s->C * sizeof(uint16_t)))) return -1;
    sync_weights(s);
    return 0;
}

/* Lays the bf16 copy out in one buffer (per layer q, k, v, o, gate, up, down, then lm_head). */
static int alloc_weights(kv *s) {
    if (s->m->w16) return borrow_weights(s);
    size_t C = (size_t)s->C, QD = (size_t)s->QD, KD = (size_t)s->KD, F = (size_t)s->F;
    size_t per = QD * C + 2 * KD * C + C * QD + 3 * F * C, n = per * (size_t)s->L + (size_t)s->V * C;
    s->wb = jr_malloc_weights(n * sizeof(uint16_t));
    s->lb = calloc((size_t)s->L, sizeof *s->lb);
    if (!s->wb || !s->lb) return -1;
    uint16_t *p = s->wb;
    for (int l = 0; l < s->L; l++) {
        s->lb[l].q = p; p += QD * C;
        s->lb[l].k = p; p += KD * C;
        s->lb[l].v = p; p += KD * C;
        s->lb[l].o = p; p += C * QD;
        s->lb[l].gate = p; p += F * C;
        s->lb[l].up = p; p += F * C;
        s->lb[l].down = p; p += C * F;
    }
    s->head_b = p;
    sync_weights(s);
    return 0;
}

static void kv_free(kv *s) {
    if (!s) return;
    free(s->k); free(s->v); free(s->len); free(s->cos_t); free(s->sin_t);
    free(s->x); free(s->ln); free(s->q); free(s->kk); free(s->vv); free(s->ao); free(s->tmp);
    free(s->gate); free(s->up); free(s->rstd); free(s->qtmp); free(s->att); free(s->lnf);
    free(s->pos); free(s->slot_of); free(s->ids);
    free(s->wb); free(s->lb); free(s->a16);
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
    int widest = s->C > s->QD ? s->C : s->QD;
    if (s->F > widest) widest = s->F;
    if (s->lb) GROW(s->a16, r * (size_t)widest * sizeof(uint16_t));
#undef GROW
    s->R = R;
    return JR_OK;
}

/* Thread t of a team of n running forward_rows together (fp32 weights, the rows kernel: one team for the
 * whole pass, meeting at barriers, r its task ranges), or t = 0 of n = 1 outside a team (each step then
 * its own thread teams, as the bf16 kernel's). */
typedef struct team { int t, n; jr_task_range *r; } team;

static inline void team_sync(const team *g) {
    if (g->n > 1) {
#pragma omp barrier
    }
}

/* The np products of one input (mm_n's), by the whole team (ended at a barrier) or outside one. */
static void prod_n(kv *s, const team *g, const rows_mm *p, const uint16_t *const *wb, const float *inp,
                   int N, int C, int np) {
    if (g->r) {
        jr_kernels()->rows_f32_share(p, np, inp, N, C, g->t, g->n, g->r, 0);
        team_sync(g);
        return;
    }
    mm_n(s, p, wb, inp, N, C, np);
}

/* Rows [r0, r0 + nr) after q, k and v: q and k normed (when the model says) and rotated, k and v into
 * the cache. qtmp holds the slice's q then its k (KD <= QD), so slices never share it. */
static void qk_rows(kv *s, const jr_layer_w *lw, int l, int r0, int nr) {
    int D = s->D, Hq = s->Hq, Hkv = s->Hkv, KD = s->KD, QD = s->QD;
    float *q = s->q + (size_t)r0 * QD, *kk = s->kk + (size_t)r0 * KD, *qt = s->qtmp + (size_t)r0 * QD;
    if (lw->q_norm) {
        jr_rmsnorm_forward(qt, s->rstd + (size_t)r0 * Hq, q, lw->q_norm, nr * Hq, D, s->eps);
        memcpy(q, qt, (size_t)nr * QD * sizeof(float));
        jr_rmsnorm_forward(qt, s->rstd + (size_t)r0 * Hq, kk, lw->k_norm, nr * Hkv, D, s->eps);
        memcpy(kk, qt, (size_t)nr * KD * sizeof(float));
    }
    jr_rope_forward(q, q, s->pos + r0, s->cos_t, s->sin_t, nr, Hq, D);
    jr_rope_forward(kk, kk, s->pos + r0, s->cos_t, s->sin_t, nr, Hkv, D);
    for (int r = r0; r < r0 + nr; r++) {
        size_t at = (size_t)s->pos[r] * KD * s->esz;
        char *kd = kslot(s, s->k, l, s->slot_of[r]) + at, *vd = kslot(s, s->v, l, s->slot_of[r]) + at;
        if (s->o.kv_bf16) {
            jr_bf16_from_f32((uint16_t *)(void *)kd, s->kk + (size_t)r * KD, KD);
            jr_bf16_from_f32((uint16_t *)(void *)vd, s->vv + (size_t)r * KD, KD);
        } else {
            memcpy(kd, s->kk + (size_t)r * KD, (size_t)KD * sizeof(float));
            memcpy(vd, s->vv + (size_t)r * KD, (size_t)KD * sizeof(float));
        }
    }
}

/* Query head i % Hq of row i / Hq over its slot's cache, positions 0..pos (causal). */
static inline void attend_pair(kv *s, int l, int i) {
    int r = i / s->Hq, h = i % s->Hq, D = s->D;
    size_t hk = (size_t)(h / (s->Hq / s->Hkv)) * D * s->esz;
    jr_kernels()->attend(s->q + (size_t)r * s->QD + (size_t)h * D, kslot(s, s->k, l, s->slot_of[r]) + hk,
                      kslot(s, s->v, l, s->slot_of[r]) + hk, s->att + (size_t)i * s->T, s->pos[r] + 1,
                      1.0f / sqrtf((float)D), s->ao + (size_t)r * s->QD + (size_t)h * D, D, (size_t)s->KD * s->esz,
                      s->o.kv_bf16);
}

/* Attention of every row, ended at a barrier in a team: a team's threads take the (row, head) pairs in
 * turn (a prompt's later rows attend over more positions). */
static void attention_rows(kv *s, const team *g, int l, int R) {
    int np = R * s->Hq;
    if (g->n > 1) {
        for (int i = g->t; i < np; i += g->n) attend_pair(s, l, i);
        team_sync(g);
        return;
    }
#pragma omp parallel for schedule(static) if ((long)np * (s->pos[R - 1] + 1) * s->D >= 65536)
    for (int i = 0; i < np; i++) attend_pair(s, l, i);
}

/* Layer l over the R rows, as thread g->t of g->n: the row-wise steps on its slice of the rows, the
 * products and the attention shared. x's slice was last written by this thread (the embedding or the
 * residual add), so the layer starts without a barrier. */
static void layer_rows(kv *s, const team *g, int l, int R) {
    const jr_layer_w *lw = &s->m->w.layers[l];
    const lw16 *lb = s->lb ? &s->lb[l] : NULL;
    int C = s->C, KD = s->KD, QD = s->QD, F = s->F;
    int r0 = R * g->t / g->n, nr = R * (g->t + 1) / g->n - r0;
    float *x = s->x + (size_t)r0 * C, *ln = s->ln + (size_t)r0 * C, *tmp = s->tmp + (size_t)r0 * C;
    if (nr) jr_rmsnorm_forward(ln, s->rstd + r0, x, lw->attn_norm, nr, C, s->eps);
    team_sync(g);
    const rows_mm qkv[3] = {{s->q, lw->wq, lw->bq, QD}, {s->kk, lw->wk, lw->bk, KD}, {s->vv, lw->wv, lw->bv, KD}};
    const uint16_t *qkv16[3] = {lb ? lb->q : NULL, lb ? lb->k : NULL, lb ? lb->v : NULL};
    prod_n(s, g, qkv, qkv16, s->ln, R, C, 3);
    if (nr) qk_rows(s, lw, l, r0, nr);
    team_sync(g);
    attention_rows(s, g, l, R);
    const rows_mm o = {s->tmp, lw->wo, lw->bo, C};
    const uint16_t *o16 = lb ? lb->o : NULL;
    prod_n(s, g, &o, &o16, s->ao, R, QD, 1);
    if (nr) {
        jr_add_inplace(x, tmp, (long)nr * C);
        jr_rmsnorm_forward(ln, s->rstd + r0, x, lw->mlp_norm, nr, C, s->eps);
    }
    team_sync(g);
    const rows_mm gu[2] = {{s->gate, lw->wgate, NULL, F}, {s->up, lw->wup, NULL, F}};
    const uint16_t *gu16[2] = {lb ? lb->gate : NULL, lb ? lb->up : NULL};
    prod_n(s, g, gu, gu16, s->ln, R, C, 2);
    if (nr) jr_swiglu_forward_fast(s->gate + (size_t)r0 * F, s->gate + (size_t)r0 * F, s->up + (size_t)r0 * F, nr, F);
    team_sync(g);
    const rows_mm dn = {s->tmp, lw->wdown, NULL, C};
    const uint16_t *dn16 = lb ? lb->down : NULL;
    prod_n(s, g, &dn, &dn16, s->gate, R, F, 1);
    if (nr) jr_add_inplace(x, tmp, (long)nr * C);
}

/* forward_rows as thread g->t of g->n. */
static void forward_team(kv *s, const team *g, int R, const int *out_rows, int n_out, float *logits) {
    int C = s->C, r0 = R * g->t / g->n, nr = R * (g->t + 1) / g->n - r0;
    if (nr) jr_embedding_forward(s->x + (size_t)r0 * C, s->ids + r0, s->m->w.embed, nr, C);
    for (int l = 0; l < s->L; l++) layer_rows(s, g, l, R);
    /* Final norm and lm_head only for the rows whose logits are wanted. */
    if (n_out <= 0) return;
    team_sync(g);
    int i0 = n_out * g->t / g->n, ni = n_out * (g->t + 1) / g->n - i0;
    for (int i = i0; i < i0 + ni; i++) memcpy(s->tmp + (size_t)i * C, s->x + (size_t)out_rows[i] * C, (size_t)C * sizeof(float));
    if (ni) jr_rmsnorm_forward(s->ln + (size_t)i0 * C, s->rstd + i0, s->tmp + (size_t)i0 * C, s->m->w.final_norm, ni, C, s->eps);
    team_sync(g);
    const rows_mm head = {logits, s->m->w.lm_head, NULL, s->V};
    const uint16_t *hb = s->head_b;
    prod_n(s, g, &head, &hb, s->ln, n_out, C, 1);
}

/* Runs R rows (row r: token ids[r] of slot slot_of[r] at position pos[r]) through the model,
 * writing their keys and values into the cache; rows of one slot must come in position order.
 * Writes logits (V per row) for the rows listed in out_rows (n_out of them) into logits. With fp32
 * weights (the rows kernel) one thread team runs the whole pass, meeting at barriers instead of a fork
 * and join per product, and the row-wise steps between the products (norms, rope, cache writes, residual
 * adds, SwiGLU) run on each thread's slice of the rows instead of the main thread's alone; every sum as
 * before (bitwise). */
static void forward_rows(kv *s, int R, const int *out_rows, int n_out, float *logits) {
    int nt = omp_get_max_threads();
    /* the team only where the layer's products would get one each (JR_ROWS_TEAM_MIN_WORK): a tiny model's pass
     * stays on one thread, as its products did, instead of paying 9 barriers a layer */
    if (!s->lb && nt > 1 && !omp_in_parallel() && (long)R * s->C * s->F >= JR_ROWS_TEAM_MIN_WORK) {
        jr_task_range r[JR_ROWS_MAX_THREADS];
        if (nt > JR_ROWS_MAX_THREADS) nt = JR_ROWS_MAX_THREADS;
        for (int i = 0; i < nt; i++) r[i].v = 0; /* every range empty: a thread taking from one not yet set finds nothing */
#pragma omp parallel num_threads(nt)
        {
            team g = {omp_get_thread_num(), omp_get_num_threads(), r};
            forward_team(s, &g, R, out_rows, n_out, logits);
        }
        return;
    }
    team g = {0, 1, NULL};
    forward_team(s, &g, R, out_rows, n_out, logits);
}

static jr_status kv_extend(void *impl, int k, const int *slots, const int32_t *const *toks, const int *n,
                           const int *start, float *logits) {
    kv *s = impl;
    long total = 0;
    for (int i = 0; i < k; i++) {
        int sl = slots[i];
        if (sl < 0 || sl >= s->S) return jr_fail(JR_EINVAL, "kv cache: slot %d outside [0, %d)", sl, s->S);
        for (int j = 0; j < i; j++)
            if (slots[j] == sl) return jr_fail(JR_EINVAL, "kv cache: slot %d twice in one pass", sl);
        if (start[i] != 0 && start[i] != s->len[sl])
            return jr_fail(JR_EINVAL, "kv cache: slot %d holds %d positions, not %d", sl, s->len[sl], start[i]);
        if (n[i] <= 0 || start[i] + n[i] > s->T)
            return jr_fail(JR_EINVAL, "kv cache: %d tokens from position %d do not fit %d positions", n[i], start[i], s->T);
        for (int t = 0; t < n[i]; t++)
            if (toks[i][t] < 0 || toks[i][t] >= s->V)
                return jr_fail(JR_EINVAL, "kv cache: token id %d at position %d outside [0, %d)", toks[i][t], start[i] + t, s->V);
        total += n[i];
    }
    /* Rows of every item in order, in passes of up to `chunk` rows (bounds the row buffers); the
     * logits of an item's last row go to its row of `logits`. */
    const int chunk = 256;
    int R = total < chunk ? (int)total : chunk, *outs = malloc(sizeof(int) * (size_t)(k > 0 ? k : 1));
    if (!outs) return jr_fail(JR_ENOMEM, "kv cache: out of memory");
    jr_status st = rows_reserve(s, R);
    if (st) { free(outs); return st; }
    for (int i = 0; i < k; i++) s->len[slots[i]] = start[i];
    int r = 0, n_out = 0, done = 0;
    for (int i = 0; i < k; i++)
        for (int t = 0; t < n[i]; t++) {
            s->ids[r] = toks[i][t];
            s->pos[r] = start[i] + t;
            s->slot_of[r] = slots[i];
            if (t == n[i] - 1) outs[n_out++] = r;
            if (++r == R || (i == k - 1 && t == n[i] - 1)) {
                forward_rows(s, r, outs, n_out, logits + (size_t)done * s->V);
                done += n_out;
                r = n_out = 0;
            }
        }
    for (int i = 0; i < k; i++) s->len[slots[i]] = start[i] + n[i];
    free(outs);
    return JR_OK;
}

static jr_status kv_prefill(void *impl, int slot, const int32_t *toks, int n, float *logits) {
    kv *s = impl;
    if (slot < 0 || slot >= s->S) return jr_fail(JR_EINVAL, "kv cache: slot %d outside [0, %d)", slot, s->S);
    if (n <= 0 || n > s->T) return jr_fail(JR_EINVAL, "kv cache: a prompt of %d tokens does not fit %d positions", n, s->T);
    int zero = 0;
    return kv_extend(impl, 1, &slot, &toks, &n, &zero, logits);
}

static jr_status kv_copy(void *impl, int dst, int src) {
    kv *s = impl;
    if (dst < 0 || dst >= s->S || src < 0 || src >= s->S) return jr_fail(JR_EINVAL, "kv cache: slot %d or %d outside [0, %d)", dst, src, s->S);
    if (dst == src) return JR_OK;
    size_t n = (size_t)s->len[src] * (size_t)s->KD * s->esz;
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
    forward_rows(s, n, rows, n, logits);
    for (int r = 0; r < n; r++) s->len[slots[r]]++;
    free(rows);
    return JR_OK;
}

jr_status jr_kv_lm_open(jr_lm *lm, const jr_model *m, int n_slots, int max_ctx) {
    jr_kv_opts o = jr_kv_opts_default();
    return jr_kv_lm_open_opts(lm, m, n_slots, max_ctx, &o);
}

jr_status jr_kv_lm_sync(jr_lm *lm) {
    kv *s = lm->impl;
    if (s && s->lb) sync_weights(s);
    return JR_OK;
}

const char *jr_kv_lm_describe(const jr_lm *lm, char *buf, size_t n) {
    const kv *s = lm->impl;
    if (!s) snprintf(buf, n, "closed");
    else if (s->lb)
        snprintf(buf, n, "weights bf16 (%s kernel%s), KV cache %s", jr_matmul_rows_bf16_kernel(),
                 s->o.deterministic ? "" : ", oneDNN for 64+ rows: not deterministic", s->o.kv_bf16 ? "bf16" : "fp32");
    else snprintf(buf, n, "weights fp32, KV cache %s", s->o.kv_bf16 ? "bf16" : "fp32");
    return buf;
}

jr_status jr_kv_lm_open_opts(jr_lm *lm, const jr_model *m, int n_slots, int max_ctx, const jr_kv_opts *o) {
    memset(lm, 0, sizeof *lm);
    if (n_slots <= 0 || max_ctx <= 1) return jr_fail(JR_EINVAL, "kv cache: need at least 1 slot and 2 positions (got %d, %d)", n_slots, max_ctx);
    const jr_model_config *c = &m->cfg;
    if (m->w16 && o->weights != JR_COMPUTE_BF16)
        return jr_fail(JR_EINVAL, "kv cache: the model was loaded with bf16 weights only (jr_model_load_bf16): open the cache with bf16 weights");
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
    s->o = *o;
    s->esz = o->kv_bf16 ? sizeof(uint16_t) : sizeof(float);
    size_t cache = (size_t)s->L * (size_t)s->S * (size_t)s->T * (size_t)s->KD;
    s->k = malloc(cache * s->esz);
    s->v = malloc(cache * s->esz);
    s->len = calloc((size_t)s->S, sizeof *s->len);
    int half = s->D / 2;
    s->cos_t = malloc((size_t)s->T * (size_t)half * sizeof(float));
    s->sin_t = malloc((size_t)s->T * (size_t)half * sizeof(float));
    float *inv_f = malloc((size_t)(half ? half : 1) * sizeof(float));
    double *inv_d = malloc((size_t)(half ? half : 1) * sizeof(double));
    if (!s->k || !s->v || !s->len || !s->cos_t || !s->sin_t || !inv_f || !inv_d) {
        free(inv_f); free(inv_d);
        kv_free(s);
        return jr_fail(JR_ENOMEM, "kv cache: cannot allocate %.1f MiB for %d slots x %d positions", 2.0 * cache * s->esz / 1048576, n_slots, max_ctx);
    }
    /* The same rotary tables as the training forward (jr_acts_init). */
    jr_model_rope_inv_freq(c, inv_f);
    for (int i = 0; i < half; i++) inv_d[i] = inv_f[i];
    jr_rope_table(s->cos_t, s->sin_t, inv_d, s->T, s->D);
    free(inv_f);
    free(inv_d);
    if (o->weights == JR_COMPUTE_BF16 && alloc_weights(s)) {
        kv_free(s);
        return jr_fail(JR_ENOMEM, "kv cache: cannot allocate the bf16 weights (%zu parameters)", m->n_params);
    }
    jr_status st = rows_reserve(s, n_slots > 16 ? n_slots : 16);
    if (st) { kv_free(s); return st; }
    lm->impl = s;
    lm->n_logits = s->V;
    lm->n_slots = s->S;
    lm->max_ctx = s->T;
    lm->prefill = kv_prefill;
    lm->copy = kv_copy;
    lm->decode = kv_decode;
    lm->extend = kv_extend;
    /* one batch-invariant kernel for every row at every kernel level (fp32: the level's rows kernel; bf16:
     * jr_matmul_rows_bf16, or oneDNN when not deterministic): prompts batch and chunk with decode rows */
    lm->batch_prefill = 1;
    return JR_OK;
}

void jr_kv_lm_close(jr_lm *lm) {
    kv_free(lm->impl);
    memset(lm, 0, sizeof *lm);
}
