/* kvcache.c - transformer inference with a KV cache: prefill a prompt, copy a slot, decode one token per slot */
#include "judgerl/kvcache.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/nn.h"
#include "nn/expf_glibc.h"
#include "nn/rows_block.h"

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

static inline float widen(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

typedef float v8 __attribute__((vector_size(32)));

static inline v8 ld8(const float *p) {
    v8 v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* acc + a * b: one fused multiply-add per lane where the CPU has it (-march=native), else a
 * multiply then an add. Either way every row goes through the same instructions. */
#ifdef __FMA__
#include <immintrin.h>
static inline v8 fma8(v8 acc, v8 a, v8 b) { return (v8)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)acc); }
#else
static inline v8 fma8(v8 acc, v8 a, v8 b) { return acc + a * b; }
#endif

/* The reduction every row uses: lanes folded pairwise, then the tail in order. */
static inline float fold(v8 s0, v8 s1, const float *a, const float *b, int i, int n) {
    v8 s = s0 + s1;
    float r = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
    for (; i < n; i++) r += a[i] * b[i];
    return r;
}

/* dot(a, b) over n floats in a fixed order (two 8-lane accumulators over blocks of 16, then the
 * tail), the same whatever else is computed alongside. */
static float dot_fixed(const float *a, const float *b, int n) {
    v8 s0 = {0}, s1 = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = fma8(s0, ld8(a + i), ld8(b + i));
        s1 = fma8(s1, ld8(a + i + 8), ld8(b + i + 8));
    }
    return fold(s0, s1, a, b, i, n);
}

/* dot_fixed against a bf16 vector (a key of a bf16 cache), widened 8 at a time: the same order. */
static float dot_fixed_b(const float *a, const uint16_t *b, int n) {
    v8 s0 = {0}, s1 = {0};
    int i = 0;
    float w[16];
    for (; i + 16 <= n; i += 16) {
        for (int j = 0; j < 16; j++) w[j] = widen(b[i + j]);
        s0 = fma8(s0, ld8(a + i), ld8(w));
        s1 = fma8(s1, ld8(a + i + 8), ld8(w + 8));
    }
    v8 t = s0 + s1;
    float r = ((t[0] + t[4]) + (t[1] + t[5])) + ((t[2] + t[6]) + (t[3] + t[7]));
    for (; i < n; i++) r += a[i] * widen(b[i]);
    return r;
}

#if defined(__AVX512F__) && defined(__FMA__)
/* fp32 prefill through matmul_rows too: at 32-256 rows it beats sgemm (1.4-1.7x, one thread, docs/
 * PERFORMANCE.md), and prompts then batch with each other and with decode rows, bitwise as alone. */
#define ROWS_PREFILL 1
#define UNROLL _Pragma("GCC unroll 8")
/* A block of NR rows x NC outputs (NR * NC <= 16; constants at every call) in 16-lane steps: the low 8
 * lanes of a step are dot_fixed's s0, the high 8 its s1 (the same fused multiply-adds), and fold()
 * ends each sum, so every output is bitwise dot_fixed's. pf (or NULL): pfn lines to prefetch
 * (rows_block.h), spread over the steps. k in [k0, k1): with ab (a k chunk of a longer C) the sums start
 * from ab's (unless k0 is 0) and go back there until k1 is C, in the same order. */
