/* textgen.h - a model ready to generate text: weights, KV cache, tokenizer, eos ids, prompt rendering */
#ifndef JUDGERL_TEXTGEN_H
#define JUDGERL_TEXTGEN_H

#include "judgerl/generate.h"
#include "judgerl/hfmodel.h"
#include "judgerl/kvcache.h"
#include "judgerl/model.h"
#include "judgerl/tok.h"

/* Everything `judgerl generate`, `judgerl serve` and GRPO need to turn text into completions.
 * vocab.tb.n is the tokenizer's size (ids past it, padded embedding rows, are never sampled);
 * vocab.eos holds the tokenizer's eos id and every eos_token_id of config.json and
 * generation_config.json. */
typedef struct jr_textgen {
    jr_model model;          /* owned when loaded by jr_textgen_open */
    const jr_model *m;       /* the model generated from (&model, or the caller's) */
    int owns_model;
    jr_lm lm;
    jr_tok tok;
    jr_gen_vocab vocab;
    char **pieces;           /* owned bytes of each id (NULL for specials) */
    int32_t *piece_len;
    int32_t eos[JR_MAX_EOS + 1];
    jr_generation_config gen; /* the model directory's generation_config.json (fields absent = -1 / NAN) */
} jr_textgen;

/* Loads model directory `dir` (config.json + safetensors) with tokenizer `tok_spec` ("byte"; NULL
 * = "byte") and opens a KV cache of n_slots sequences of max_ctx positions (0 = the model's
 * max_position_embeddings). On error *t is zeroed and the message names the file or option. */
jr_status jr_textgen_open(jr_textgen *t, const char *dir, const char *tok_spec, int n_slots, int max_ctx);

/* Same over a model already in memory (borrowed: GRPO's policy), eos ids from its config. */
jr_status jr_textgen_open_model(jr_textgen *t, const jr_model *m, const char *tok_spec, int n_slots, int max_ctx);

void jr_textgen_close(jr_textgen *t);

/* A completions prompt: [bos] + the text's tokens (as SFT trains). *ids malloc'ed. */
jr_status jr_textgen_encode(jr_textgen *t, const char *text, size_t len, int32_t **ids, int *n);

/* A chat prompt: [bos] then <|role|>content<|eos|> per message and <|assistant|> (the byte
 * tokenizer's chat format; special-token texts inside contents stay plain bytes). Roles: system,
 * user, assistant. *ids malloc'ed. */
jr_status jr_textgen_encode_chat(jr_textgen *t, int n, const char *const *roles, const char *const *contents,
                                 int32_t **ids, int *n_ids);

#endif
