/* gguf.h - GGUF export of Llama / Qwen2 / Qwen3 model directories for llama.cpp and ollama */
#ifndef JUDGERL_GGUF_H
#define JUDGERL_GGUF_H

#include <stdint.h>

#include "judgerl/model.h"
#include "judgerl/status.h"

/* How the 2-D weight matrices are stored (1-D tensors, norms and biases are always F32, as
 * llama.cpp's convert_hf_to_gguf.py stores them). Q8_0: blocks of 32 values, an f16 scale
 * d = max|x| / 127 and int8 q = roundf(x / d); a matrix whose rows are not a multiple of 32 falls
 * back to F16. */
typedef enum { JR_GGUF_F32 = 0, JR_GGUF_F16, JR_GGUF_BF16, JR_GGUF_Q8_0 } jr_gguf_dtype;

/* "f32", "f16", "bf16", "q8_0" into *d; JR_EINVAL naming the choices otherwise. */
jr_status jr_gguf_dtype_parse(const char *s, jr_gguf_dtype *d);

typedef struct jr_gguf_opts {
    const char *model_dir;     /* the model's HF directory, for tokenizer.json (required) and
                                  tokenizer_config.json (chat template, special tokens; optional) */
    const char *out_path;      /* the .gguf written (atomically: temp file, fsync, rename) */
    jr_gguf_dtype dtype;
    const char *modelfile;     /* also write an ollama Modelfile here (FROM the .gguf), or NULL */
    const char *name;          /* general.name; NULL = the model directory's base name */
} jr_gguf_opts;

/* What was written. */
typedef struct jr_gguf_report {
    int n_tensors;
    int n_kv;
    int64_t bytes;
    char arch[16];             /* llama, qwen2, qwen3 */
    char pre[32];              /* tokenizer.ggml.pre */
    int n_fallback_f16;        /* q8_0 matrices stored as F16 (rows not a multiple of 32) */
} jr_gguf_report;

/* Writes model m (loaded from o->model_dir, a LoRA adapter already merged: jr_lora_merge_into)
 * as GGUF v3 the way llama.cpp reads it:
 * general.* and {arch}.* hyperparameters, the tokenizer (model "gpt2": tokens, token types,
 * merges, bos/eos/pad ids, add_bos_token, tokenizer.ggml.pre chosen by the pre-tokenizer regex of
 * tokenizer.json) and the chat template, and the tensors under llama.cpp's names (token_embd,
 * blk.N.attn_q, ..., output), Llama's attn_q / attn_k rows permuted as convert_hf_to_gguf.py
 * does (per head, the two rotary halves interleaved), plus rope_freqs for llama3 rope scaling.
 * Fails, writing nothing, when the tokenizer is not byte-level BPE or its pre-tokenizer matches
 * no llama.cpp name (the message lists the known ones). rep may be NULL. */
jr_status jr_gguf_export(const jr_model *m, const jr_gguf_opts *o, jr_gguf_report *rep);

#endif