static inline __attribute__((always_inline)) void blk_f32(float *out, const float *inp, const float *weight,
                                                          const float *bias, int C, int OC, int n, int o, int NR,
                                                          int NC, const char *pf, int pfn, int k0, int k1, float *ab) {
    __m512 acc[4][8];
    UNROLL for (int i = 0; i < NR; i++)
        UNROLL for (int j = 0; j < NC; j++) acc[i][j] = ab && k0 ? _mm512_loadu_ps(ab + (i * 8 + j) * 16) : _mm512_setzero_ps();
    const char *pfe = pf + 64 * (size_t)pfn;
    int pps = pf ? (pfn + (k1 - k0 + 15) / 16 - 1) / ((k1 - k0 + 15) / 16) : 0; /* lines per step */
    int k = k0;
    for (; k + 16 <= k1; k += 16) {
        __m512 wv[8], av[4];
        for (int l = 0; l < pps && pf < pfe; l++, pf += 64) _mm_prefetch(pf, _MM_HINT_T0);
        UNROLL for (int j = 0; j < NC; j++) wv[j] = _mm512_loadu_ps(weight + (size_t)(o + j) * C + k);
        UNROLL for (int i = 0; i < NR; i++) av[i] = _mm512_loadu_ps(inp + (size_t)(n + i) * C + k);
        if (NR * NC > 8) /* both operands in registers: folded into the fused multiply-adds, the reloads made 20 loads per 16 products */
            UNROLL for (int i = 0; i < NR; i++) {
                __asm__("" : "+v"(av[i]));
                if (i < NC) __asm__("" : "+v"(wv[i]));
            }
        UNROLL for (int i = 0; i < NR; i++)
            UNROLL for (int j = 0; j < NC; j++) acc[i][j] = _mm512_fmadd_ps(av[i], wv[j], acc[i][j]);
    }
    if (k1 < C) { /* a chunk before the last: the sums wait in ab */
        UNROLL for (int i = 0; i < NR; i++)
            UNROLL for (int j = 0; j < NC; j++) _mm512_storeu_ps(ab + (i * 8 + j) * 16, acc[i][j]);
        return;
    }
    if (NC == 4 && NR >= 3 && k == C) { /* 4 x 4 and 3 x 4 (row 3 zeros, never stored), no tail: the 16 sums at once */
        __m512 A[16];
        UNROLL for (int j = 0; j < 4; j++)
            UNROLL for (int i = 0; i < 4; i++) A[4 * j + i] = i < NR ? acc[i][j] : _mm512_setzero_ps();
        jr_rows_sum4x4(out, A, NR, bias, n, o, OC, 1);
        return;
    }
    UNROLL for (int i = 0; i < NR; i++)
        UNROLL for (int j = 0; j < NC; j++) {
            v8 lo = (v8)_mm512_castps512_ps256(acc[i][j]), hi = (v8)_mm512_extractf32x8_ps(acc[i][j], 1);
            out[(size_t)(n + i) * OC + o + j] = fold(lo, hi, inp + (size_t)(n + i) * C, weight + (size_t)(o + j) * C, k, C) +
                                                (bias ? bias[o + j] : 0.0f);
        }
}

/* The k chunk of a longer C (rows_block.h): over the 0.5b shapes at 32 rows (one thread, weights from
 * DRAM) 127 ms per pass of the 24 layers against 146 uncut and 140 in chunks of 256; the down projection
 * (C = 4864) 126 -> 162 GFLOP/s, the others (C = 896) 174 -> 188. At 2-8 rows (decode, streaming-bound)
 * chunks of 128 were faster: 8 rows 61-63 -> 47 ms a pass (100m: 13.3 -> 10.4), 4 rows 53 -> 48 (64:
 * 50, 32: 68; at 16 rows 128 and 512 the same, at 32 rows 128 took 157). */
#define JR_F32_KC(N) ((N) <= 8 ? 128 : 512)

/* How far ahead (in weight rows) a group prefetches (rows_block.h): at 2-8 rows the next group (8), not
 * the one after (16), whose 28 KB (C = 896) with the group's own and the input rows overran L1 (48 KB).
 * 0.5b batch-8 decode at two threads, alternated (load 4-7): 41.7-60.9 ms a step against 44.1-65.4,
 * 5 of 7 pairs faster, ~4% on average; 4 rows ahead was slower (62.5-75.0). */
#define JR_F32_PFD(N) ((N) <= 8 ? 8 : 16)

/* Outputs [o0, o1) for all N rows: groups of 8 weight rows blocked as jr_matmul_rows_bf16's kernel
 * (src/nn/rows_block.h), a single row 1 x 1. */
