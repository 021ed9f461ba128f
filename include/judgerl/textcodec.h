/* textcodec.h - text <-> ids as trainers use it: the byte tokenizer or an HF tokenizer.json (jr_tokenizer,
 * tokenizer.h) behind one small interface, jr_textcodec (jr_tok_* names the HF tokenizer's own functions) */
#ifndef JUDGERL_TEXTCODEC_H
#define JUDGERL_TEXTCODEC_H

#include <stddef.h>
#include <stdint.h>

#include "judgerl/sha256.h"
#include "judgerl/status.h"
#include "judgerl/tokenizer.h"

/* A tokenizer behind a small table of functions, so SFT/GRPO code does not care which one it is. */
typedef struct jr_textcodec {
    const char *kind;               /* "byte" or "bpe" */
    int32_t n_vocab;                /* ids are < n_vocab (a model's vocab_size must be >= this) */
    int32_t bos_id, eos_id, pad_id; /* -1 when the tokenizer has none */
    /* Encodes len bytes of plain text (special-token texts are NOT parsed): *ids (caller frees). */
    jr_status (*encode)(void *ctx, const char *text, size_t len, int32_t **ids, size_t *n_ids);
    /* Decodes ids to text (caller frees, NUL-terminated); specials are dropped. */
    jr_status (*decode)(void *ctx, const int32_t *ids, size_t n_ids, char **text, size_t *len);
    void (*close)(void *ctx);
    void *ctx;
    jr_tokenizer *hf; /* the HF tokenizer (owned by ctx; for chat rendering), NULL for "byte" */
} jr_textcodec;

/* Opens a tokenizer from a spec: "byte" (bytetok.h), or a tokenizer.json file / a model directory
 * holding one (tokenizer.h, jr_tok_load). On error *t is zeroed and the message names the spec. */
jr_status jr_textcodec_open(jr_textcodec *t, const char *spec);
void jr_textcodec_close(jr_textcodec *t);

/* Copies the tokenizer files (tokenizer.json, and tokenizer_config.json, special_tokens_map.json,
 * chat_template.jinja, ... when present beside it) into dir so a model directory written there
 * carries its tokenizer. Nothing to do for "byte". */
jr_status jr_textcodec_copy_files(const jr_textcodec *t, const char *dir);

/* Copies every tokenizer file present in model_dir (tokenizer.json, tokenizer_config.json,
 * special_tokens_map.json, chat_template.jinja, vocab.json, merges.txt, ...) into dir: what
 * `merge` and `convert` use so their outputs keep the model's tokenizer. *n_copied (may be NULL)
 * gets how many there were (0: the model has none, the byte tokenizer). */
jr_status jr_textcodec_copy_dir_files(const char *model_dir, const char *dir, int *n_copied);

/* Adds what t is (its kind and the bytes of each of its files) to a SHA-256 (model fingerprints). */
void jr_textcodec_hash(const jr_textcodec *t, jr_sha256 *h);

/* The tokenizer a model uses: `spec` when given and not "auto"; else model_dir when it holds
 * tokenizer.json; else "byte". Returns the spec for jr_textcodec_open (one of the arguments or the
 * literal "byte") and writes a line saying which and why into desc[desc_len] (for logs). */
const char *jr_textcodec_resolve(const char *model_dir, const char *spec, char *desc, size_t desc_len);

/* Opens the tokenizer jr_textcodec_resolve picks and checks it fits the model: ids past model_vocab
 * (the model's vocab_size; <= 0 skips the check) are an error naming both sizes (a larger
 * embedding, as Qwen3's, is fine). desc (may be NULL) gets "WHICH, N ids[, chat template]".
 * On error *t is zeroed. */
jr_status jr_textcodec_open_for_model(jr_textcodec *t, const char *model_dir, const char *spec, int32_t model_vocab,
                                      char *desc, size_t desc_len);

/* Renders msgs with t's chat template (jr_chat_render, add_generation_prompt off) and encodes the
 * text piecewise (special-token texts parsed): *ids gets the tokens and *loss (same length, may be
 * NULL) 1 for the tokens inside an assistant span (content + end-of-turn token), else 0. Both are
 * owned by the caller. A tokenizer without a chat template (e.g. "byte") is JR_EINVAL. */
jr_status jr_textcodec_encode_chat(const jr_textcodec *t, const jr_chat_msg *msgs, size_t n, int enable_thinking,
                                   int32_t **ids, uint8_t **loss, size_t *n_ids);

#endif
