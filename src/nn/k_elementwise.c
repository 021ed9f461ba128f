/* k_elementwise.c - the element-wise kernels of generation, compiled once per ISA level (kernels.h):
 * exp for softmax (glibc's expf, bitwise), SwiGLU with a fast exp, fp32 -> bf16 rounding */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "nn/expf_glibc.h"
#include "nn/kernels.h"

void JR_KFN(expf_shifted)(float *z, int n, float m, float s) { jr_expf_shifted_inl(z, n, m, s); }

#if defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>
/* e^x on 16 lanes: x = n ln2 + r (Cody-Waite, |r| <= ln2/2), Cephes' degree-7 polynomial for e^r, then
 * 2^n by scalef (over- and underflow to inf and 0 as expf). */
static inline __m512 exp16(__m512 x) {
    x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(89.0f)), _mm512_set1_ps(-104.0f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
}

/* silu(gate) * up, 16 at a time, the tail masked. */
void JR_KFN(swiglu)(float *out, const float *gate, const float *up, long n) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (long i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 g = _mm512_maskz_loadu_ps(m, gate + i), u = _mm512_maskz_loadu_ps(m, up + i);
        __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), g));
        _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(one, e)), u));
    }
}

/* The scalar bf16 rounding (below) on 16 floats at a time (the tail masked): the same integer steps, so
 * the same bits. The scalar loop took 5.5% of a 32-token 0.5b prefill (the input rows of every product). */
void JR_KFN(bf16_round)(uint16_t *dst, const float *src, long n) {
    const __m512i one = _mm512_set1_epi32(1), half = _mm512_set1_epi32(0x7fff), abs = _mm512_set1_epi32(0x7fffffff);
    const __m512i inf = _mm512_set1_epi32(0x7f800000), quiet = _mm512_set1_epi32(0x40);
    for (long i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512i u = _mm512_maskz_loadu_epi32(m, src + i), hi = _mm512_srli_epi32(u, 16);
        __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(half, _mm512_and_si512(hi, one))), 16);
        __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs), inf);
        r = _mm512_mask_or_epi32(r, nan, hi, quiet);
        _mm512_mask_cvtepi32_storeu_epi16(dst + i, m, r);
    }
}
#else
void JR_KFN(swiglu)(float *out, const float *gate, const float *up, long n) {
    for (long i = 0; i < n; i++) out[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

/* One float's bf16 bits: nearest even, a NaN kept quiet (plain integer steps: vectorised at each level). */
void JR_KFN(bf16_round)(uint16_t *dst, const float *src, long n) {
    for (long i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &src[i], 4);
        uint32_t r = (u + 0x7fffu + ((u >> 16) & 1)) >> 16;
        dst[i] = (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40 : r); /* quiet NaN */
    }
}
#endif
