/* generate.h - batched generation with a KV cache: prefill, shared prompt prefix, decode steps, stop rules, log-probs */
#ifndef JUDGERL_GENERATE_H
#define JUDGERL_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "judgerl/constrain.h"
#include "judgerl/lm.h"
#include "judgerl/rng.h"
#include "judgerl/sampler.h"
#include "judgerl/status.h"

/* The tokenizer as the generator sees it: each token's bytes (NULL for special tokens, which add
 * no text), the tokenizer's size (ids at or past it are never sampled) and end-of-sequence ids. */
typedef struct jr_gen_vocab {
    jr_token_bytes tb; /* tb.n = the tokenizer's size */
    const int32_t *eos;
    int n_eos;
} jr_gen_vocab;

/* Settings of one request. Strings and arrays are borrowed until the request ends. */
typedef struct jr_gen_params {
    jr_sample_params sample;
    int max_tokens;           /* >= 1 */
    int has_seed;             /* 1: sequence i of the request uses jr_rng_seed2(seed, i) */
    uint64_t seed;
    int n_stop;               /* stop strings: the text ends before the first occurrence */
    const char *const *stop;
    int n_stop_ids;           /* extra token ids that end a sequence (kept in tokens, not in text) */
    const int32_t *stop_ids;
    int ignore_eos;
    const jr_constraint *constraint; /* NULL = unconstrained */
    int logprobs;             /* 1: record chosen-token log-probs (at T and raw) */
    int top_logprobs;         /* alternatives per token from the raw distribution (0..20) */
} jr_gen_params;

jr_gen_params jr_gen_params_default(void);

/* One finished (or running) completion. Arrays are owned by the request. */
typedef struct jr_gen_seq {
    int32_t *tokens;       /* every sampled id, the final eos or stop id included */
    int n_tokens;
    int n_text_tokens;     /* leading tokens that carry the text (the final eos/stop id excluded) */
    float *logprobs;       /* log softmax(logits / T)[token] (T = the sampling temperature; 1 when greedy) */
    float *raw_logprobs;   /* log softmax(logits)[token]: the raw distribution, as the API reports */
    int32_t *top_ids;      /* n_tokens * top_k alternatives from the raw distribution */
    float *top_lps;
    int top_k;
    char *text;            /* decoded bytes, NUL-terminated, stop string removed */
    size_t text_len;
    size_t *tok_off;       /* byte offset of each token's text in `text` (for completions' text_offset) */
    const char *finish_reason; /* NULL while running, then "stop" or "length" */
    size_t emitted;        /* bytes of text already handed to the event callback */
    int done;
} jr_gen_seq;

typedef struct jr_gen jr_gen;
typedef struct jr_gen_req jr_gen_req;

/* Called by jr_gen_step for each sequence that advanced: `delta` (len bytes) is new text safe to
 * show (never a split UTF-8 character, never a possible start of a stop string), `tok_from` ..
 * seq->n_text_tokens are the tokens added since the last call. Finished sequences are reported
 * once with seq->done set (the remaining text in delta). */
typedef void (*jr_gen_event_fn)(void *ud, jr_gen_req *req, int index, const jr_gen_seq *seq, const char *delta,
                                size_t len, int tok_from);

/* Opens a generator over `lm` and `vocab` (both borrowed). `seed` seeds the streams of requests
 * without their own seed. */
jr_status jr_gen_open(jr_gen **out, jr_lm *lm, const jr_gen_vocab *vocab, uint64_t seed);
/* Frees the generator and every request still in it. */
void jr_gen_close(jr_gen *g);

/* Prompt tokens prefilled per step (0 = whole prompts; the default, JR_GEN_PREFILL_CHUNK, keeps a long
 * prompt from stalling running sequences for its whole length). Only with an lm that sets
 * batch_prefill; otherwise each prompt is prefilled whole, on its own, as it arrives. */
#define JR_GEN_PREFILL_CHUNK 256
void jr_gen_set_prefill_chunk(jr_gen *g, int tokens);
/* Inter-token latency target while prompts are prefilled beside running sequences (batch_prefill
 * lms): with ratio > 1 a step takes only as many prompt tokens (at most the chunk; a fraction carries
 * over, so when one row costs more than the slack some steps take none) as keep
 * it within about `ratio` x the time of a step of the decode rows alone, both measured as the
 * generator runs (running means of the process's CPU time per step, so that waiting for a core on a
 * shared machine is not taken for the cost of prompt rows; a decode-only step re-measures the decode time when the decode
 * batch changes by over a quarter and every 32 steps). Tokens never change (the rows are
 * batch-invariant): only how a prompt is cut. 0 or <= 1: the fixed chunk (the default). */
void jr_gen_set_itl_target(jr_gen *g, double ratio);
/* Prompt tokens the last jr_gen_step put through the model (batch_prefill lms). */
int jr_gen_last_prefill_tokens(const jr_gen *g);

/* Slots not held by a request. */
int jr_gen_free_slots(const jr_gen *g);
/* Requests holding slots. */
int jr_gen_active(const jr_gen *g);

/* Adds a request of n completions of prompt[0..n_prompt) (copied). Needs n free slots (else
 * JR_EUNSUPPORTED when n > n_slots, JR_ECANCELED when merely busy: retry after a step) and
 * n_prompt + 1 <= max_ctx. Its prompt is prefilled once, on the next jr_gen_step. */
jr_status jr_gen_add(jr_gen *g, const int32_t *prompt, int n_prompt, int n, const jr_gen_params *p,
                     jr_gen_event_fn cb, void *ud, jr_gen_req **out);

/* One step: prefills new requests and advances every running sequence by one token, calling the
 * event callbacks. With jr_lm.batch_prefill the decode rows and up to the prefill
 * chunk of prompt tokens (of as many requests as fit) go through the model in one pass. A request whose sequences are all done stays until jr_gen_release. */
jr_status jr_gen_step(jr_gen *g);

/* The request's n sequences (valid until release), its prompt length and whether all are done. */
int jr_gen_req_n(const jr_gen_req *r);
const jr_gen_seq *jr_gen_req_seq(const jr_gen_req *r, int i);
int jr_gen_req_prompt_len(const jr_gen_req *r);
int jr_gen_req_done(const jr_gen_req *r);
/* NULL, or why the request failed (its constraint exceeded its per-step budget): the request's
 * sequences end with finish_reason "error"; the other requests are unaffected. */
const char *jr_gen_req_error(const jr_gen_req *r);
/* Stops a request early (its running sequences end with finish_reason "abort"). */
void jr_gen_cancel(jr_gen *g, jr_gen_req *r);
/* Frees a request and returns its slots. */
void jr_gen_release(jr_gen *g, jr_gen_req *r);

/* The simple batch API (GRPO, `judgerl generate`): n completions of each of n_prompts prompts,
 * run with continuous batching over the lm's slots. outs[p * n + i] receives completion i of
 * prompt p; free each with jr_gen_seq_free. Sequence i of prompt p uses seed stream
 * (params->seed + p, i) when params->has_seed. On failure nothing is left allocated in outs. */
jr_status jr_generate(jr_lm *lm, const jr_gen_vocab *vocab, int n_prompts, const int32_t *const *prompts,
                      const int *prompt_lens, int n, const jr_gen_params *params, jr_gen_seq *outs);

void jr_gen_seq_free(jr_gen_seq *s);

#endif
