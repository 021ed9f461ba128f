/* response.h - decodes an OpenAI-compatible answer (one JSON body or an SSE stream) into text,
 * reasoning, finish reason, log-probs and token usage (internal to src/judge/) */
#ifndef JUDGERL_JUDGE_RESPONSE_H
#define JUDGERL_JUDGE_RESPONSE_H

#include <stddef.h>
#include <jansson.h>

typedef struct jr_answer {
    char *content;       /* the answer's text as received (may hold <think> blocks); owned */
    char *reasoning;     /* a reasoning_content / reasoning field, if any; owned, may be NULL */
    char finish[32];     /* finish_reason, "" when absent */
    json_t *logprobs;    /* normalised [{token, logprob, top_logprobs: [{token, logprob}]}], or NULL */
    long total_tokens;   /* usage.total_tokens, -1 when absent */
} jr_answer;

/* Decodes body[0..len) (chat or completions, JSON or server-sent events, whichever the bytes
 * are). Returns 0 and fills *a, or -1 with a one-line reason in why (the body is unusable: a
 * transient failure worth a retry). */
int jr_answer_decode(const char *body, size_t len, jr_answer *a, char *why, size_t why_len);

void jr_answer_free(jr_answer *a);

/* The server's error message from an error body ({"error": {"message"}}, {"error": "..."},
 * {"message"}, {"detail"}, or the first printable bytes), into out[out_len]. */
void jr_answer_error_message(const char *body, size_t len, char *out, size_t out_len);

#endif
