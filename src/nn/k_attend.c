/* k_attend.c - the KV-cache attention of one query head (generation), compiled once per ISA level
 * (kernels.h): scores in dot_fixed's order, softmax with glibc's expf (bitwise), the weighted sum of the
 * values in position order; a row's result depends on its own cache only */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "nn/expf_glibc.h"
#include "nn/k_vec8.h"
#include "nn/kernels.h"

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

#ifdef JR_K_AVX512
/* 16 cached elements (fp32, or bf16 widened exactly) as one vector. */
static inline __m512 ld16(const char *p, int kb) {
    if (!kb) return _mm512_loadu_ps((const float *)(const void *)p);
    __m512i u = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
}

/* attend for D = 16 * NV (NV <= 8, a constant at each call): a score is dot_fixed's sum (16-lane
 * steps = its two 8-lane accumulators, as the rows kernel), the weighted sum of the values keeps o in
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
    jr_expf_shifted_inl(a, P, mx, 1.0f); /* expf(a[t] - mx), bitwise */
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

void JR_KFN(attend)(const float *qv, const char *kc, const char *vc, float *a, int P, float scale, float *restrict o,
                    int D, size_t stride, int kb) {
#ifdef JR_K_AVX512
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
    jr_expf_shifted_inl(a, P, mx, 1.0f); /* expf(a[t] - mx), bitwise */
    for (int t = 0; t < P; t++) sum += a[t];
    float inv = 1.0f / sum;
    memset(o, 0, (size_t)D * sizeof(float));
    for (int t = 0; t < P; t++) axpy_row(o, a[t] * inv, vc + (size_t)t * stride, kb, D);
}
