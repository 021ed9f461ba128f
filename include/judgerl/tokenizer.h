/* tokenizer.h - HF tokenizer.json byte-level BPE (encode, decode, streaming decode) and chat templates */
#ifndef JUDGERL_TOKENIZER_H
#define JUDGERL_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "judgerl/config.h"
#include "judgerl/status.h"

/* A loaded tokenizer: vocabulary, merges, added/special tokens, normalizer, pre-tokenizer,
 * post-processor, decoder and (optionally) a chat template. Immutable after loading except for
 * jr_tok_set_chat_template*, so one tokenizer may be shared by threads that only encode/decode. */
typedef struct jr_tokenizer jr_tokenizer;

/* A growable array of token ids. Zero-initialise ({0}); free with jr_ids_free. */
typedef struct jr_ids {
    int32_t *ids;
    size_t n, cap;
} jr_ids;

void jr_ids_free(jr_ids *v);
/* Appends one id; JR_ENOMEM on allocation failure (v unchanged). */
jr_status jr_ids_push(jr_ids *v, int32_t id);

/* ---- loading ---- */

/* Loads a tokenizer from `path`: either a tokenizer.json file or a model directory holding
 * tokenizer.json. Beside a file named tokenizer.json (or in the directory), these are read when
 * present: tokenizer_config.json (bos/eos/pad tokens, chat template), chat_template.jinja (chat
 * template), config.json (vocab_size) and generation_config.json (extra eos ids). On success *out is owned by the caller (jr_tok_free). On failure *out is NULL and
 * the message names the file and field (truncated JSON, missing model, unknown merge token,
 * bad regex, unsupported normalizer/pre-tokenizer/decoder type, ...). */
jr_status jr_tok_load(jr_tokenizer **out, const char *path);

/* Same from tokenizer.json text already in memory (`name` is used in messages). No side file is
 * read: eos is the first added token among <|im_end|>, <|endoftext|>, <|end_of_text|>, </s>,
 * <|eot_id|>, and bos among <|begin_of_text|>, <s> (-1 when none). */
jr_status jr_tok_load_json(jr_tokenizer **out, const char *json, size_t len, const char *name);

void jr_tok_free(jr_tokenizer *t);

/* ---- sizes and lookups ---- */

/* Number of token ids the tokenizer can produce: max id + 1 over vocab and added tokens
 * (Qwen3: 151,669). */
int32_t jr_tok_n_tokens(const jr_tokenizer *t);
/* The model's embedding rows: config.json vocab_size when loaded from a model directory that
 * has one, else jr_tok_n_tokens (Qwen3: 151,936). Always >= jr_tok_n_tokens. */
int32_t jr_tok_vocab_size(const jr_tokenizer *t);

/* The id of a token given in vocabulary form (byte-level: "Ġhello"; added tokens by content:
 * "<|im_end|>"), or -1 when there is none. */
int32_t jr_tok_token_to_id(const jr_tokenizer *t, const char *token);
/* The vocabulary form of an id (borrowed, valid while t lives), or NULL when out of range or a
 * hole in the id space. */
const char *jr_tok_id_to_token(const jr_tokenizer *t, int32_t id);
/* The raw bytes an id decodes to (byte-level decoded; added tokens: their content), borrowed;
 * *len gets the length. NULL when the id is invalid. Useful for stop strings and logit masks. */
const char *jr_tok_id_bytes(const jr_tokenizer *t, int32_t id, size_t *len);

/* Special tokens; -1 when the tokenizer has none. bos/eos/pad come from tokenizer_config.json
 * (bos_token, eos_token, pad_token) when present, else from the well-known names listed at
 * jr_tok_load_json (pad: none). */
int32_t jr_tok_bos_id(const jr_tokenizer *t);
int32_t jr_tok_eos_id(const jr_tokenizer *t);
int32_t jr_tok_pad_id(const jr_tokenizer *t);
/* 1 when id ends generation: the eos id or one of generation_config.json's eos_token_id list. */
int jr_tok_is_eos(const jr_tokenizer *t, int32_t id);
/* 1 when id is an added token marked special (skipped by JR_TOK_SKIP_SPECIAL). */
int jr_tok_is_special(const jr_tokenizer *t, int32_t id);

/* ---- encode / decode ---- */

enum {
    JR_TOK_ADD_SPECIAL = 1,   /* encode: apply the post-processor (e.g. Llama-3 adds BOS) */
    JR_TOK_SPLIT_SPECIAL = 2, /* encode: do NOT match special added tokens inside the text
                                 (treat "<|im_end|>" in user text as plain text) */
    JR_TOK_SKIP_SPECIAL = 4   /* decode: drop special tokens */
};

