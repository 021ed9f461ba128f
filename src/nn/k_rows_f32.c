/* k_rows_f32.c - the fp32 row product of generation (decode and prefill) and its thread team, compiled once
 * per ISA level (kernels.h): out (N,OC) = inp (N,C) . w (OC,C)^T + bias with every output summed in one
 * fixed order (k_vec8.h's dot_fixed: two 8-lane accumulators over blocks of 16, folded pairwise, the tail in
 * order), whatever the rows beside it, the block it falls in or the thread computing it. AVX-512: 16-lane
 * steps whose halves are dot_fixed's two accumulators, register-blocked (rows_block.h), bitwise the avx2
 * level's sums; avx2 and aarch64: dot_fixed with fused multiply-adds, four rows per weight row; baseline
 * (x86-64-v2): the same order with a multiply then an add. */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nn/k_vec8.h"
#include "nn/kernels.h"
#include "nn/rows_block.h"

#ifdef JR_K_AVX512
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

#else
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

/* Outputs [o0, o1) (a task: 16 weight rows, which stay in cache) for all N rows: four rows at a time against
 * each weight row in turn (dot4_fixed), then the rows left one by one. */
static void range_f32(float *out, const float *inp, const float *w, const float *bias, int N, int C, int OC, int o0,
                      int o1) {
    int n = 0;
    for (; n + 4 <= N; n += 4) {
        const float *a = inp + (size_t)n * C;
        for (int o = o0; o < o1; o++) {
            float b = bias ? bias[o] : 0.0f, r4[4];
            dot4_fixed(a, a + C, a + 2 * (size_t)C, a + 3 * (size_t)C, w + (size_t)o * C, C, r4);
            for (int k = 0; k < 4; k++) out[(size_t)(n + k) * OC + o] = r4[k] + b;
        }
    }
    for (; n < N; n++)
        for (int o = o0; o < o1; o++) out[(size_t)n * OC + o] = dot_fixed(inp + (size_t)n * C, w + (size_t)o * C, C) + (bias ? bias[o] : 0.0f);
}
#endif

/* Task b (16 weight rows of one product) of a rows_f32 call. */
static void rows_task(const jr_rows_mm *p, const float *inp, int N, int C, int b) {
    int i = 0;
    while (b >= (p[i].OC + 15) / 16) b -= (p[i].OC + 15) / 16, i++;
    range_f32(p[i].out, inp, p[i].w, p[i].bias, N, C, p[i].OC, b * 16, b * 16 + 16 < p[i].OC ? b * 16 + 16 : p[i].OC);
}

/* Takes up to want tasks (from the back: one), returns the first and their count in *got, or -1. */
static int take_tasks(jr_task_range *r, int back, int want, int *got) {
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

/* Thread t's part of the np products (rows_f32's tasks) in a team of n with task ranges r: its
 * contiguous share first, 4 tasks (or a quarter of what is left) at a time, then the others' last tasks
 * one by one. fresh: r is not set yet (a barrier after each thread sets its own); else every range of r
 * must be empty (all tasks done, a barrier since), so that a thread reading another's range before its
 * owner sets it finds nothing and leaves the tasks to their owner. */
void JR_KFN(rows_f32_share)(const jr_rows_mm *p, int np, const float *inp, int N, int C, int t, int n, jr_task_range *r, int fresh) {
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
void JR_KFN(rows_f32)(const jr_rows_mm *p, int np, const float *inp, int N, int C) {
    int nb = 0, nt = omp_get_max_threads();
    long work = 0;
    for (int i = 0; i < np; i++) nb += (p[i].OC + 15) / 16, work += (long)p[i].OC * C * N;
    if (nt > JR_ROWS_MAX_THREADS) nt = JR_ROWS_MAX_THREADS;
    if (work < JR_ROWS_TEAM_MIN_WORK || nt < 2 || nb < 2) {
        for (int b = 0; b < nb; b++) rows_task(p, inp, N, C, b);
        return;
    }
    jr_task_range r[JR_ROWS_MAX_THREADS];
#pragma omp parallel num_threads(nt)
    JR_KFN(rows_f32_share)(p, np, inp, N, C, omp_get_thread_num(), omp_get_num_threads(), r, 1);
}

