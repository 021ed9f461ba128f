/* tok.h - the tokenizer interface trainers use (text <-> ids); the byte tokenizer today, BPE slots in */
#ifndef JUDGERL_TOK_H
#define JUDGERL_TOK_H

#include <stddef.h>
#include <stdint.h>

#include "judgerl/status.h"

/* A tokenizer behind a small table of functions, so SFT/GRPO code does not care which one it is.
 * A new kind (tokenizer.json BPE) adds a case to jr_tok_open and fills the same fields. */
typedef struct jr_tok {
    const char *kind;        /* "byte", ... */
    int32_t n_vocab;         /* ids are < n_vocab (a model's vocab_size must be >= this) */
    int32_t bos_id, eos_id, pad_id; /* -1 when the tokenizer has none */
    /* Encodes len bytes of plain text (special-token texts are NOT parsed): *ids (caller frees). */
    jr_status (*encode)(void *ctx, const char *text, size_t len, int32_t **ids, size_t *n_ids);
    /* Decodes ids to text (caller frees, NUL-terminated); specials are dropped. */
    jr_status (*decode)(void *ctx, const int32_t *ids, size_t n_ids, char **text, size_t *len);
    void (*close)(void *ctx);
    void *ctx;
} jr_tok;

/* Opens a tokenizer from a spec: "byte" (bytetok.h). On error *t is zeroed and the message names
 * the spec and what is accepted. */
jr_status jr_tok_open(jr_tok *t, const char *spec);
void jr_tok_close(jr_tok *t);

#endif
