/* expf_glibc.h - glibc's expf, bitwise, 8 lanes at a time (AVX-512 levels; the scalar expf elsewhere): the
 * sampler's softmax over the vocabulary and the KV-cache attention's. Included by kernels of a level
 * (k_*.c); other code calls jr_expf_shifted (nn.h), the chosen level's. */
#ifndef JR_NN_EXPF_GLIBC_H
#define JR_NN_EXPF_GLIBC_H

#include <math.h>
#include <stdint.h>

#if defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>
#define JR_EXPF8 1
/* glibc's expf (sysdeps/ieee754/flt-32/e_expf.c, 2.36, as its FMA variant __expf_fma compiles: the
 * fused steps below are its instructions) on 8 floats: x = k/32 ln2 + r, 2^(k/32) from a table,
 * a cubic in r, all in double, rounded once to float. Lanes past glibc's fast range take its special
 * values: NaN stays NaN, x > 88.72 gives inf, x < -103.97 (and -inf) 0, x < -103.28 the least subnormal
 * (its __math_may_uflowf); between those bounds and +-88 its general steps, as here. */
static const uint64_t jr_exp2f_tab[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51, 0x3fef72b83c7d517b,
    0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1, 0x3fef06fe0a31b715, 0x3feef1a7373aa9cb,
    0x3feedea64c123422, 0x3feece086061892d, 0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429,
    0x3feea47eb03a5585, 0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d, 0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069, 0x3fef5818dcfba487, 0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da, 0x3fefd0765b6e4540};

static inline __m512d jr_dbits(uint64_t u) { return _mm512_castsi512_pd(_mm512_set1_epi64((long long)u)); }

static inline __m256 jr_expf8(__m256 x) {
    const __m512d invln2n = jr_dbits(0x40471547652b82fe), shift = jr_dbits(0x4338000000000000);
    __m512d xd = _mm512_cvtps_pd(x);
    __m512d kds = _mm512_fmadd_pd(invln2n, xd, shift); /* k + shift, k = round(x * 32 / ln2) */
    __m512i ki = _mm512_castpd_si512(kds);
    __m512d kd = _mm512_sub_pd(kds, shift);
    __m512d r = _mm512_fmsub_pd(invln2n, xd, kd);
    __m512i t = _mm512_i64gather_epi64(_mm512_and_si512(ki, _mm512_set1_epi64(31)), (const void *)jr_exp2f_tab, 8);
    __m512d s = _mm512_castsi512_pd(_mm512_add_epi64(t, _mm512_slli_epi64(ki, 47)));
    __m512d z = _mm512_fmadd_pd(jr_dbits(0x3ebc6af84b912394), r, jr_dbits(0x3f2ebfce50fac4f3));
    __m512d r2 = _mm512_mul_pd(r, r);
    __m512d y = _mm512_fmadd_pd(r, jr_dbits(0x3f962e42ff0c52d6), _mm512_set1_pd(1.0));
    y = _mm512_mul_pd(_mm512_fmadd_pd(z, r2, y), s);
    __m256 f = _mm512_cvtpd_ps(y);
    f = _mm256_mask_blend_ps(_mm256_cmp_ps_mask(x, _mm256_set1_ps(-0x1.9d1d9ep6f), _CMP_LT_OQ), f, _mm256_set1_ps(0x1p-149f));
    f = _mm256_mask_blend_ps(_mm256_cmp_ps_mask(x, _mm256_set1_ps(-0x1.9fe368p6f), _CMP_LT_OQ), f, _mm256_setzero_ps());
    f = _mm256_mask_blend_ps(_mm256_cmp_ps_mask(x, _mm256_set1_ps(0x1.62e42ep6f), _CMP_GT_OQ), f, _mm256_set1_ps(INFINITY));
    return _mm256_mask_blend_ps(_mm256_cmp_ps_mask(x, x, _CMP_UNORD_Q), f, _mm256_add_ps(x, x));
}

#endif

/* z[i] = expf((z[i] - m) * s) for i < n, bitwise the scalar loop. */
static inline void jr_expf_shifted_inl(float *z, int n, float m, float s) {
    int i = 0;
#ifdef JR_EXPF8
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(z + i, jr_expf8(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(z + i), _mm256_set1_ps(m)), _mm256_set1_ps(s))));
#endif
    for (; i < n; i++) z[i] = expf((z[i] - m) * s);
}

#endif
