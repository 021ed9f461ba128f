/* rows_block.h - the register blocking shared by the batch-invariant rows kernels (jr_matmul_rows_bf16
 * and the fp32 decode/prefill kernel of src/model/kvcache.c)
 *
 * JR_ROWS_GROUPS(BLK, T, w, N, C, OC, o, o1) runs the outputs [o, o1 - (o1 - o) % 8) in groups of 8
 * weight rows (w: T elements, C per row): 4 x 4 blocks over the N rows, then the rows left over as one
 * 3 x 4 pair, 2 x 8 or 1 x 8 block, calling BLK(n, o, NR, NC, pf, pfn) for the block of rows n.. and
 * outputs o.. (NR, NC constants). With more than one row the kernel computes long enough per weight
 * byte for the hardware prefetcher to fall behind, so the blocks of a group prefetch the group after
 * the next one (8 rows: one contiguous run of 8 * C elements), each block its own share: pfn 64-byte
 * lines from pf (or pf NULL), spread over its steps. With the weights in huge pages (jr_malloc_weights)
 * a 32-row product over the 100m shapes took 16.0-16.5 ms against 18.2 for a burst of the next group
 * at the group's start (one thread); the next group spread instead was slower than the burst. At one
 * row, memory-bound, the extra requests only slowed the stream. The blocking never changes a sum's
 * order: that is the kernel's (BLK's). */
#ifndef JR_NN_ROWS_BLOCK_H
#define JR_NN_ROWS_BLOCK_H

#include <stddef.h>

/* Blocks per group of 8 outputs at N rows (as JR_ROWS_GROUPS calls them). */
static inline int jr_rows_blocks_per_group(int N) { return 2 * (N / 4) + (N % 4 == 3 ? 2 : N % 4 ? 1 : 0); }

#define JR_ROWS_GROUPS(BLK, T, w, N, C, OC, o, o1)                                                          \
    {                                                                                                     \
        int nbg_ = jr_rows_blocks_per_group(N);                                                           \
        long lines_ = ((long)8 * (C) * (long)sizeof(T) + 63) / 64, share_ = (lines_ + nbg_ - 1) / nbg_;   \
        for (; (o) + 8 <= (o1); (o) += 8) {                                                               \
            const char *pf_ = (N) > 1 && (o) + 24 <= (OC) ? (const char *)((w) + (size_t)((o) + 16) * (C)) : NULL; \
            long left_ = lines_;                                                                          \
            int n_ = 0;                                                                                   \
            for (; n_ + 4 <= (N); n_ += 4) {                                                              \
                BLK(n_, (o), 4, 4, pf_, pf_ ? (int)(share_ < left_ ? share_ : left_) : 0);                \
                if (pf_) pf_ += 64 * share_, left_ -= share_, pf_ = left_ > 0 ? pf_ : NULL;               \
                BLK(n_, (o) + 4, 4, 4, pf_, pf_ ? (int)(share_ < left_ ? share_ : left_) : 0);            \
                if (pf_) pf_ += 64 * share_, left_ -= share_, pf_ = left_ > 0 ? pf_ : NULL;               \
            }                                                                                             \
            if ((N) - n_ == 3) {                                                                          \
                BLK(n_, (o), 3, 4, pf_, pf_ ? (int)(share_ < left_ ? share_ : left_) : 0);                \
                if (pf_) pf_ += 64 * share_, left_ -= share_, pf_ = left_ > 0 ? pf_ : NULL;               \
                BLK(n_, (o) + 4, 3, 4, pf_, pf_ ? (int)(share_ < left_ ? share_ : left_) : 0);            \
            } else if ((N) - n_ == 2)                                                                     \
                BLK(n_, (o), 2, 8, pf_, pf_ ? (int)left_ : 0);                                            \
            else if ((N) - n_ == 1)                                                                       \
                BLK(n_, (o), 1, 8, pf_, pf_ ? (int)left_ : 0);                                            \
        }                                                                                                 \
    }

#endif