static void range_f32(float *out, const float *inp, const float *w, const float *bias, int N, int C, int OC, int o0,
                      int o1) {
    int o = o0;
    if (N == 1) { /* one weight row after the other: a single sequential stream, which the hardware prefetcher
                   * feeds ~15% faster than 8 rows at once (batch-1 decode is memory-bound); each row prefetches
                   * 8 KB ahead (rows_block.h) */
        for (; o < o1; o++) {
            int pfn;
            const char *pf = jr_rows_n1_pf(w, (size_t)C * sizeof *w, o, OC, &pfn);
            blk_f32(out, inp, w, bias, C, OC, 0, o, 1, 1, pf, pfn, 0, C, NULL);
        }
        return;
    }
    float acc[JR_ROWS_ACC];
#define BLK(n, oo, NR, NC, pf, pfn, k0, k1, ab) blk_f32(out, inp, w, bias, C, OC, n, oo, NR, NC, pf, pfn, k0, k1, ab)
    JR_ROWS_GROUPS(BLK, float, w, N, C, OC, o, o1, JR_F32_KC(N), acc, JR_F32_PFD(N))
#undef BLK
    for (; o < o1; o++)
        for (int n = 0; n < N; n++) blk_f32(out, inp, w, bias, C, OC, n, o, 1, 1, NULL, 0, 0, C, NULL);
}

/* One product of a matmul_rows_n call: out (N,OC) = inp . w^T + bias. */
typedef struct rows_mm { float *out; const float *w, *bias; int OC; } rows_mm;

/* Task b (16 weight rows of one product) of a matmul_rows_n call. */
static void rows_task(const rows_mm *p, const float *inp, int N, int C, int b) {
    int i = 0;
    while (b >= (p[i].OC + 15) / 16) b -= (p[i].OC + 15) / 16, i++;
    range_f32(p[i].out, inp, p[i].w, p[i].bias, N, C, p[i].OC, b * 16, b * 16 + 16 < p[i].OC ? b * 16 + 16 : p[i].OC);
}

/* A thread's tasks [next, end), packed next | end << 32, alone on its cache line: the owner takes
 * from the front, a thread done with its own takes from the back. */
typedef struct { _Alignas(64) uint64_t v; char pad[56]; } task_range;

