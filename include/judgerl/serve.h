/* serve.h - OpenAI-compatible HTTP server (libmicrohttpd): request parsing, continuous batching, SSE streaming */
#ifndef JUDGERL_SERVE_H
#define JUDGERL_SERVE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#include "judgerl/generate.h"
#include "judgerl/status.h"
#include "judgerl/textgen.h"

/* ---- requests ------------------------------------------------------------------------------- */

/* Limits a request is checked against (the server's flags). */
typedef struct jr_serve_limits {
    int max_n;          /* n <= this (the --parallel slots) */
    int max_tokens;     /* max_tokens / max_completion_tokens <= this (--max-tokens) */
    int max_stop;       /* number of stop strings */
    int max_choices;    /* entries of guided_choice */
} jr_serve_limits;

/* A parsed completion request (POST /v1/chat/completions or /v1/completions). Strings point into
 * `root` (owned). Absent numbers keep the defaults set by jr_serve_parse_request. */
typedef struct jr_serve_req {
    int chat;                 /* 1: chat completions, 0: completions */
    json_t *root;             /* the parsed body (owned) */
    const char *model;        /* NULL when absent */
    int n_msgs;               /* chat: messages (role, content) */
    const char **roles;
    char **contents;          /* owned: text parts joined */
    const char *prompt;       /* completions: a text prompt, or NULL when given as token ids */
    int32_t *prompt_ids;      /* completions: prompt as token ids (owned) */
    int n_prompt_ids;
    int n;
    int max_tokens;           /* 0 when absent (the server picks the limit) */
    float temperature, top_p, min_p;
    int top_k;
    int has_seed;
    uint64_t seed;
    int n_stop;
    const char **stop;        /* owned array of borrowed strings */
    int stream, include_usage;
    int logprobs;             /* chat: logprobs true; completions: logprobs given (0..20) */
    int top_logprobs;         /* alternatives per token */
    int n_choices;
    const char **choices;     /* guided_choice (owned array of borrowed strings) */
    const char *regex;        /* guided_regex, or regex_owned */
    char *regex_owned;        /* the regex of a JSON schema (structured_outputs.json, guided_json, response_format) */
    int n_bias;
    int32_t *bias_ids;        /* logit_bias (owned) */
    float *bias_vals;
    int ignore_eos;
    int n_stop_ids;
    int32_t *stop_ids;        /* stop_token_ids (owned) */
} jr_serve_req;

/* Parses and checks a request body (len bytes, need not be NUL-terminated) for the chat
 * (chat = 1) or completions endpoint against `lim`. On failure returns JR_EINVAL with a message
 * naming the field ("max_tokens: must be a positive integer, got -1") and leaves *r empty; the
 * HTTP status is then 400. Defaults: n 1, temperature 1, top_p 1, top_k 0, min_p 0. */
jr_status jr_serve_parse_request(jr_serve_req *r, int chat, const char *body, size_t len, const jr_serve_limits *lim);
void jr_serve_req_free(jr_serve_req *r);

/* ---- the server ----------------------------------------------------------------------------- */

/* What the server generates with, set once the model is loaded (jr_server_set_backend). The
 * tokenizer is reached through callbacks so the server needs no tokenizer type. */
typedef struct jr_serve_backend {
    jr_lm *lm;
    jr_gen_vocab vocab;
    void *tok;
    /* Encodes completions prompt text to ids (*ids malloc'ed). */
    jr_status (*encode)(void *tok, const char *text, size_t len, int32_t **ids, int *n);
    /* Renders chat messages with the chat template (generation prompt added) and encodes them. */
    jr_status (*encode_chat)(void *tok, int n, const char *const *roles, const char *const *contents, int32_t **ids,
                             int *n_ids);
    /* What answers (jr_textgen_fingerprint: weights + tokenizer + chat template), reported as
     * judgerl_fingerprint in /v1/models so judge clients key their caches by it; may be NULL. */
    const char *fingerprint;
} jr_serve_backend;

typedef struct jr_serve_opts {
    const char *host;         /* "127.0.0.1" */
    int port;                 /* 0 = pick a free port (see jr_server_port) */
    const char *api_key;      /* NULL = no auth; else "Authorization: Bearer <key>" on /v1/ */
    const char *model_name;   /* the served model name (in responses) */
    const char *const *aliases; /* more names requests may use, listed by /v1/models too (vLLM's --served-model-name A B) */
    int n_aliases;
    int parallel;             /* decode slots shared by all requests */
    int max_tokens;           /* a request's max_tokens <= this; 0 = the context */
    int max_queue;            /* requests waiting beyond the slots before 429 */
    size_t max_body;          /* bytes; larger bodies get 413 */
    int max_connections;      /* 512 */
    int max_per_client;       /* connections of one client address still sending their first request (max_connections / 2) */
    double header_timeout;    /* s to receive a request's headers, from the connection or the previous request (10) */
    double body_timeout;      /* s to receive a request's body once its headers are in (30) */
    double request_timeout;   /* s from arrival to the last token; then 504 and the request is cancelled (0 = none) */
    uint64_t seed;            /* streams of requests without a seed */
    int prefill_chunk;        /* prompt tokens per step when the lm batches prompts (0 = JR_GEN_PREFILL_CHUNK) */
    double itl_target;        /* jr_gen_set_itl_target: fewer prompt tokens per step while sequences decode
                               * (their step time within ~itl_target x a decode-only step); 0 = the fixed chunk */
} jr_serve_opts;

typedef struct jr_server jr_server;

/* Starts listening (answering /health with 503 until a backend is set). On failure *out is NULL
 * and the message names the address. */
jr_status jr_server_start(jr_server **out, const jr_serve_opts *opts);
/* The bound port (useful with port 0). */
int jr_server_port(const jr_server *s);
/* Sets the backend (borrowed until jr_server_stop) and starts the batching thread: from now on
 * /health answers 200 and completions are served. */
jr_status jr_server_set_backend(jr_server *s, const jr_serve_backend *b);
/* Stops taking requests (new ones get 503 at once), waits up to timeout_s (the drain timeout) for
 * queued and running ones to finish, then cancels what is left (503 to their clients), closes
 * every connection, stops the threads and frees the server. */
void jr_server_stop(jr_server *s, double timeout_s);

/* ---- a server over a model directory (`judgerl serve`) ---- */

typedef struct jr_serve_model_opts {
    jr_serve_opts serve;   /* the server (serve.parallel: the KV-cache slots too) */
    const char *model;     /* the HF model directory (or checkpoint) */
    const char *tokenizer; /* auto | byte | PATH */
    int ctx;               /* positions per slot; 0: the model's */
    jr_kv_opts kv;         /* how the model computes (weights, KV cache, determinism) */
    const char *port_file; /* or NULL: gets the port (one line, atomically) once requests are served */
    FILE *log;             /* progress lines "PREFIXlistening on ...", "PREFIXready: ..." (NULL: none) */
    const char *prefix;
} jr_serve_model_opts;

typedef struct jr_serve_model jr_serve_model;

/* Checks o->model is a model directory, starts listening (503 on /health while loading), loads the
 * model and tokenizer, serves them, then writes the port file. On error nothing is left running. */
jr_status jr_serve_model_start(jr_serve_model **out, const jr_serve_model_opts *o);
/* jr_server_stop with the drain timeout, then frees the model. NULL is fine. */
void jr_serve_model_stop(jr_serve_model *m, double drain_s);

#endif
