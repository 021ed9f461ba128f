/* matmul_rows_bf16.c - inference matmul over bf16 weights: out = bf16(inp) . w^T, each output summed in
 * one fixed order whatever the batch (a row's result never depends on the rows beside it)
 *
 * Generation streams every weight once per decode step, so keeping weights in bf16 halves the bytes
 * per step. Two kernels, chosen at run time from cpuid:
 *  - AVX512-BF16: vdpbf16ps over 32 bf16 pairs per instruction into 16 fp32 lanes, a register block of
 *    4 rows x 4 outputs (weight rows reused across the rows while in L1; 1 row x 8 outputs for the
 *    rows left over; a single row, batch-1 decode, 1 x 1: one sequential stream), the C tail through
 *    masked loads, the 16 lanes summed in _mm512_reduce_add_ps's order (a 4 x 4 block's 16 sums in
 *    one transposed reduction, reduce16);
 *  - fallback (no AVX512-BF16): the same bf16 operands widened to fp32, summed in the same 16-lane
 *    layout in plain C.
 * Every output element runs the same instruction sequence whatever block it falls in, so the result
 * is batch-invariant (the seeded-request guarantee of generate.h) for either kernel. The two kernels
 * may differ from each other by fp32 rounding (vdpbf16ps adds pair products before accumulating). */
#include <cpuid.h>
#include <stdint.h>
#include <string.h>

#include "judgerl/nn.h"
#include "nn/rows_block.h"

#if defined(__AVX512F__) && defined(__GNUC__)
#include <immintrin.h>
/* The scalar bf16_of (below) on 16 floats at a time (the tail masked): the same integer steps, so the same
 * bits. The scalar loop took 5.5% of a 32-token 0.5b prefill (the input rows of every product). */
static void bf16_run(uint16_t *dst, const float *src, long n) {
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
/* One float's bf16 bits: nearest even, a NaN kept quiet. */
static inline uint16_t bf16_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1);                                          /* nearest even */
    return (uint16_t)(u >> 16);
}

static void bf16_run(uint16_t *dst, const float *src, long n) {
    for (long i = 0; i < n; i++) dst[i] = bf16_of(src[i]);
}
#endif

void jr_bf16_from_f32(uint16_t *dst, const float *src, long n) {
    if (n <= JR_PAR_MIN) { bf16_run(dst, src, n); return; }
    long nb = (n + 16383) / 16384;
#pragma omp parallel for schedule(static)
    for (long b = 0; b < nb; b++) bf16_run(dst + b * 16384, src + b * 16384, b + 1 < nb ? 16384 : n - b * 16384);
}