/* Takes up to want tasks (from the back: one), returns the first and their count in *got, or -1. */
static int take_tasks(task_range *r, int back, int want, int *got) {
    uint64_t v = __atomic_load_n(&r->v, __ATOMIC_RELAXED);
    for (;;) {
        uint32_t nx = (uint32_t)v, end = (uint32_t)(v >> 32);
        if (nx >= end) return -1;
        uint32_t k = back ? 1 : (end - nx) / 4 > (uint32_t)want ? (end - nx) / 4 : end - nx < (uint32_t)want ? end - nx : (uint32_t)want;
        uint64_t w = back ? ((uint64_t)(end - 1) << 32) | nx : ((uint64_t)end << 32) | (nx + k);
        if (__atomic_compare_exchange_n(&r->v, &v, w, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            *got = (int)k;
            return back ? (int)end - 1 : (int)nx;
        }
    }
}

#define ROWS_MAX_THREADS 64

/* Thread t's part of the np products (matmul_rows_n's tasks) in a team of n with task ranges r: its
 * contiguous share first, 4 tasks (or a quarter of what is left) at a time, then the others' last tasks
 * one by one. fresh: r is not set yet (a barrier after each thread sets its own); else every range of r
 * must be empty (all tasks done, a barrier since), so that a thread reading another's range before its
 * owner sets it finds nothing and leaves the tasks to their owner. */
static void rows_share(const rows_mm *p, int np, const float *inp, int N, int C, int t, int n, task_range *r, int fresh) {
    int nb = 0;
    for (int i = 0; i < np; i++) nb += (p[i].OC + 15) / 16;
    __atomic_store_n(&r[t].v, ((uint64_t)((long)nb * (t + 1) / n) << 32) | (uint64_t)((long)nb * t / n), __ATOMIC_RELAXED);
    if (fresh) {
#pragma omp barrier
    }
    for (int k = 0, b, got; k < n; k++)
        while ((b = take_tasks(&r[(t + k) % n], k > 0, 4, &got)) >= 0)
            for (int j = 0; j < got; j++) rows_task(p, inp, N, C, b + j);
}

/* The np products of one input inp (N,C) (q, k and v; gate and up) in one thread team: their tasks of
 * 16 weight rows one after the other, each thread a contiguous share (its own stream of weights; an
 * interleaved split was 10-25% slower), and a thread done with its share takes the last tasks of
 * another's, so the team's halves end together. Each output summed as dot_fixed, so a row's result
 * never depends on the batch it decodes in, nor on which thread computes it. */
/* Below ~0.1 ms of work (multiply-adds) a thread team costs more than it saves. */
#define ROWS_TEAM_MIN_WORK 262144L

static void matmul_rows_n(const rows_mm *p, int np, const float *inp, int N, int C) {
    int nb = 0, nt = omp_get_max_threads();
    long work = 0;
    for (int i = 0; i < np; i++) nb += (p[i].OC + 15) / 16, work += (long)p[i].OC * C * N;
    if (nt > ROWS_MAX_THREADS) nt = ROWS_MAX_THREADS;
    if (work < ROWS_TEAM_MIN_WORK || nt < 2 || nb < 2) {
        for (int b = 0; b < nb; b++) rows_task(p, inp, N, C, b);
        return;
    }
    task_range r[ROWS_MAX_THREADS];
#pragma omp parallel num_threads(nt)
    rows_share(p, np, inp, N, C, omp_get_thread_num(), omp_get_num_threads(), r, 1);
}

/* out (N,OC) = inp (N,C) . weight (OC,C)^T + bias (matmul_rows_n with one product). */
static void matmul_rows(float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC) {
    rows_mm p = {out, weight, bias, OC};
    matmul_rows_n(&p, 1, inp, N, C);
}
#else
#define ROWS_PREFILL 0 /* without AVX-512 the 8-lane kernel loses to sgemm beyond a few rows */
/* Four rows against one weight row with exactly dot_fixed's order for each row (the weight
 * vectors are loaded once for the four). */
static void dot4_fixed(const float *a0, const float *a1, const float *a2, const float *a3, const float *w, int n, float *out) {
    v8 s00 = {0}, s01 = {0}, s10 = {0}, s11 = {0}, s20 = {0}, s21 = {0}, s30 = {0}, s31 = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        v8 w0 = ld8(w + i), w1 = ld8(w + i + 8);
        s00 = fma8(s00, ld8(a0 + i), w0); s01 = fma8(s01, ld8(a0 + i + 8), w1);
        s10 = fma8(s10, ld8(a1 + i), w0); s11 = fma8(s11, ld8(a1 + i + 8), w1);
        s20 = fma8(s20, ld8(a2 + i), w0); s21 = fma8(s21, ld8(a2 + i + 8), w1);
        s30 = fma8(s30, ld8(a3 + i), w0); s31 = fma8(s31, ld8(a3 + i + 8), w1);
    }
    out[0] = fold(s00, s01, a0, w, i, n);
    out[1] = fold(s10, s11, a1, w, i, n);
    out[2] = fold(s20, s21, a2, w, i, n);
    out[3] = fold(s30, s31, a3, w, i, n);
}

/* out (N,OC) = inp (N,C) . weight (OC,C)^T + bias: each row's sums in one fixed order (dot_fixed),
 * so a row's result never depends on the batch it decodes in. Weight rows are read once per call
 * and reused for every row. */
