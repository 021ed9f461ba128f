/* k_rows_bf16.c - the inference product over bf16 weights (matmul_rows_bf16.c's kernels), compiled once
 * per ISA level (kernels.h): outputs [o0, o1) of out = a . w^T + bias over bf16 operands, each output
 * summed in one fixed order whatever the batch
 *  - AVX512-BF16 (the avx512 level, on a CPU with the instructions): vdpbf16ps over 32 bf16 pairs per
 *    instruction into 16 fp32 lanes, a register block of 4 rows x 4 outputs (weight rows reused across
 *    the rows while in L1; 1 row x 8 outputs for the rows left over; a single row, batch-1 decode, 1 x 1:
 *    one sequential stream), the C tail through masked loads, the 16 lanes summed in
 *    _mm512_reduce_add_ps's order (a 4 x 4 block's 16 sums in one transposed reduction);
 *  - every level: the same bf16 operands widened to fp32, summed in the same 16-lane layout in plain C.
 * Every output element runs the same instruction sequence whatever block it falls in, so the result is
 * batch-invariant for either kernel. The two may differ by fp32 rounding (vdpbf16ps adds pair products
 * before accumulating). */
#include <stdint.h>
#include <string.h>

#include "nn/kernels.h"
#include "nn/rows_block.h"

static inline float widen(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

#if defined(__AVX512F__) && defined(__x86_64__)
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


void JR_KFN(rows_bf16)(float *out, const uint16_t *a, const uint16_t *w, const float *bias, int N, int C, int OC, int o0,
                       int o1, int dpbf16) {
#ifdef HAVE_AVX512BF16_KERNEL
    if (dpbf16) { range_avx(out, a, w, bias, N, C, OC, o0, o1); return; }
#endif
    (void)dpbf16;
    range_fallback(out, a, w, bias, N, C, OC, o0, o1);
}

int JR_KFN(rows_bf16_has_dpbf16)(void) {
#ifdef HAVE_AVX512BF16_KERNEL
    return 1;
#else
    return 0;
#endif
}
