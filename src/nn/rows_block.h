/* rows_block.h - the register blocking shared by the batch-invariant rows kernels (jr_matmul_rows_bf16
 * and the fp32 decode/prefill kernel of src/model/kvcache.c)
 *
 * JR_ROWS_GROUPS(BLK, T, w, N, C, OC, o, o1) runs the outputs [o, o1 - (o1 - o) % 8) in groups of 8
 * weight rows (w: T elements, C per row): 4 x 4 blocks over the N rows, then the rows left over as one
 * 3 x 4 pair, 2 x 8 or 1 x 8 block, calling BLK(n, o, NR, NC, pf) for the block of rows n.. and
 * outputs o.. (NR, NC constants). With more than one row the kernel computes long enough per weight
 * byte for the hardware prefetcher to fall behind, so the first blocks of a group prefetch the next
 * group's 8 rows (pf: the NC rows to prefetch, or NULL; at one row, memory-bound, the extra requests
 * only slowed the stream). The blocking never changes a sum's order: that is the kernel's (BLK's). */
#ifndef JR_NN_ROWS_BLOCK_H
#define JR_NN_ROWS_BLOCK_H

#include <stddef.h>

#define JR_ROWS_GROUPS(BLK, T, w, N, C, OC, o, o1)                                                          \
    for (; (o) + 8 <= (o1); (o) += 8) {                                                                   \
        const T *pf_ = (N) > 1 && (o) + 16 <= (OC) ? (w) + (size_t)((o) + 8) * (C) : NULL;               \
        const T *pf4_ = pf_ ? pf_ + (size_t)4 * (C) : NULL;                                               \
        int n_ = 0;                                                                                       \
        for (; n_ + 4 <= (N); n_ += 4, pf_ = pf4_ = NULL) {                                               \
            BLK(n_, (o), 4, 4, pf_);                                                                      \
            BLK(n_, (o) + 4, 4, 4, pf4_);                                                                 \
        }                                                                                                 \
        if ((N) - n_ == 3) {                                                                              \
            BLK(n_, (o), 3, 4, pf_);                                                                      \
            BLK(n_, (o) + 4, 3, 4, pf4_);                                                                 \
        } else if ((N) - n_ == 2)                                                                         \
            BLK(n_, (o), 2, 8, pf_);                                                                      \
        else if ((N) - n_ == 1)                                                                           \
            BLK(n_, (o), 1, 8, pf_);                                                                      \
    }

#endif
