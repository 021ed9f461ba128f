/* respond.h - JSON bodies of the OpenAI API: completions, chunks, log-probs, usage, errors (server-internal) */
#ifndef JUDGERL_SERVE_RESPOND_H
#define JUDGERL_SERVE_RESPOND_H

#include <jansson.h>

#include "judgerl/generate.h"

/* A JSON string from bytes that may hold invalid UTF-8 (replaced by U+FFFD). NULL on ENOMEM. */
json_t *jr_json_text(const char *s, size_t n);

/* {"error": {"message", "type", "param": null, "code"}} as compact text (caller frees). */
char *jr_error_body(int status, const char *message, const char *code);

/* Log-probs of seq's tokens [from, to) in the chat shape ({"content": [...]}) or the completions
 * shape ({"tokens", "token_logprobs", "top_logprobs", "text_offset"}). */
json_t *jr_chat_logprobs(const jr_gen_seq *s, const jr_gen_vocab *v, int from, int to);
json_t *jr_text_logprobs(const jr_gen_seq *s, const jr_gen_vocab *v, int from, int to, size_t offset0);

json_t *jr_usage(int prompt_tokens, int completion_tokens);

#endif