static void matmul_rows(float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC) {
#pragma omp parallel for schedule(static) if ((long)OC * C * N >= 262144) /* below ~0.1 ms of work a thread team costs more than it saves */
    for (int o = 0; o < OC; o++) {
        const float *w = weight + (size_t)o * C;
        float b = bias ? bias[o] : 0.0f, r4[4];
        int n = 0;
        for (; n + 4 <= N; n += 4) {
            const float *a = inp + (size_t)n * C;
            dot4_fixed(a, a + C, a + 2 * (size_t)C, a + 3 * (size_t)C, w, C, r4);
            for (int k = 0; k < 4; k++) out[(size_t)(n + k) * OC + o] = r4[k] + b;
        }
        for (; n < N; n++) out[(size_t)n * OC + o] = dot_fixed(inp + (size_t)n * C, w, C) + b;
    }
}
#endif

/* fp32 weights: matmul_rows (batch-invariant) for both; without AVX-512 prefill (many rows of one
 * sequence) uses the engine's sgemm and decode matmul_rows. bf16 weights: jr_matmul_rows_bf16 (batch-invariant) for both, or oneDNN for 64 rows and more when
 * the lm is not deterministic (its blocking, hence its rounding, depends on the rows). */
static void mm(kv *s, int decode, float *out, const float *inp, const float *weight, const uint16_t *wb,
               const float *bias, int N, int C, int OC) {
    if (wb) {
        if (!s->o.deterministic && N >= 64 && !jr_matmul_bf16w_forward(out, inp, wb, bias, N, C, OC)) return;
        jr_matmul_rows_bf16(out, inp, wb, bias, N, C, OC, s->a16);
    } else if (decode || ROWS_PREFILL) matmul_rows(out, inp, weight, bias, N, C, OC);
    else jr_matmul_forward(out, inp, weight, bias, N, C, OC);
}

/* The np products of one input (q, k, v; gate, up), each as mm() computes it: fp32 weights through
 * one thread team (matmul_rows_n) where mm() would run matmul_rows. */