/* Encodes len bytes of UTF-8 text and appends the ids to *out (HF `encode(text,
 * add_special_tokens=flags & JR_TOK_ADD_SPECIAL)`). Invalid UTF-8 is an error (JR_EINVAL, the
 * byte offset in the message) and leaves *out with its original length. */
jr_status jr_tok_encode(const jr_tokenizer *t, const char *text, size_t len, int flags, jr_ids *out);

/* Decodes ids to text (HF `decode(ids, skip_special_tokens=flags & JR_TOK_SKIP_SPECIAL,
 * clean_up_tokenization_spaces=False)`): bytes that are not valid UTF-8 become U+FFFD. *out is
 * NUL-terminated and owned by the caller; *len (may be NULL) gets its length. An id out of
 * range is an error (nothing allocated). */
jr_status jr_tok_decode(const jr_tokenizer *t, const int32_t *ids, size_t n, int flags, char **out, size_t *len);

/* Incremental decoding for streaming: push ids one at a time; each push yields the text that is
 * now complete. A UTF-8 character split across tokens is held back until its last byte arrives,
 * so the concatenation of every piece (plus jr_tok_stream_finish) equals jr_tok_decode of all
 * ids. Init with jr_tok_stream_init, free with jr_tok_stream_free. */
typedef struct jr_tok_stream {
    const jr_tokenizer *tok;
    int flags;                /* JR_TOK_SKIP_SPECIAL or 0 */
    unsigned char pend[4];    /* bytes of an incomplete UTF-8 character */
    int npend;
    char *buf;                /* the last piece (owned) */
    size_t cap;
} jr_tok_stream;

void jr_tok_stream_init(jr_tok_stream *s, const jr_tokenizer *t, int flags);
/* *text (borrowed, NUL-terminated, valid until the next call) gets the newly complete text,
 * possibly empty; *len its length. An invalid id is an error and the stream is unchanged. */
jr_status jr_tok_stream_push(jr_tok_stream *s, int32_t id, const char **text, size_t *len);
/* Flushes held-back bytes (as U+FFFD: they never completed a character). */
jr_status jr_tok_stream_finish(jr_tok_stream *s, const char **text, size_t *len);
void jr_tok_stream_free(jr_tok_stream *s);

/* ---- chat templates ---- */

/* One chat message. */
typedef struct jr_chat_msg {
    const char *role;     /* "system", "user", "assistant" (others passed to the template as is) */
    const char *content;  /* UTF-8; NULL is rendered as the template renders a null content */
} jr_chat_msg;

typedef struct jr_chat_opts {
    int add_generation_prompt; /* 1: end with the assistant header, ready to generate */
    int enable_thinking;       /* Qwen3: -1 leaves it undefined (template default), 0 false, 1 true */
} jr_chat_opts;

/* A byte range [start, end) of rendered text. */
typedef struct jr_span {
    size_t start, end;
} jr_span;

/* 1 when the tokenizer has a chat template (from tokenizer_config.json, chat_template.jinja or
 * jr_tok_set_chat_template*). */
int jr_tok_has_chat_template(const jr_tokenizer *t);

/* Replaces the chat template with `template_text` (Jinja), e.g. a config's custom_chat_template.
 * The template is parsed now: a syntax error or a construct outside the supported Jinja subset
 * is an error naming it and the line, and the previous template is kept. */
jr_status jr_tok_set_chat_template(jr_tokenizer *t, const char *template_text);
/* Same, reading the template from a file (its path is named in messages). */
jr_status jr_tok_set_chat_template_file(jr_tokenizer *t, const char *path);

/* Renders msgs through the chat template exactly as HF transformers' apply_chat_template
 * (jinja2, trim_blocks + lstrip_blocks, bos_token/eos_token defined) would. *out is
 * NUL-terminated and owned by the caller. When `assistant` is not NULL, *assistant gets an
 * array (caller frees) of *n_assistant spans, one per assistant message in order, covering that
 * message's content as rendered plus the end-of-turn text the template puts right after it up to
 * and including the eos/end-of-turn special token (e.g. "<|im_end|>"): put the SFT loss on the
 * tokens of these spans. An assistant message whose content the template does not emit gets an
 * empty span at the end of the text rendered before it. No template, or a runtime error in the
 * template (undefined method, raise_exception), is an error and nothing is allocated. */
jr_status jr_chat_render(const jr_tokenizer *t, const jr_chat_msg *msgs, size_t n, const jr_chat_opts *opts,
                         char **out, size_t *out_len, jr_span **assistant, size_t *n_assistant);

/* ---- configuration ---- */

/* Options of the tokenizer (config keys "tokenizer.*"):
 *   tokenizer.chat_template    Jinja file replacing the model's chat template (null: the model's)
 *   tokenizer.enable_thinking  Qwen3 thinking switch for chat rendering: default|true|false */
