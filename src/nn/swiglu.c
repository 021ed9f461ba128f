/* swiglu.c - SwiGLU gating silu(gate) * up forward/backward */
#include <math.h>

#include "judgerl/nn.h"

// out, gate, up (N,F)
void jr_swiglu_forward(float *out, const float *gate, const float *up, int N, int F) {
    long n = (long)N * F;
#pragma omp parallel for schedule(static) if(n > JR_PAR_MIN)
    for (long i = 0; i < n; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

// dgate, dup, dout, gate, up (N,F)
void jr_swiglu_backward(float *dgate, float *dup, const float *dout, const float *gate, const float *up, int N, int F) {
    long n = (long)N * F;
#pragma omp parallel for schedule(static) if(n > JR_PAR_MIN)
    for (long i = 0; i < n; i++) {
        float g = gate[i], sg = 1.0f / (1.0f + expf(-g));
        if (dgate) dgate[i] += dout[i] * up[i] * sg * (1.0f + g * (1.0f - sg));
        if (dup) dup[i] += dout[i] * g * sg;
    }
}

#if defined(__AVX512F__) && defined(__GNUC__)
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

/* One run of jr_swiglu_forward_fast, 16 at a time, the tail masked. */
static void swiglu_run(float *out, const float *gate, const float *up, long n) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (long i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 g = _mm512_maskz_loadu_ps(m, gate + i), u = _mm512_maskz_loadu_ps(m, up + i);
        __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), g));
        _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(one, e)), u));
    }
}
#else
static void swiglu_run(float *out, const float *gate, const float *up, long n) {
    for (long i = 0; i < n; i++) out[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}
#endif

// out, gate, up (N,F)
void jr_swiglu_forward_fast(float *out, const float *gate, const float *up, int N, int F) {
    long n = (long)N * F;
    if (n <= JR_PAR_MIN) { swiglu_run(out, gate, up, n); return; }
    long nb = (n + 16383) / 16384;
#pragma omp parallel for schedule(static)
    for (long b = 0; b < nb; b++) swiglu_run(out + b * 16384, gate + b * 16384, up + b * 16384, b + 1 < nb ? 16384 : n - b * 16384);
}