static inline float widen(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int has_avx512_bf16(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    int f = (b >> 16) & 1, bw = (b >> 30) & 1;
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return 0;
    return f && bw && ((a >> 5) & 1);
}

static int force_fallback = -1; /* -1: not decided yet */

void jr_matmul_rows_bf16_force_fallback(int on) { force_fallback = on ? 1 : 0; }

const char *jr_matmul_rows_bf16_kernel(void) {
    return force_fallback != 1 && has_avx512_bf16() ? "avx512_bf16" : "fp32_fallback";
}

#if defined(__x86_64__) && defined(__GNUC__) && (__GNUC__ >= 10 || defined(__clang__))
#include <immintrin.h>
#define HAVE_AVX512BF16_KERNEL 1
#define TGT __attribute__((target("avx512f,avx512bw,avx512bf16")))
#define UNROLL _Pragma("GCC unroll 8")

/* A block of NR rows x NC outputs (NR <= 4, NC <= 8, NR * NC <= 16): NR, NC are compile-time constants at every call (always_inline),
 * so the accumulators stay in registers. pf (or NULL): pfn lines to prefetch (rows_block.h), spread
 * over the steps. k in [k0, k1): with ab (a k chunk of a longer C, rows_block.h) the 16-lane sums start
 * from ab's (unless k0 is 0) and go back there until k1 is C; the lanes add in the same order either way. */
TGT static inline __attribute__((always_inline)) void blk_avx(float *out, const uint16_t *a, const uint16_t *w,
                                                              const float *bias, int C, int OC, int n, int o, int NR,
                                                              int NC, const char *pf, int pfn, int k0, int k1, float *ab) {
    __m512 acc[4][8];
    UNROLL for (int i = 0; i < NR; i++)
        UNROLL for (int j = 0; j < NC; j++) acc[i][j] = ab && k0 ? _mm512_loadu_ps(ab + (i * 8 + j) * 16) : _mm512_setzero_ps();
    const char *pfe = pf + 64 * (size_t)pfn;
    int pps = pf ? (pfn + (k1 - k0 + 31) / 32 - 1) / ((k1 - k0 + 31) / 32) : 0; /* lines per step */
    int k = k0;
    for (; k + 32 <= k1; k += 32) {
        __m512i wv[8], av[4];
        for (int l = 0; l < pps && pf < pfe; l++, pf += 64) _mm_prefetch(pf, _MM_HINT_T0);
        UNROLL for (int j = 0; j < NC; j++) wv[j] = _mm512_loadu_si512((const void *)(w + (size_t)(o + j) * C + k));
        UNROLL for (int i = 0; i < NR; i++) av[i] = _mm512_loadu_si512((const void *)(a + (size_t)(n + i) * C + k));
        if (NR * NC > 8) /* each operand loaded once, into a register (GCC otherwise reloaded some) */
            UNROLL for (int i = 0; i < NR; i++) {
                __asm__("" : "+v"(av[i]));
                if (i < NC) __asm__("" : "+v"(wv[i]));
            }
        UNROLL for (int i = 0; i < NR; i++)
            UNROLL for (int j = 0; j < NC; j++) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], (__m512bh)av[i], (__m512bh)wv[j]);
    }
    if (k1 < C) { /* a chunk before the last: the sums wait in ab */
        UNROLL for (int i = 0; i < NR; i++)
            UNROLL for (int j = 0; j < NC; j++) _mm512_storeu_ps(ab + (i * 8 + j) * 16, acc[i][j]);
        return;
    }
    if (k < C) {
        __mmask32 m = (__mmask32)((1ull << (C - k)) - 1);
        __m512i wv[8], av[4];
        UNROLL for (int j = 0; j < NC; j++) wv[j] = _mm512_maskz_loadu_epi16(m, w + (size_t)(o + j) * C + k);
        UNROLL for (int i = 0; i < NR; i++) av[i] = _mm512_maskz_loadu_epi16(m, a + (size_t)(n + i) * C + k);
        UNROLL for (int i = 0; i < NR; i++)
            UNROLL for (int j = 0; j < NC; j++) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], (__m512bh)av[i], (__m512bh)wv[j]);
    }
    if (NC == 4 && NR >= 3) { /* 4 x 4 and 3 x 4 (row 3 zeros, never stored): the 16 sums at once */
        __m512 A[16];
        UNROLL for (int j = 0; j < 4; j++)
            UNROLL for (int i = 0; i < 4; i++) A[4 * j + i] = i < NR ? acc[i][j] : _mm512_setzero_ps();
        jr_rows_sum4x4(out, A, NR, bias, n, o, OC, 0);
        return;
    }
    UNROLL for (int i = 0; i < NR; i++)
        UNROLL for (int j = 0; j < NC; j++)
            out[(size_t)(n + i) * OC + o + j] = _mm512_reduce_add_ps(acc[i][j]) + (bias ? bias[o + j] : 0.0f);
}

/* The k chunk of a longer C: the 0.5b down projection (C = 4864) has 78 KB in a group's 8 weight rows,
 * more than L1 holds, so every 4-row block read them from L2 again: 235 GFLOP/s at 32 rows against 410
 * for gate and up (C = 896), one thread; in chunks of 1024, 325 (512: 298, 1536: 287; the prefetch
 * into L2 instead of L1 was slower at every chunk). At 2-8 rows (decode, streaming-bound) chunks of 128
 * were faster over the 0.5b shapes: 4 rows 25.0 -> 20.5 ms a pass, 8 rows 23.8 -> 22.8 (16 rows: 36.7
 * -> 45.1, so not there). */
#define JR_BF16_KC(N) ((N) <= 8 ? 128 : 1024)

/* Outputs [o0, o1) for all N rows: one row 1 x 1; more, groups of 8 weight rows as rows_block.h says
 * (with the prefetch a batch-8 step ran 1.75x faster, batch 32 1.2x), then the outputs left over in 4s
 * and 1s. */
