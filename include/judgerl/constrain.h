/* constrain.h - constrained decoding: only tokens that keep the output a prefix of a choice or of a regex match */
#ifndef JUDGERL_CONSTRAIN_H
#define JUDGERL_CONSTRAIN_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "judgerl/status.h"

/* The bytes each token decodes to, for ids [0, n). bytes[i] NULL marks a special token (never
 * allowed by a constraint; end-of-sequence is handled by the caller through `complete`). The
 * arrays are borrowed and must outlive every constraint built on them. */
typedef struct jr_token_bytes {
    int n;
    const char *const *bytes;
    const int32_t *len;
} jr_token_bytes;

typedef struct jr_constraint jr_constraint;

/* A constraint that accepts exactly one of `choices` (n of them, each a non-empty string), built
 * as a byte trie walked by each token's bytes. On failure *out is NULL. */
jr_status jr_constraint_choice(jr_constraint **out, const jr_token_bytes *v, const char *const *choices, int n);

/* A constraint that accepts the strings fully matched by the PCRE2 `pattern` (UTF-8); a token is
 * allowed when the output with it can still match (PCRE2 hard partial matching). A pattern that
 * does not compile fails with JR_EINVAL and the PCRE2 message. On failure *out is NULL. */
jr_status jr_constraint_regex(jr_constraint **out, const jr_token_bytes *v, const char *pattern);

/* A byte automaton supplied by a higher layer (e.g. the workflow grammar, workflow.h): a fixed-size
 * state of state_size bytes, stepped one byte at a time. step returns 0 when the byte leads
 * nowhere; viable returns 1 when an accepted string can still be reached from the state (a token
 * is allowed only when it leads to a viable state, so generation never gets stuck); accepting
 * returns 1 when the output so far is itself accepted. */
typedef struct jr_byte_automaton {
    size_t state_size;
    void *ctx;                 /* passed to every callback; freed with free_ctx (may be NULL) */
    void (*start)(const void *ctx, void *state);
    int (*step)(const void *ctx, void *state, unsigned char byte);
    int (*viable)(const void *ctx, const void *state);
    int (*accepting)(const void *ctx, const void *state);
    void (*free_ctx)(void *ctx);
} jr_byte_automaton;

/* A constraint that accepts what the automaton `a` accepts. Takes ownership of a->ctx (freed with
 * the constraint, or here on failure). On failure *out is NULL. */
jr_status jr_constraint_automaton(jr_constraint **out, const jr_token_bytes *v, const jr_byte_automaton *a);

void jr_constraint_free(jr_constraint *c);

/* The regex (caller frees) over the compact JSON texts (an optional space after ':' and ',') that a
 * JSON schema accepts, for jr_constraint_regex: object (properties in order, required, or
 * additionalProperties alone), string (min/maxLength; with maxLength no escape sequences), integer, number, boolean, null, array
 * (items, min/maxItems), enum, const, anyOf. A keyword outside that subset fails with JR_EINVAL
 * naming its path, never ignored. */
jr_status jr_json_schema_regex(const json_t *schema, char **regex);

/* One sequence's progress through a constraint (the bytes emitted so far). */
typedef struct jr_cstate {
    char *buf;
    size_t len, cap;
    int node;    /* choice: current trie node */
    void *match; /* regex: PCRE2 match data; automaton: its state and a scratch copy; owned */
    void *mctx;  /* regex: PCRE2 match context (the match limit), owned */
    int failed;  /* regex: the last check hit its limit */
} jr_cstate;

/* The most one jr_constraint_mask may take (seconds) before it fails. */
#define JR_CONSTRAINT_STEP_SECONDS 1.0

/* Starts a sequence at the empty output. */
jr_status jr_cstate_init(jr_cstate *s, const jr_constraint *c);
void jr_cstate_free(jr_cstate *s);

/* Fills allowed[0..v->n) with 1 for each token that keeps the output valid and sets *complete
 * when the output so far is itself accepted (the caller may then allow end-of-sequence). Returns
 * the number of allowed tokens, or -1 (message set) when a regex check hit PCRE2's match limit
 * (which grows with the output's length squared: catastrophic backtracking fails within a few
 * tokens) or the whole mask took more than JR_CONSTRAINT_STEP_SECONDS. */
int jr_constraint_mask(const jr_constraint *c, jr_cstate *s, uint8_t *allowed, int *complete);

/* Appends token `tok` to the output. Fails with JR_EINVAL (state unchanged) when the token is
 * not allowed. */
jr_status jr_constraint_advance(const jr_constraint *c, jr_cstate *s, int32_t tok);

#endif
