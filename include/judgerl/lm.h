/* lm.h - jr_lm, a language model as a generator drives it: next-token scores over a KV cache of
 * slots (implemented by model/kvcache.c, driven by sample/generate.c) */
#ifndef JUDGERL_LM_H
#define JUDGERL_LM_H

#include <stdint.h>

#include "judgerl/status.h"

/* A model as the generator sees it: a next-token scorer holding a KV cache of n_slots sequences
 * of up to max_ctx positions each. Implemented over the transformer by jr_kv_lm_open
 * (include/judgerl/kvcache.h). Each slot knows its own length. */
typedef struct jr_lm {
    void *impl;
    int n_logits; /* scores per position (embedding rows, possibly padded past the tokenizer) */
    int n_slots;
    int max_ctx;
    /* Empties `slot` and runs toks[0..n) through it; writes the last position's n_logits scores. */
    jr_status (*prefill)(void *impl, int slot, const int32_t *toks, int n, float *logits);
    /* Makes slot dst a copy of slot src (its cache and length): a group shares one prefill. */
    jr_status (*copy)(void *impl, int dst, int src);
    /* Appends toks[i] to slots[i] for i < n (distinct slots) and writes n rows of scores. The rows
     * do not depend on which other slots are in the batch (bitwise). */
    jr_status (*decode)(void *impl, int n, const int *slots, const int32_t *toks, float *logits);
    /* Optional (NULL: not offered). Appends toks[i][0..n[i]) to slots[i] (distinct) from position
     * start[i] (0: the slot is emptied first; else the slot's length) for i < k, all in one pass over
     * the weights; writes k rows of scores, row i for the last position appended to slots[i]. Decode
     * rows (n = 1), whole prompts and pieces of prompts may share one call. */
    jr_status (*extend)(void *impl, int k, const int *slots, const int32_t *const *toks, const int *n,
                        const int *start, float *logits);
    /* 1: the generator batches decode rows and prompts (cut into chunks, jr_gen_set_prefill_chunk)
     * into extend calls. The lm sets it when extend's rows are bitwise those of prefill + decode
     * whatever the call's other rows and however a prompt is cut (so no seeded request's tokens
     * change), or when it was opened non-deterministic (jr_kv_opts.deterministic = 0). */
    int batch_prefill;
} jr_lm;

#endif
