/* textgen.h - a model ready to generate text: weights, KV cache, tokenizer, eos ids, prompt rendering */
#ifndef JUDGERL_TEXTGEN_H
#define JUDGERL_TEXTGEN_H

#include "judgerl/generate.h"
#include "judgerl/hfmodel.h"
#include "judgerl/kvcache.h"
#include "judgerl/model.h"
#include "judgerl/tok.h"
#include "judgerl/tokenizer.h"

/* Everything `judgerl generate`, `judgerl serve` and GRPO need to turn text into completions.
 * vocab.tb.n is the tokenizer's size (ids past it, padded embedding rows, are never sampled);
 * vocab.eos holds the tokenizer's eos id and every eos_token_id of config.json and
 * generation_config.json. */
typedef struct jr_textgen {
    jr_model model;          /* owned when loaded by jr_textgen_open */
    const jr_model *m;       /* the model generated from (&model, or the caller's) */
    int owns_model;
    jr_lm lm;
    jr_kv_opts kvo;          /* how lm computes (jr_textgen_set_kv; open: fp32, open_model: m->compute) */
    jr_tokenizer *bpe;       /* tokenizer.json (BPE + chat template; tok.hf, owned by tok), or NULL for byte */
    jr_tok tok;              /* the tokenizer (byte or bpe) */
    jr_gen_vocab vocab;
    char **pieces;           /* owned bytes of each id (NULL for specials) */
    int32_t *piece_len;
    int32_t eos[JR_MAX_EOS + 1];
    jr_generation_config gen; /* the model directory's generation_config.json (fields absent = -1 / NAN) */
    char tok_desc[1400];     /* which tokenizer and why, for the commands' logs (jr_tok_open_for_model) */
} jr_textgen;

/* (Re)opens the KV cache with n_slots slots of max_ctx positions: 0 = min(max_position_embeddings,
 * 4096); more than max_position_embeddings is capped to it. Nothing changes when the sizes are
 * already these. On error t->lm is closed (zeroed). */
jr_status jr_textgen_reserve(jr_textgen *t, int n_slots, int max_ctx);

/* Reopens the KV cache (same sizes) with options o when they differ from t->kvo. */
jr_status jr_textgen_set_kv(jr_textgen *t, const jr_kv_opts *o);
/* After the model's weights changed (GRPO's update): refreshes the cache's bf16 weight copy. */
jr_status jr_textgen_sync(jr_textgen *t);

/* Loads model directory `dir` (config.json + safetensors) with tokenizer `tok_spec`: "auto" (or
 * NULL): dir/tokenizer.json when present (with tokenizer_config.json's chat template), else the
 * byte tokenizer; "byte"; or the path of a tokenizer.json file or of a directory holding one
 * (jr_tok_open_for_model: a tokenizer with more ids than the model's vocab_size is an error).
 * t->tok_desc says which tokenizer it took.
 * Opens a KV cache of n_slots sequences of max_ctx positions (see jr_textgen_reserve). On error *t is zeroed and the message names the file or option. */
jr_status jr_textgen_open(jr_textgen *t, const char *dir, const char *tok_spec, int n_slots, int max_ctx);
/* Same with the cache's options *kvo from the start: with bf16 weights the model is loaded by
 * jr_model_load_bf16 (no fp32 copy of its matmul weights: t->model cannot be trained or LoRA-merged). */
jr_status jr_textgen_open_kv(jr_textgen *t, const char *dir, const char *tok_spec, int n_slots, int max_ctx,
                             const jr_kv_opts *kvo);

/* jr_textgen_open over a model directory or a LoRA checkpoint (adapter_config.json, no config.json):
 * then its base_model_name_or_path with the adapter folded in memory, and the checkpoint's own
 * tokenizer unless tok_spec names one. desc gets what was loaded ("BASE + LoRA adapter DIR", else
 * the directory). */
jr_status jr_textgen_open_dir(jr_textgen *t, const char *dir, const char *tok_spec, int n_slots, int max_ctx, char *desc,
                              size_t desc_len);
/* Same with the cache's options *kvo from the start (jr_textgen_open_kv: bf16 weights load a model
 * directory in bf16; a LoRA checkpoint is folded in fp32, then copied). */
jr_status jr_textgen_open_dir_kv(jr_textgen *t, const char *dir, const char *tok_spec, int n_slots, int max_ctx,
                                 const jr_kv_opts *kvo, char *desc, size_t desc_len);

/* Same over a model already in memory (borrowed: GRPO's policy), eos ids from its config;
 * tok_spec "auto" means "byte" here. The cache's weights follow m->compute (bf16: a bf16 copy that
 * jr_textgen_sync refreshes after the weights change). */
jr_status jr_textgen_open_model(jr_textgen *t, const jr_model *m, const char *tok_spec, int n_slots, int max_ctx);

void jr_textgen_close(jr_textgen *t);

/* What answers: SHA-256 (hex) of the model's shape, its weights as loaded, its tokenizer's
 * files (chat template included) and the cache's options when not the fp32 default (t->kvo). Two servers with the same fingerprint give the same answers
 * to the same request; `judgerl serve` reports it in /v1/models (judgerl_fingerprint). */
void jr_textgen_fingerprint(const jr_textgen *t, char out[65]);

/* A completions prompt: byte tokenizer: [bos] + the text's bytes (as SFT trains); tokenizer.json:
 * encode(text, add_special_tokens) as HF does. *ids malloc'ed. */
jr_status jr_textgen_encode(jr_textgen *t, const char *text, size_t len, int32_t **ids, int *n);

/* A chat prompt: tokenizer.json: the chat template with add_generation_prompt, then encoded as
 * HF's apply_chat_template does; byte tokenizer: [bos] then <|role|>content<|eos|> per message and
 * <|assistant|> (special-token texts inside contents stay plain bytes). *ids malloc'ed. */
jr_status jr_textgen_encode_chat(jr_textgen *t, int n, const char *const *roles, const char *const *contents,
                                 int32_t **ids, int *n_ids);

/* A dataset row's prompt: its "prompt" string (jr_textgen_encode) or its "messages" list of {role,
 * content} (jr_textgen_encode_chat). *ids malloc'ed; an error names the missing field. */
#include <jansson.h>
jr_status jr_textgen_encode_row(jr_textgen *t, const json_t *row, int32_t **ids, int *n);

#endif
