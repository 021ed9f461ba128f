/* rows_block.h - the register blocking shared by the batch-invariant rows kernels (jr_matmul_rows_bf16
 * and the fp32 decode/prefill kernel of src/nn/k_rows_f32.c)
 *
 * JR_ROWS_GROUPS(BLK, T, w, N, C, OC, o, o1, KC, acc, PFD) runs the outputs [o, o1 - (o1 - o) % 8) in groups
 * of 8 weight rows (w: T elements, C per row): 4 x 4 blocks over the N rows, then the rows left over as
 * one 3 x 4 pair, 2 x 8 or 1 x 8 block, calling BLK(n, o, NR, NC, pf, pfn, k0, k1, ab) for the block of
 * rows n.. and outputs o.. (NR, NC constants) over inputs [k0, k1). With more than one row the kernel
 * computes long enough per weight byte for the hardware prefetcher to fall behind, so the blocks of a
 * group prefetch the 8 weight rows PFD rows on (16: the group after the next one, bf16 and the fp32
 * kernel's prefill; 8: the next, the fp32 kernel at 2-8 rows; one contiguous run of 8 * C elements), each
 * block its own share: pfn 64-byte lines from pf (or pf NULL), spread over its steps. With the weights
 * in huge pages (jr_malloc_weights) a 32-row product over the 100m shapes took 16.0-16.5 ms against
 * 18.2 for a burst of the next group at the group's start (one thread); the next group spread instead
 * was slower than the burst. At one row, memory-bound, the extra requests only slowed the stream.
 * When C is over KC, a group's 8 weight rows no longer stay in L1 while every 4-row block reads them
 * (0.5b's down projection, C = 4864: 78 KB in bf16), so C is cut in chunks of KC: each block of a
 * chunk starts from its 16-lane partial sums in ab (acc + its place; NULL when C is not cut) and leaves
 * them there, the last chunk sums them up; rows go in passes of JR_ROWS_NCH so that acc (JR_ROWS_ACC
 * floats) holds a pass's partial sums. The blocking never changes a sum's order: that is the kernel's
 * (BLK's), lane by lane along k, whatever the block or the chunk. */
#ifndef JR_NN_ROWS_BLOCK_H
#define JR_NN_ROWS_BLOCK_H

#include <stddef.h>

/* Blocks per group of 8 outputs at N rows (as JR_ROWS_GROUPS calls them, per k chunk). */
static inline int jr_rows_blocks_per_group(int N) { return 2 * (N / 4) + (N % 4 == 3 ? 2 : N % 4 ? 1 : 0); }

/* Batch-1 decode, one row against 1 x 1 blocks (one sequential stream of weights, memory-bound): each
 * weight row prefetches as many lines, JR_ROWS_N1_PFD bytes further on, within the matrix (w: OC rows of
 * row_bytes). Over the 100m shapes (bf16, one thread) a pass took 3.5-3.7 ms against 4.0-4.4 without
 * (3 KB ahead: no gain, 6-16 KB: the same within the noise), 0.5b 18.1-18.8 against 19.7-20.7; fp32
 * 7.9-8.0 against 8.3-8.6 (100m), 38.4 against 39.6-40.0 (0.5b). The hardware prefetcher alone left
 * the stream at ~85% of a plain sequential read in bf16. */
#define JR_ROWS_N1_PFD 8192
static inline const char *jr_rows_n1_pf(const void *w, size_t row_bytes, int o, int OC, int *pfn) {
    size_t at = (size_t)o * row_bytes + JR_ROWS_N1_PFD, end = (size_t)OC * row_bytes, n = (row_bytes + 63) / 64;
    if (at >= end) { *pfn = 0; return NULL; }
    size_t left = (end - at + 63) / 64;
    *pfn = (int)(n < left ? n : left);
    return (const char *)w + at;
}

/* Rows per pass of a group whose k is cut in chunks: the partial sums of that many rows x 8 outputs x 16
 * lanes (JR_ROWS_ACC floats) wait in the kernel's buffer between chunks. */
#define JR_ROWS_NCH 64
#define JR_ROWS_ACC (JR_ROWS_NCH * 8 * 16)

/* One block of a group with its share of the prefetch (at most share_ of the left_ lines from pf_), then
 * pf_ past that share (NULL once the group after the next is covered). */
#define JR_ROWS_BLK_PF_(BLK, n, oo, NR, NC)                                                              \
    do {                                                                                                  \
        BLK(n, oo, NR, NC, pf_, pf_ ? (int)(share_ < left_ ? share_ : left_) : 0, k0_, k1_,             \
            nk_ > 1 ? accb_ + (((n) - r0_) * 8 + ((oo) - og_)) * 16 : NULL);                              \
        if (pf_) pf_ += 64 * share_, left_ -= share_, pf_ = left_ > 0 ? pf_ : NULL;                     \
    } while (0)