static void mm_n(kv *s, int decode, const rows_mm *p, const uint16_t *const *wb, const float *inp, int N, int C, int np) {
#if defined(__AVX512F__) && defined(__FMA__)
    if (!wb[0] && (decode || ROWS_PREFILL)) { matmul_rows_n(p, np, inp, N, C); return; }
#endif
    for (int i = 0; i < np; i++) mm(s, decode, p[i].out, inp, p[i].w, wb[i], p[i].bias, N, C, p[i].OC);
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

/* o[0..n) += p * v[0..n) for a bf16 or fp32 row v, 8 lanes at a time (one fused multiply-add per lane). */
static inline void axpy_row(float *restrict o, float p, const char *v, int kb, int n) {
    v8 pv = {p, p, p, p, p, p, p, p};
    int d = 0;
    if (kb) {
        const uint16_t *vb = (const uint16_t *)(const void *)v;
        for (; d + 8 <= n; d += 8) {
            float w[8];
            for (int j = 0; j < 8; j++) w[j] = widen(vb[d + j]);
            v8 acc = fma8(ld8(o + d), pv, ld8(w));
            memcpy(o + d, &acc, sizeof acc);
        }
        for (; d < n; d++) o[d] += p * widen(vb[d]);
    } else {
        const float *vf = (const float *)(const void *)v;
        for (; d + 8 <= n; d += 8) {
            v8 acc = fma8(ld8(o + d), pv, ld8(vf + d));
            memcpy(o + d, &acc, sizeof acc);
        }
        for (; d < n; d++) o[d] += p * vf[d];
    }
}

#if defined(__AVX512F__) && defined(__FMA__)
/* 16 cached elements (fp32, or bf16 widened exactly) as one vector. */
static inline __m512 ld16(const char *p, int kb) {
    if (!kb) return _mm512_loadu_ps((const float *)(const void *)p);
    __m512i u = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
}

/* attend() for D = 16 * NV (NV <= 8, a constant at each call): a score is dot_fixed's sum (16-lane
 * steps = its two 8-lane accumulators, as blk_f32), the weighted sum of the values keeps o in
 * registers; the same operations in the same order per lane as the general path, so bitwise its result. */
static inline __attribute__((always_inline)) void attend16(const float *qv, const char *kc, const char *vc,
                                                           float *a, int P, float scale, float *restrict o,
                                                           size_t stride, int kb, int NV) {
    __m512 q[8], acc[8];
    UNROLL for (int j = 0; j < NV; j++) q[j] = _mm512_loadu_ps(qv + 16 * j);
    float mx = -INFINITY;
    for (int t = 0; t < P; t++) {
        const char *kt = kc + (size_t)t * stride;
        __m512 sc = _mm512_setzero_ps();
        UNROLL for (int j = 0; j < NV; j++) sc = _mm512_fmadd_ps(q[j], ld16(kt + (size_t)16 * j * (kb ? 2 : 4), kb), sc);
        v8 lo = (v8)_mm512_castps512_ps256(sc), hi = (v8)_mm512_extractf32x8_ps(sc, 1);
        a[t] = fold(lo, hi, qv, qv, 16 * NV, 16 * NV) * scale;
        if (a[t] > mx) mx = a[t];
    }
    float sum = 0;
    jr_expf_shifted(a, P, mx, 1.0f); /* expf(a[t] - mx), bitwise */
    for (int t = 0; t < P; t++) sum += a[t];
    float inv = 1.0f / sum;
    UNROLL for (int j = 0; j < NV; j++) acc[j] = _mm512_setzero_ps();
    for (int t = 0; t < P; t++) {
        const char *vt = vc + (size_t)t * stride;
        __m512 p = _mm512_set1_ps(a[t] * inv);
        UNROLL for (int j = 0; j < NV; j++) acc[j] = _mm512_fmadd_ps(p, ld16(vt + (size_t)16 * j * (kb ? 2 : 4), kb), acc[j]);
    }
    UNROLL for (int j = 0; j < NV; j++) _mm512_storeu_ps(o + 16 * j, acc[j]);
}
#endif

/* One query head of one row over P cached positions (keys kc, values vc: position t at t * KD
 * elements): scores in a (P), softmax, o (D) = the weighted sum of the values in position order.
 * Each row's result depends on its own cache only. */
static void attend(const kv *s, const float *qv, const char *kc, const char *vc, float *a, int P, float scale,
                   float *restrict o) {
    int D = s->D, kb = s->o.kv_bf16;
    size_t stride = (size_t)s->KD * s->esz;
#if defined(__AVX512F__) && defined(__FMA__)
    if (D == 64) { attend16(qv, kc, vc, a, P, scale, o, stride, kb, 4); return; }
    if (D == 128) { attend16(qv, kc, vc, a, P, scale, o, stride, kb, 8); return; }
#endif
    float mx = -INFINITY;
    for (int t = 0; t < P; t++) {
        const char *kt = kc + (size_t)t * stride;
        a[t] = (kb ? dot_fixed_b(qv, (const uint16_t *)(const void *)kt, D) : dot_fixed(qv, (const float *)(const void *)kt, D)) * scale;
        if (a[t] > mx) mx = a[t];
    }
    float sum = 0;
    jr_expf_shifted(a, P, mx, 1.0f); /* expf(a[t] - mx), bitwise */
    for (int t = 0; t < P; t++) sum += a[t];
    float inv = 1.0f / sum;
    memset(o, 0, (size_t)D * sizeof(float));
    for (int t = 0; t < P; t++) axpy_row(o, a[t] * inv, vc + (size_t)t * stride, kb, D);
}

/* Thread t of a team of n running forward_rows together (fp32 weights, the rows kernel: one team for the
 * whole pass, meeting at barriers, r its task ranges), or t = 0 of n = 1 outside a team (each step then
 * its own thread teams, as the bf16 kernel's). */
typedef struct team { int t, n; task_range *r; } team;

static inline void team_sync(const team *g) {
    if (g->n > 1) {
#pragma omp barrier
    }
}

/* The np products of one input (mm_n's), by the whole team (ended at a barrier) or outside one. */
static void prod_n(kv *s, const team *g, int decode, const rows_mm *p, const uint16_t *const *wb, const float *inp,
                   int N, int C, int np) {
#if ROWS_PREFILL
    if (g->r) {
        rows_share(p, np, inp, N, C, g->t, g->n, g->r, 0);
        team_sync(g);
        return;
    }
#endif
    mm_n(s, decode, p, wb, inp, N, C, np);
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
    attend(s, s->q + (size_t)r * s->QD + (size_t)h * D, kslot(s, s->k, l, s->slot_of[r]) + hk,
           kslot(s, s->v, l, s->slot_of[r]) + hk, s->att + (size_t)i * s->T, s->pos[r] + 1,
           1.0f / sqrtf((float)D), s->ao + (size_t)r * s->QD + (size_t)h * D);
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
static void layer_rows(kv *s, const team *g, int l, int R, int decode) {
    const jr_layer_w *lw = &s->m->w.layers[l];
    const lw16 *lb = s->lb ? &s->lb[l] : NULL;
    int C = s->C, KD = s->KD, QD = s->QD, F = s->F;
    int r0 = R * g->t / g->n, nr = R * (g->t + 1) / g->n - r0;
    float *x = s->x + (size_t)r0 * C, *ln = s->ln + (size_t)r0 * C, *tmp = s->tmp + (size_t)r0 * C;
    if (nr) jr_rmsnorm_forward(ln, s->rstd + r0, x, lw->attn_norm, nr, C, s->eps);
    team_sync(g);
    const rows_mm qkv[3] = {{s->q, lw->wq, lw->bq, QD}, {s->kk, lw->wk, lw->bk, KD}, {s->vv, lw->wv, lw->bv, KD}};
    const uint16_t *qkv16[3] = {lb ? lb->q : NULL, lb ? lb->k : NULL, lb ? lb->v : NULL};
    prod_n(s, g, decode, qkv, qkv16, s->ln, R, C, 3);
    if (nr) qk_rows(s, lw, l, r0, nr);
    team_sync(g);
    attention_rows(s, g, l, R);
    const rows_mm o = {s->tmp, lw->wo, lw->bo, C};
    const uint16_t *o16 = lb ? lb->o : NULL;
    prod_n(s, g, decode, &o, &o16, s->ao, R, QD, 1);
    if (nr) {
        jr_add_inplace(x, tmp, (long)nr * C);
        jr_rmsnorm_forward(ln, s->rstd + r0, x, lw->mlp_norm, nr, C, s->eps);
    }
    team_sync(g);
    const rows_mm gu[2] = {{s->gate, lw->wgate, NULL, F}, {s->up, lw->wup, NULL, F}};
    const uint16_t *gu16[2] = {lb ? lb->gate : NULL, lb ? lb->up : NULL};
    prod_n(s, g, decode, gu, gu16, s->ln, R, C, 2);
    if (nr) jr_swiglu_forward_fast(s->gate + (size_t)r0 * F, s->gate + (size_t)r0 * F, s->up + (size_t)r0 * F, nr, F);
    team_sync(g);
    const rows_mm dn = {s->tmp, lw->wdown, NULL, C};
    const uint16_t *dn16 = lb ? lb->down : NULL;
    prod_n(s, g, decode, &dn, &dn16, s->gate, R, F, 1);
    if (nr) jr_add_inplace(x, tmp, (long)nr * C);
}

/* forward_rows as thread g->t of g->n. */
static void forward_team(kv *s, const team *g, int R, const int *out_rows, int n_out, float *logits, int decode) {
    int C = s->C, r0 = R * g->t / g->n, nr = R * (g->t + 1) / g->n - r0;
    if (nr) jr_embedding_forward(s->x + (size_t)r0 * C, s->ids + r0, s->m->w.embed, nr, C);
    for (int l = 0; l < s->L; l++) layer_rows(s, g, l, R, decode);
    /* Final norm and lm_head only for the rows whose logits are wanted. */
    if (n_out <= 0) return;
    team_sync(g);
    int i0 = n_out * g->t / g->n, ni = n_out * (g->t + 1) / g->n - i0;
    for (int i = i0; i < i0 + ni; i++) memcpy(s->tmp + (size_t)i * C, s->x + (size_t)out_rows[i] * C, (size_t)C * sizeof(float));
    if (ni) jr_rmsnorm_forward(s->ln + (size_t)i0 * C, s->rstd + i0, s->tmp + (size_t)i0 * C, s->m->w.final_norm, ni, C, s->eps);
    team_sync(g);
    const rows_mm head = {logits, s->m->w.lm_head, NULL, s->V};
    const uint16_t *hb = s->head_b;
    prod_n(s, g, decode, &head, &hb, s->ln, n_out, C, 1);
}

/* Runs R rows (row r: token ids[r] of slot slot_of[r] at position pos[r]) through the model,
 * writing their keys and values into the cache; rows of one slot must come in position order.
 * Writes logits (V per row) for the rows listed in out_rows (n_out of them) into logits. With fp32
 * weights (the rows kernel) one thread team runs the whole pass, meeting at barriers instead of a fork
 * and join per product, and the row-wise steps between the products (norms, rope, cache writes, residual
 * adds, SwiGLU) run on each thread's slice of the rows instead of the main thread's alone; every sum as
 * before (bitwise). */
static void forward_rows(kv *s, int R, const int *out_rows, int n_out, float *logits, int decode) {
#if ROWS_PREFILL
    int nt = omp_get_max_threads();
    /* the team only where the layer's products would get one each (ROWS_TEAM_MIN_WORK): a tiny model's pass
     * stays on one thread, as its products did, instead of paying 9 barriers a layer */
    if (!s->lb && nt > 1 && !omp_in_parallel() && (long)R * s->C * s->F >= ROWS_TEAM_MIN_WORK) {
        task_range r[ROWS_MAX_THREADS];
        if (nt > ROWS_MAX_THREADS) nt = ROWS_MAX_THREADS;
        for (int i = 0; i < nt; i++) r[i].v = 0; /* every range empty: a thread taking from one not yet set finds nothing */
#pragma omp parallel num_threads(nt)
        {
            team g = {omp_get_thread_num(), omp_get_num_threads(), r};
            forward_team(s, &g, R, out_rows, n_out, logits, decode);
        }
        return;
    }
#endif
    team g = {0, 1, NULL};
    forward_team(s, &g, R, out_rows, n_out, logits, decode);
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
    int r = 0, n_out = 0, done = 0, decode = k > 0 && total == k; /* decode: one row per item */
    for (int i = 0; i < k; i++)
        for (int t = 0; t < n[i]; t++) {
            s->ids[r] = toks[i][t];
            s->pos[r] = start[i] + t;
            s->slot_of[r] = slots[i];
            if (t == n[i] - 1) outs[n_out++] = r;
            if (++r == R || (i == k - 1 && t == n[i] - 1)) {
                forward_rows(s, r, outs, n_out, logits + (size_t)done * s->V, decode);
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
    forward_rows(s, n, rows, n, logits, 1);
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
    /* bf16 weights: one batch-invariant kernel for every row (exact; oneDNN when not deterministic);
     * fp32: the fixed-order kernel for every row with AVX-512, else sgemm for prefill (its rounding may
     * depend on the rows beside it) and the fixed-order kernel for decode, so batched only when not
     * deterministic */
    lm->batch_prefill = ROWS_PREFILL || o->weights == JR_COMPUTE_BF16 || !o->deterministic;
    return JR_OK;
}

void jr_kv_lm_close(jr_lm *lm) {
    kv_free(lm->impl);
    memset(lm, 0, sizeof *lm);
}
