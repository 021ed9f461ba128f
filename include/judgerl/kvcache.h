/* kvcache.h - transformer inference with a KV cache: prefill a prompt, copy a slot, decode one token per slot */
#ifndef JUDGERL_KVCACHE_H
#define JUDGERL_KVCACHE_H

#include "judgerl/generate.h"
#include "judgerl/model.h"

/* Opens a jr_lm over model m (borrowed, must outlive the lm) with a KV cache of n_slots sequences
 * of up to max_ctx positions each (fp32, 2 * layers * kv_heads * head_dim floats per position).
 * Decoding up to n_slots rows at once reuses the engine's kernels (matmul, RMSNorm, RoPE, SwiGLU);
 * attention reads the cache. Each row's result is independent of the other rows in the batch.
 * On error *lm is zeroed. */
jr_status jr_kv_lm_open(jr_lm *lm, const jr_model *m, int n_slots, int max_ctx);
void jr_kv_lm_close(jr_lm *lm);

/* Bytes the cache of jr_kv_lm_open(m, n_slots, max_ctx) takes (for messages and sizing). */
double jr_kv_bytes(const jr_model *m, int n_slots, int max_ctx);

#endif
