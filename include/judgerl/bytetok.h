/* bytetok.h - byte-level tokenizer: ids 0..255 are the bytes, then a few special tokens */
#ifndef JUDGERL_BYTETOK_H
#define JUDGERL_BYTETOK_H

#include <stddef.h>
#include <stdint.h>

#include "judgerl/status.h"

/* Token ids. Bytes map to themselves; the specials follow. A chat turn is written as
 * <|user|>text<|eos|> / <|assistant|>text<|eos|> (see jr_bytetok_encode with parse_specials). */
enum {
    JR_BYTETOK_BOS = 256,       /* <|bos|> */
    JR_BYTETOK_EOS = 257,       /* <|eos|>: end of text and end of a chat turn */
    JR_BYTETOK_PAD = 258,       /* <|pad|> */
    JR_BYTETOK_SYSTEM = 259,    /* <|system|> */
    JR_BYTETOK_USER = 260,      /* <|user|> */
    JR_BYTETOK_ASSISTANT = 261, /* <|assistant|> */
    JR_BYTETOK_VOCAB = 262      /* number of ids; a model's vocab_size may be larger */
};

/* The text of a special id ("<|bos|>"), or NULL for a byte id or an id out of range. */
const char *jr_bytetok_special_name(int32_t id);

/* The id of a special token's text ("<|eos|>"), or -1 when it names none. */
int32_t jr_bytetok_special_id(const char *name);

/* Encodes len bytes of text: one id per byte. With parse_specials, the exact texts of the special
 * tokens ("<|eos|>", ...) become their ids; without, they stay bytes. *ids (caller frees) gets
 * *n_ids ids (at most len; never NULL on success, even for len 0). Fails only on allocation;
 * then *ids is NULL. */
jr_status jr_bytetok_encode(const char *text, size_t len, int parse_specials, int32_t **ids, size_t *n_ids);

/* Decodes ids back to bytes: *text (caller frees) is NUL-terminated, *len its length (may be NULL;
 * the bytes may hold NULs or invalid UTF-8 when the ids do). Special ids are written as their text
 * when render_specials, else dropped. An id outside 0..JR_BYTETOK_VOCAB-1 is JR_EINVAL naming its
 * position and value; then *text is NULL. */
jr_status jr_bytetok_decode(const int32_t *ids, size_t n_ids, int render_specials, char **text, size_t *len);

/* Writes a Hugging Face tokenizer.json for this tokenizer at path, atomically: a BPE model with the
 * 256 byte-level symbols (GPT-2 byte-to-unicode alphabet) as ids 0..255 and no merges, a ByteLevel
 * pre-tokenizer and decoder, and the specials as added tokens with their ids. HF `tokenizers`
 * encodes text to the same ids as jr_bytetok_encode. On error the file is unchanged. */
jr_status jr_bytetok_write_hf(const char *path);

#endif
