/* genrows.h - n completions per prompt row, as output rows (what `judgerl generate --input` writes) */
#ifndef JUDGERL_GENROWS_H
#define JUDGERL_GENROWS_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "judgerl/status.h"
#include "judgerl/textgen.h"

/* How to sample. Defaults (jr_genrows_opts_init): n 1, max_tokens 256, temperature / top_p NAN and
 * top_k -1 (the model's generation_config.json, else temperature 1, top_p 1, top_k 0; temperature 0
 * when it says do_sample false), min_p 0, seed 0, no stops, no constraint, logprobs -1, parallel 8,
 * ctx 0. Strings are borrowed. */
typedef struct jr_genrows_opts {
    int n;                      /* samples per prompt, >= 1 */
    int max_tokens;
    double temperature, top_p;  /* NAN: the model's default */
    int top_k;                  /* -1: the model's default */
    double min_p;
    uint64_t seed;
    const char *const *stops;   /* stop strings */
    int n_stop;
    const char *const *choices; /* answers constrained to one of these, or */
    int n_choice;
    const char *regex;          /* to this regular expression (not both) */
    int ignore_eos;
    int logprobs;               /* -1: none; 0: each sampled token's; K > 0: and the top K */
    int parallel;               /* KV-cache slots (raised to n) */
    int ctx;                    /* positions per slot; 0: the longest prompt + max_tokens, at most the model's */
    const char *source;         /* the rows' file, for messages ("FILE:LINE" when a row has "_line") */
} jr_genrows_opts;

void jr_genrows_opts_init(jr_genrows_opts *o);

/* Samples o->n completions for each row of `rows` (objects with "prompt" or "messages") from t
 * (the KV cache is resized for the prompts). *out gets the output rows in order, n per input row:
 * the input's fields ("_line" dropped) plus prompt_id (the input's id, else its 0-based index), id
 * (prompt_id with n 1, else "PROMPT_ID-SAMPLE"), sample, response (invalid UTF-8 becomes U+FFFD),
 * tokens, finish_reason, prompt_tokens and, with logprobs >= 0, logprobs. On error *out is NULL and
 * the message names the row (o->source and its "_line"). */
jr_status jr_genrows_run(jr_textgen *t, const json_t *rows, const jr_genrows_opts *o, json_t **out);

/* Writes rows as JSONL: to `path` atomically (replaced only when all is written) or, path NULL, to f. */
jr_status jr_genrows_write(const json_t *rows, const char *path, FILE *f);

/* Reads a JSONL file of objects into *rows, each with "_line" (its line number), by the shared
 * reader (jr_jsonl_open, dataset.h: blank lines skipped, a UTF-8 BOM ignored). Errors name the file
 * (and line): JR_ENOTFOUND / JR_EIO it cannot be read, JR_EFORMAT a bad line (not JSON, not an
 * object, invalid UTF-8), JR_EINVAL it has no rows. */
jr_status jr_genrows_read(const char *path, json_t **rows);

/* The prompt rows of `judgerl generate`: one {prompt} row (prompt), one {messages} row (chat: a JSON
 * file holding a list of {role, content} messages or an object with "messages"; JR_EINVAL when it is
 * not, the message naming "--chat FILE"), or input's rows (jr_genrows_read). */
jr_status jr_genrows_prompts(const char *prompt, const char *chat, const char *input, json_t **rows);

/* `judgerl generate`: opens the model directory (tokenizer auto | byte | PATH, kv: how it computes),
 * samples rows' completions (jr_genrows_run) and writes them to `output` atomically, or (NULL) to
 * out; then logs the model, tokenizer and compute lines on log as "PREFIXmodel: ...". */
typedef struct jr_generate_opts {
    const char *model, *tokenizer, *output;
    jr_kv_opts kv;
    jr_genrows_opts rows;
    FILE *out, *log;
    const char *prefix;
} jr_generate_opts;
jr_status jr_genrows_generate(const jr_generate_opts *o, const json_t *rows);

#endif
