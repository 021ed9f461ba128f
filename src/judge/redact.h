/* redact.h - removing the judge's API key from every text the judge client keeps (answers,
 * details, cache entries, error messages): kept apart from the request logic in client.c */
#ifndef JUDGERL_JUDGE_REDACT_H
#define JUDGERL_JUDGE_REDACT_H

/* Replaces every occurrence of `secret` in s (owned, NUL-terminated) by "[redacted]" and returns
 * the string (s itself, or a reallocation of it). Keys shorter than 4 bytes are left alone (they
 * would match ordinary text). On allocation failure the key's bytes are overwritten with '*'. */
char *jr_redact_secret(char *s, const char *secret);

/* The same on a copy of s (NULL when s is NULL or on allocation failure). */
char *jr_redacted_copy(const char *s, const char *secret);

#endif
