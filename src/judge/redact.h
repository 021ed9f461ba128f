/* redact.h - removing the judge's API key from every text the judge client keeps (answers,
 * reasoning, log-prob tokens, details, cache entries, error messages, server descriptions):
 * kept apart from the request logic in client.c */
#ifndef JUDGERL_JUDGE_REDACT_H
#define JUDGERL_JUDGE_REDACT_H

#include <jansson.h>
#include <stddef.h>

/* Replaces every occurrence of `secret` in s (owned, NUL-terminated) by "[redacted]" and returns
 * the string (s itself, or a reallocation of it). Keys shorter than 4 bytes are left alone (they
 * would match ordinary text). On allocation failure the key's bytes are overwritten with '*'. */
char *jr_redact_secret(char *s, const char *secret);

/* The same on a copy of s (NULL when s is NULL or on allocation failure). */
char *jr_redacted_copy(const char *s, const char *secret);

/* Every string in v (values and object keys, at any depth) redacted in place. A string that
 * cannot be rewritten (out of memory) is replaced by "". Returns the number of strings changed. */
int jr_redact_json(json_t *v, const char *secret);

/* Normalised log-probs ([{token, logprob, top_logprobs: [{token, logprob}]}], response.h)
 * redacted in place: the key is looked for in the concatenation of the sampled tokens (a key the
 * tokenizer split over several tokens is found too) and the tokens it covers are rewritten so that
 * they concatenate to the redacted text; an alternative equal to a rewritten sampled token is
 * rewritten the same way; then every remaining string as by jr_redact_json. */
void jr_redact_logprobs(json_t *lps, const char *secret);

/* A copy of an answer's body body[0..len) without the key, for messages quoting it: a JSON body
 * is decoded, redacted (jr_redact_json) and encoded again, so an escaped key is found too; other
 * bytes get the key's bytes overwritten by '*'. *out_len is the copy's length. NULL when out of
 * memory. */
char *jr_redacted_body(const char *body, size_t len, const char *secret, size_t *out_len);

#endif