TGT static void range_avx(float *out, const uint16_t *a, const uint16_t *w, const float *bias, int N, int C, int OC,
                          int o0, int o1) {
    int o = o0;
    if (N == 1) { /* one weight row after the other, one sequential stream (as the fp32 kernel): with the weights
                   * in huge pages a batch-1 decode step took 0.85x the time of 8 rows at once (1 x 8); each row
                   * prefetches 8 KB ahead (rows_block.h) */
        for (; o < o1; o++) {
            int pfn;
            const char *pf = jr_rows_n1_pf(w, (size_t)C * sizeof *w, o, OC, &pfn);
            blk_avx(out, a, w, bias, C, OC, 0, o, 1, 1, pf, pfn, 0, C, NULL);
        }
        return;
    }
    float acc[JR_ROWS_ACC];
#define BLK(n, oo, NR, NC, pf, pfn, k0, k1, ab) blk_avx(out, a, w, bias, C, OC, n, oo, NR, NC, pf, pfn, k0, k1, ab)
    JR_ROWS_GROUPS(BLK, uint16_t, w, N, C, OC, o, o1, JR_BF16_KC(N), acc, 16)
#undef BLK
    for (; o + 4 <= o1; o += 4) {
        int n = 0;
        for (; n + 4 <= N; n += 4) blk_avx(out, a, w, bias, C, OC, n, o, 4, 4, NULL, 0, 0, C, NULL);
        for (; n < N; n++) blk_avx(out, a, w, bias, C, OC, n, o, 1, 4, NULL, 0, 0, C, NULL);
    }
    for (; o < o1; o++) {
        int n = 0;
        for (; n + 4 <= N; n += 4) blk_avx(out, a, w, bias, C, OC, n, o, 4, 1, NULL, 0, 0, C, NULL);
        for (; n < N; n++) blk_avx(out, a, w, bias, C, OC, n, o, 1, 1, NULL, 0, 0, C, NULL);
    }
}
#endif

/* The fallback: the same 16 lanes of pair products, widened to fp32. */
static float dot_fallback(const uint16_t *a, const uint16_t *w, int C) {
    float acc[16] = {0};
    int k = 0;
    for (; k + 32 <= C; k += 32)
        for (int l = 0; l < 16; l++)
            acc[l] += widen(a[k + 2 * l]) * widen(w[k + 2 * l]) + widen(a[k + 2 * l + 1]) * widen(w[k + 2 * l + 1]);
    for (int l = 0; k + 2 * l < C; l++) {
        float p = widen(a[k + 2 * l]) * widen(w[k + 2 * l]);
        if (k + 2 * l + 1 < C) p += widen(a[k + 2 * l + 1]) * widen(w[k + 2 * l + 1]);
        acc[l] += p;
    }
    float s = 0;
    for (int h = 8; h >= 1; h /= 2) /* pairwise, lanes l and l + h */
        for (int l = 0; l < h; l++) acc[l] += acc[l + h];
    s = acc[0];
    return s;
}

static void range_fallback(float *out, const uint16_t *a, const uint16_t *w, const float *bias, int N, int C, int OC,
                           int o0, int o1) {
    for (int o = o0; o < o1; o++)
        for (int n = 0; n < N; n++)
            out[(size_t)n * OC + o] = dot_fallback(a + (size_t)n * C, w + (size_t)o * C, C) + (bias ? bias[o] : 0.0f);
}

void jr_matmul_rows_bf16(float *out, const float *inp, const uint16_t *w, const float *bias, int N, int C, int OC,
                         uint16_t *scratch) {
    if (N <= 0 || OC <= 0) return;
    jr_bf16_from_f32(scratch, inp, (long)N * C);
    if (force_fallback < 0) force_fallback = 0;
    int avx = 0;
#ifdef HAVE_AVX512BF16_KERNEL
    static int cpu = -1;
    if (cpu < 0) cpu = has_avx512_bf16();
    avx = cpu && force_fallback != 1;
#endif
    /* Blocks of 16 outputs per task: enough rows of weights per thread to stream, few barriers. */
    int nb = (OC + 15) / 16;
    long work = (long)OC * C * N;
#pragma omp parallel for schedule(static) if (work >= 262144)
    for (int b = 0; b < nb; b++) {
        int o0 = b * 16, o1 = o0 + 16 < OC ? o0 + 16 : OC;
#ifdef HAVE_AVX512BF16_KERNEL
        if (avx) { range_avx(out, scratch, w, bias, N, C, OC, o0, o1); continue; }
#endif
        range_fallback(out, scratch, w, bias, N, C, OC, o0, o1);
    }
    (void)avx;
}
