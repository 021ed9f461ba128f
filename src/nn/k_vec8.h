/* k_vec8.h - the 8-lane fp32 vector of the fixed-order sums (k_rows_f32.c, k_attend.c): loads, the fused
 * multiply-add of each level, and the fold that ends a sum */
#ifndef JR_NN_K_VEC8_H
#define JR_NN_K_VEC8_H

#include <stdint.h>
#include <string.h>

typedef float v8 __attribute__((vector_size(32)));

static inline v8 ld8(const float *p) {
    v8 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline float widen(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* acc + a * b: one fused multiply-add per lane where the level has it (x86-64-v3 and up, aarch64), else
 * a multiply then an add (x86-64-v2). Every row of a level goes through the same instructions. */
#if defined(__FMA__)
#include <immintrin.h>
static inline v8 fma8(v8 acc, v8 a, v8 b) { return (v8)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)acc); }
#elif defined(__aarch64__)
#include <arm_neon.h>
static inline v8 fma8(v8 acc, v8 a, v8 b) {
    float32x4_t h[3][2];
    memcpy(h[0], &acc, 32);
    memcpy(h[1], &a, 32);
    memcpy(h[2], &b, 32);
    h[0][0] = vfmaq_f32(h[0][0], h[1][0], h[2][0]);
    h[0][1] = vfmaq_f32(h[0][1], h[1][1], h[2][1]);
    memcpy(&acc, h[0], 32);
    return acc;
}
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

/* dot(a, b) over n floats in a fixed order (two 8-lane accumulators over blocks of 16, then the tail),
 * the same whatever else is computed alongside. */
static inline float dot_fixed(const float *a, const float *b, int n) {
    v8 s0 = {0}, s1 = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = fma8(s0, ld8(a + i), ld8(b + i));
        s1 = fma8(s1, ld8(a + i + 8), ld8(b + i + 8));
    }
    return fold(s0, s1, a, b, i, n);
}

#if defined(__AVX512F__) && defined(__FMA__)
#define JR_K_AVX512 1
#define UNROLL _Pragma("GCC unroll 8")
#endif

#endif