extern const jr_cfg_field jr_tokenizer_cfg[];

/* The tokenizer.* options, typed. */
typedef struct jr_tok_opts {
    const char *chat_template; /* Jinja file replacing the model's chat template, or NULL */
    int enable_thinking;       /* for jr_chat_opts: -1 (template default), 0 or 1 */
} jr_tok_opts;

/* Fills o from the tokenizer.* table (strings borrowed from c). */
jr_status jr_tok_opts_from_config(jr_tok_opts *o, const jr_config *c);

/* Applies o->chat_template (when set) to t. On error (unreadable file, unsupported template) the
 * message names the file and t keeps its template. */
jr_status jr_tok_apply_opts(jr_tokenizer *t, const jr_tok_opts *o);

/* Conveniences for commands and trainers: jr_tok_opts_from_config, then jr_tok_apply_opts /
 * the enable_thinking value (-1, 0 or 1; -1 too when the table was not loaded, with the
 * error recorded for jr_cfg_check). */
jr_status jr_tok_apply_config(jr_tokenizer *t, const jr_config *cfg);
int jr_tok_cfg_thinking(const jr_config *cfg);

/* ---- training ---- */

/* Trains a byte-level BPE tokenizer (GPT-2/Qwen-style pre-tokenizer regex, ByteLevel decoder,
 * no normalizer) on `corpus` (len bytes of UTF-8 text) with `vocab_size` tokens in total: the
 * 256 byte tokens, the merges, then the added special tokens `specials` (n_specials strings, may
 * be 0; e.g. "<|endoftext|>", "<|im_start|>", "<|im_end|>"). Ties between equally frequent pairs
 * are broken by the smaller pair of ids, so the result is deterministic. *json_out gets the
 * tokenizer.json text (caller frees), loadable by jr_tok_load and by HF tokenizers. */
jr_status jr_tok_train(const char *corpus, size_t len, int32_t vocab_size, const char *const *specials,
                       size_t n_specials, char **json_out);

/* jr_tok_train with the pre-tokenizer regex `pattern` (PCRE2, UTF + UCP; NULL = the Qwen2 regex
 * jr_tok_train uses), written into the tokenizer.json's Split step so loading splits the same way.
 * A pattern that does not compile is an error naming its offset. */
jr_status jr_tok_train_re(const char *corpus, size_t len, int32_t vocab_size, const char *const *specials,
                          size_t n_specials, const char *pattern, char **json_out);

/* Writes the tokenizer jr_tok_train makes from the corpus file `corpus` atomically to `out`; no specials
 * (n_specials 0) means <|endoftext|> <|im_start|> <|im_end|>. */
jr_status jr_tok_train_file(const char *corpus, int32_t vocab_size, const char *const *specials, size_t n_specials,
                            const char *out);

/* ---- lines (`judgerl tokenize`, tok_lines.c) ---- */

/* What jr_tok_lines reads: lines of text (encode) or of space-separated ids (decode); with `jsonl`
 * rows {"text": ...} (encode) or {"ids": [...]} (decode, written as {"text": ...} rows); with `chat`
 * rows {"messages": [...], "add_generation_prompt": bool, "enable_thinking": bool}, each written as the
 * rendered conversation (a JSON string); a message's content is a string or null (anything else, or a
 * NUL inside it, is an error naming the message). `no_special`: encode without the post-processor's tokens,
 * decode without special tokens; `split_special`: special-token text encodes as plain text. */
typedef struct jr_tok_lines_opts {
    int decode, jsonl, chat, no_special, split_special;
    const char *in_name; /* the input's name in messages ("stdin line 3: ...") */
} jr_tok_lines_opts;

/* Reads `in` to its end, writing one output line per input line or row (empty JSONL lines skipped);
 * stops at the first bad line with a message naming it. */
jr_status jr_tok_lines(jr_tokenizer *t, const jr_tok_lines_opts *o, FILE *in, FILE *out);

/* `judgerl tokenize --info`: token count, vocab_size, bos/eos/pad ids and whether t has a chat template,
 * printed on `out` as one JSON object. */
void jr_tok_print_info(const jr_tokenizer *t, FILE *out);

/* `judgerl tokenize --bench`: CPU seconds to load the tokenizer at `path` and to encode `file` in
 * newline-aligned chunks of about 64 KiB (the first pass, cold word cache, and the best of two more),
 * printed on `out` as one JSON object (load_cpu_s, bytes, tokens, cold_/warm_encode_cpu_s and _mb_s). */
jr_status jr_tok_bench(const char *path, const char *file, FILE *out);

#endif
