/* kvcache.h - transformer inference with a KV cache: prefill a prompt, copy a slot, decode one token per slot */
#ifndef JUDGERL_KVCACHE_H
#define JUDGERL_KVCACHE_H

#include <stddef.h>

#include "judgerl/lm.h"
#include "judgerl/model.h"

/* Opens a jr_lm over model m (borrowed, must outlive the lm) with a KV cache of n_slots sequences
 * of up to max_ctx positions each (fp32, 2 * layers * kv_heads * head_dim floats per position).
 * Decoding up to n_slots rows at once reuses the engine's kernels (matmul, RMSNorm, RoPE, SwiGLU);
 * attention reads the cache. Each row's result is independent of the other rows in the batch.
 * On error *lm is zeroed. */
jr_status jr_kv_lm_open(jr_lm *lm, const jr_model *m, int n_slots, int max_ctx);
void jr_kv_lm_close(jr_lm *lm);

/* How the cache computes (jr_kv_lm_open uses jr_kv_opts_default: fp32 weights and cache). */
typedef struct jr_kv_opts {
    jr_compute weights; /* JR_COMPUTE_BF16: every matmul weight (q, k, v, o, gate, up, down, lm_head) kept
                         * as a bf16 copy (2 bytes per parameter streamed per decode step instead of 4),
                         * products by jr_matmul_rows_bf16 (AVX512-BF16, fp32 fallback elsewhere). The
                         * copy is taken at open: after the model's weights change, jr_kv_lm_sync. */
    int kv_bf16;        /* 1: keys and values stored in bf16 (half the cache; attention in fp32) */
    int deterministic;  /* 1 (default): a row's result never depends on the rows beside it: with bf16
                         * weights prompts are still batched and chunked (one exact kernel for all rows),
                         * with fp32 weights too where the CPU has AVX-512 (one fixed-order kernel for
                         * all rows), else each prompt is prefilled alone (sgemm).
                         * 0: bf16 products of 64 rows or more through oneDNN, and without AVX-512 fp32
                         * prompts batched through sgemm (faster prefill; their rounding depends on the
                         * rows beside, so a seeded request's tokens may change with what else is
                         * running) */
} jr_kv_opts;
jr_kv_opts jr_kv_opts_default(void);
jr_status jr_kv_lm_open_opts(jr_lm *lm, const jr_model *m, int n_slots, int max_ctx, const jr_kv_opts *o);
/* Re-reads the model's fp32 weights into the bf16 copy (no-op with fp32 weights). */
jr_status jr_kv_lm_sync(jr_lm *lm);
/* "weights bf16 (avx512_bf16 kernel), KV cache fp32" and the like, for logs. */
const char *jr_kv_lm_describe(const jr_lm *lm, char *buf, size_t n);

#endif