/* KC: the k chunk (a multiple of the kernel's step) when C is longer; acc_: JR_ROWS_ACC floats. */
#define JR_ROWS_GROUPS(BLK, T, w, N, C, OC, o, o1, KC, acc_, PFD)                                              \
    {                                                                                                     \
        int kc_ = (C) > (KC) ? (KC) : (C), nk_ = ((C) + kc_ - 1) / kc_;                                   \
        int nbg_ = jr_rows_blocks_per_group(N) * nk_;                                                     \
        float *const accb_ = (acc_);                                                                      \
        long lines_ = ((long)8 * (C) * (long)sizeof(T) + 63) / 64, share_ = (lines_ + nbg_ - 1) / nbg_;   \
        for (; (o) + 8 <= (o1); (o) += 8) {                                                               \
            const char *pf_ = (N) > 1 && (o) + (PFD) + 8 <= (OC) ? (const char *)((w) + (size_t)((o) + (PFD)) * (C)) : NULL; \
            long left_ = lines_;                                                                          \
            const int og_ = (o);                                                                          \
            for (int r0_ = 0; r0_ < (N); r0_ += nk_ > 1 ? JR_ROWS_NCH : (N)) {                            \
                int r1_ = nk_ > 1 && r0_ + JR_ROWS_NCH < (N) ? r0_ + JR_ROWS_NCH : (N);                   \
                for (int k0_ = 0; k0_ < (C); k0_ += kc_) {                                                \
                    int k1_ = k0_ + kc_ < (C) ? k0_ + kc_ : (C), n_ = r0_;                                \
                    for (; n_ + 4 <= r1_; n_ += 4) {                                                      \
                        JR_ROWS_BLK_PF_(BLK, n_, (o), 4, 4);                                              \
                        JR_ROWS_BLK_PF_(BLK, n_, (o) + 4, 4, 4);                                          \
                    }                                                                                     \
                    if (r1_ - n_ == 3) {                                                                  \
                        JR_ROWS_BLK_PF_(BLK, n_, (o), 3, 4);                                              \
                        JR_ROWS_BLK_PF_(BLK, n_, (o) + 4, 3, 4);                                          \
                    } else if (r1_ - n_ == 2)                                                             \
                        JR_ROWS_BLK_PF_(BLK, n_, (o), 2, 8);                                              \
                    else if (r1_ - n_ == 1)                                                               \
                        JR_ROWS_BLK_PF_(BLK, n_, (o), 1, 8);                                              \
                }                                                                                         \
            }                                                                                             \
        }                                                                                                 \
    }

#if defined(__x86_64__) && defined(__GNUC__) && (__GNUC__ >= 10 || defined(__clang__))
#include <immintrin.h>
#define JR_ROWS_AVX512 __attribute__((target("avx512f"), always_inline)) static inline

/* The 16 sums of a 4 x 4 block at once, 15 shuffle+add pairs instead of 16 reductions of 7 (those
 * were a tenth of a 32-row prefill's kernel time): A[4j + i] the accumulator of row n + i, output
 * o + j (i < NR, 3 or 4 rows; a missing row is zeros, never stored; a fresh array: passing the
 * kernel's own accumulators by address kept them in memory, 15% slower), each summed lanes l + l+8,
 * then + l+4, then as the kernel's one-output reduction: fp32_order (fold() of k_vec8.h)
 * (0 + 1) + (2 + 3), else (_mm512_reduce_add_ps's) (0 + 2) + (1 + 3). Plus bias[o + j] (or + 0, as
 * the one-output path). */
JR_ROWS_AVX512 void jr_rows_sum4x4(float *out, const __m512 *A, int NR, const float *bias, int n, int o, int OC,
                                   int fp32_order) {
    __m512 b[8], c[4], d[2];
    _Pragma("GCC unroll 8") for (int m = 0; m < 8; m++) /* x[l] + x[l+8]: A[2m] in the low 256 bits, A[2m+1] in the high */
        b[m] = _mm512_add_ps(_mm512_shuffle_f32x4(A[2 * m], A[2 * m + 1], 0x44), _mm512_shuffle_f32x4(A[2 * m], A[2 * m + 1], 0xEE));
    _Pragma("GCC unroll 4") for (int p = 0; p < 4; p++) /* + l+4: 128-bit lane q = A[4p + q] */
        c[p] = _mm512_add_ps(_mm512_shuffle_f32x4(b[2 * p], b[2 * p + 1], 0x88), _mm512_shuffle_f32x4(b[2 * p], b[2 * p + 1], 0xDD));
    _Pragma("GCC unroll 2") for (int r = 0; r < 2; r++)
        d[r] = fp32_order ? _mm512_add_ps(_mm512_shuffle_ps(c[2 * r], c[2 * r + 1], 0x88), _mm512_shuffle_ps(c[2 * r], c[2 * r + 1], 0xDD))
                          : _mm512_add_ps(_mm512_shuffle_ps(c[2 * r], c[2 * r + 1], 0x44), _mm512_shuffle_ps(c[2 * r], c[2 * r + 1], 0xEE));
    __m512 s = _mm512_add_ps(_mm512_shuffle_ps(d[0], d[1], 0x88), _mm512_shuffle_ps(d[0], d[1], 0xDD)); /* lane 4i + j */
    s = _mm512_add_ps(s, bias ? _mm512_broadcast_f32x4(_mm_loadu_ps(bias + o)) : _mm512_setzero_ps());
    float *q = out + (size_t)n * OC + o; /* 128-bit lane i: row i (immediates: -O1 does not unroll a loop) */
    _mm_storeu_ps(q, _mm512_castps512_ps128(s));
    _mm_storeu_ps(q + OC, _mm512_extractf32x4_ps(s, 1));
    _mm_storeu_ps(q + 2 * (size_t)OC, _mm512_extractf32x4_ps(s, 2));
    if (NR > 3) _mm_storeu_ps(q + 3 * (size_t)OC, _mm512_extractf32x4_ps(s, 3));
}
#endif

#endif
