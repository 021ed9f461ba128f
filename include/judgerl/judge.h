/* judge.h - LLM judge client: pluggable protocols over concurrent, rate-limited, cached, retried
 * OpenAI-compatible requests; a sample that cannot be judged is UNSCORED, never 0 */
#ifndef JUDGERL_JUDGE_H
#define JUDGERL_JUDGE_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "judgerl/config.h"
#include "judgerl/status.h"

/* The judge's options (judge.*), documented in docs/JUDGE.md. Protocols add their own rows here
 * under judge.NAME.* (e.g. judge.rubric.batch) and their fields to jr_judge_opts. */
extern const jr_cfg_field jr_judge_cfg[];

/* ===================================== options =========================================== */
/* Everything the client and the protocols read, typed. Strings and JSON values are borrowed
 * (from the config for jr_judge_opts_from_config, static storage for jr_judge_opts_init): keep
 * them alive until the last jr_judge_add_protocol. A NULL string means "none" / "shipped". */

#define JR_JUDGE_MAX_ENDPOINTS 64

/* What kind of server an endpoint is (judge.endpoints[].kind): decides how judge.constraint is
 * sent and the defaults of stream and concurrency (docs/JUDGE.md, "Servers"). */
typedef enum {
    JR_KIND_AUTO = 0, /* detected at open from /v1/models, /version, /props, /api/version */
    JR_KIND_VLLM,
    JR_KIND_LLAMACPP,
    JR_KIND_SGLANG,
    JR_KIND_OLLAMA,
    JR_KIND_OPENAI,
    JR_KIND_JUDGERL,
    JR_KIND_UNKNOWN   /* detection found nothing it knows: a generic OpenAI-compatible server */
} jr_server_kind;

typedef struct jr_judge_endpoint_opts {
    const char *url;   /* base URL of an OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1 */
    const char *model; /* model name sent in each request */
    int concurrency;   /* requests in flight on it (0 = jr_judge_opts.concurrency) */
    jr_server_kind kind;
    int max_connections; /* HTTP connections to it (0 = its concurrency); in flight never exceeds it */
} jr_judge_endpoint_opts;

typedef struct jr_judge_opts {
    const char *protocol;      /* judge.protocol: the default protocol (handle 0) */
    const char *template_path; /* judge.template (pointwise), NULL = the shipped one */
    int chat;                  /* judge.api: 1 = chat/completions, 0 = completions */
    int n_endpoints;
    jr_judge_endpoint_opts endpoints[JR_JUDGE_MAX_ENDPOINTS];
    const char *api_key_env;   /* name of the variable holding the key (never the key), or NULL */
    int stream;                /* 1, 0, or -1 = auto (1 when every endpoint is llama.cpp) */
    const json_t *constraint;  /* judge.constraint: {choice: [...]} | {regex: "..."} | {json_schema: {...}}, or NULL */
    double temperature;
    int max_tokens;
    const json_t *extra_body;  /* a JSON object merged into every body, or NULL */
    double timeout_s, connect_timeout_s;
    int max_attempts, parse_attempts;
    double backoff_base_s, backoff_max_s, retry_after_max_s;
    int concurrency;           /* per endpoint; 0 = by kind: llama.cpp's total_slots + 1, else 64 */
    double rpm, tpm;           /* per endpoint; 0 = unlimited */
    int ranks, rank;           /* data-parallel training (dist.h): the ranks sharing the endpoints divide
                                  concurrency, rpm and tpm by ranks (a concurrency below the ranks is an error), and each rank
                                  keeps its own default cache file (judge_cache.rank-R.sqlite; an explicit
                                  cache_path gets .rank-R); 0 or 1: one process */
    int cache;                 /* 0: no cache; 1: cache_path, else cache_dir/judge_cache.sqlite */
    const char *cache_path;    /* an explicit SQLite file (judge.cache: PATH): may be shared by runs */
    const char *cache_dir;     /* where the default cache lives: the run's directory (run.out_dir,
                                  filled by jr_judge_opts_from_config when the config has it) or the
                                  output's (judgerl grade); NULL with no cache_path: no cache */
    double max_unscored_frac;  /* callers stop when more than this share is unscored */
    uint64_t seed;             /* retry jitter */
    const char *cfg_dir;       /* directory of relative template paths; NULL: source's directory */
    const char *source;        /* the config's name, for messages (may be NULL) */
    /* Called with one line for each warning (the server's model id differs from the configured
     * name, ...), from jr_judge_open_opts; NULL: written to stderr as "judgerl: warning: ...". */
    void (*on_warning)(void *ud, const char *msg);
    void *warning_ud;
    /* protocols (judge.NAME.*) */
    struct { int scale, normalize; const char *system; } pointwise;
    struct { const char *template_path, *system; double correct, incorrect; int shortcircuit; } reference;
    struct { int batched, fallback, not_present, clip_sample; const char *template_path, *batch_template; } rubric;
    struct { const char *template_path, *system, *other_field; int swap; double win, tie, loss; } pairwise;
    struct {
        const char *template_path, *system;
        const json_t *labels, *values; /* JSON lists: strings; numbers ([] = 1 for the first label) */
        int confidence;                /* 0 auto, 1 logprobs, 2 verbal */
        int top_logprobs;
        double threshold;
        double max_logprob_gap;        /* chosen token this far below the best: logprobs_unreliable */
        int accept_unreliable;         /* 1: score unreliable verdicts with confidence null */
    } label;
    struct { const char *template_path, *system; int all_pass; } verif;
} jr_judge_opts;

/* The tables' defaults (no endpoints). */
void jr_judge_opts_init(jr_judge_opts *o);
/* Fills o from a config loaded with jr_judge_cfg (and jr_protocols_cfg: without it the protocol
 * fields keep their defaults). cache_dir is left NULL. Fails naming a key the config lacks. */
jr_status jr_judge_opts_from_config(jr_judge_opts *o, const jr_config *c);
/* What opening a judge on o would refuse in the config before any request: no endpoint, a URL
 * that is not http(s), a missing or differing model (the key in judge.api_key_env is the
 * environment's, checked at open). src names the config in messages. */
jr_status jr_judge_opts_check(const jr_judge_opts *o, const char *src);

/* ================================ protocol interface ==================================== */
/* A protocol turns one row (a JSON object: id, prompt, response, reference, rubric, ...) into
 * one or more judge calls, parses each call's response, and combines the parsed results into a
 * score, or UNSCORED with a reason. The client does everything else: routing, rate limits,
 * retries, the cache, streaming, reasoning stripping.
 *
 * Life of a sample:  build(row) -> calls round 0 -> [each call: request, parse, retry on
 * JR_PARSE_RETRY up to judge.parse_attempts] -> combine(all results so far) -> SCORED | UNSCORED
 * | MORE (combine appended calls: another round, e.g. a batched rubric falling back to one call
 * per criterion) -> ... combine again with every result of every round. */

/* One request a protocol wants made. */
typedef struct jr_judge_call {
    json_t *messages; /* chat messages [{role, content}, ...]; owned. With judge.api=completions
                         the prompt is `prompt` when set, else the messages' contents joined
                         with blank lines. */
    char *prompt;     /* /v1/completions prompt text, owned, may be NULL */
    json_t *params;   /* request fields for this call only, merged over the config's (e.g.
                         {"logprobs": true, "top_logprobs": 5, "max_tokens": 1}); owned, may be NULL */
    char *tag;        /* the protocol's label for this call ("criterion 3", "order BA"), used in
                         reasons and in the result's detail; owned, may be NULL */
    json_t *constraint; /* this call's constraint in judge.constraint's form ({json_schema: ...},
                           {choice: [...]}, {regex: ...}), replacing judge.constraint for this call
                           (e.g. a batched rubric answer whose keys depend on the row); owned, may be NULL */
} jr_judge_call;

/* A growable list of calls (zero-initialise before use). */
typedef struct jr_judge_calls {
    jr_judge_call *v;
    int n, cap;
} jr_judge_calls;

/* Appends a call. Steals `messages` and `params` (either may be NULL), copies `tag` (may be
 * NULL). *out (may be NULL) points at the new element, valid until the next add. On error the
 * stolen references are released and the list is unchanged. */
jr_status jr_judge_calls_add(jr_judge_calls *c, json_t *messages, json_t *params, const char *tag, jr_judge_call **out);
/* Frees every call and the array; leaves c zeroed. */
void jr_judge_calls_free(jr_judge_calls *c);

/* What a call returned, as handed to parse(). Everything is borrowed for the duration of parse. */
typedef struct jr_judge_response {
    const char *text;          /* the answer with reasoning removed (<think>...</think> and any
                                  reasoning_content field never appear here) */
    const char *raw;           /* the answer as received (reasoning tags included) */
    const char *finish_reason; /* "stop", "length", ... ("" when the server gave none) */
    const json_t *logprobs;    /* when asked: [{"token", "logprob", "top_logprobs": [{"token",
                                  "logprob"}, ...]}, ...] for chat and completions alike; else NULL */
    int cached;                /* 1 when served from the cache */
    long total_tokens;         /* the server's usage.total_tokens; -1 when absent (and for cache hits) */
} jr_judge_response;

/* parse()'s verdict on one response. */
typedef enum {
    JR_PARSE_OK = 0,  /* *value (and optionally *detail) set */
    JR_PARSE_RETRY,   /* unparsable: ask again (a fresh request, the cache bypassed), up to
                         judge.parse_attempts responses per call; then the call fails */
    JR_PARSE_GIVE_UP  /* unparsable and asking again is pointless: the call fails now */
} jr_parse_rc;

/* One call's final result, as handed to combine(). */
typedef struct jr_call_result {
    int ok;            /* 1: parsed (value, detail valid); 0: failed (error says why) */
    double value;      /* the parsed number; its meaning is the protocol's */
    json_t *detail;    /* what parse() returned in *detail (owned by the result), may be NULL */
    char *error;       /* why the call failed: transport error, "HTTP 400: <server message>",
                          parse failure; NULL when ok; owned */
    int attempts;      /* HTTP requests made for this call (0 when the cache answered) */
    int cached;        /* 1 when the accepted response came from the cache */
    double latency_s;  /* first request -> result, including backoff */
} jr_call_result;

/* combine()'s verdict on a sample. */
typedef enum {
    JR_VERDICT_SCORED = 0, /* out->reward and out->scores set */
    JR_VERDICT_UNSCORED,   /* out->reason set: the sample has no reward (never 0) */
    JR_VERDICT_MORE        /* calls were appended to `more`: run them, then combine again */
} jr_verdict;

/* What combine() fills. The client zero-initialises it; combine() gives it new references. */
typedef struct jr_judge_outcome {
    double reward;   /* SCORED: the reward */
    json_t *scores;  /* SCORED: per-component scores {"name": number, ...}; may be NULL */
    json_t *detail;  /* optional: protocol detail written to outputs (feedback text, ...) */
    char *reason;    /* UNSCORED: why, one line (malloc'ed) */
} jr_judge_outcome;

/* A protocol: a table of functions with a name, registered in src/judge/protocol.c. */
typedef struct jr_protocol {
    const char *name; /* the judge.protocol value */
    /* Creates the protocol's state from the options (its fields of `o`, o->template_path, ...).
     * `cfg_dir` is the directory relative template paths start from, may be NULL.
     * On error *state is NULL and the message names the key or file. */
    jr_status (*open)(const jr_judge_opts *o, const char *cfg_dir, void **state);
    void (*close)(void *state);
    /* Appends round 0's calls for `row` (at least one). A row lacking what the protocol needs
     * is an error naming the field (the submit fails; nothing is queued). */
    jr_status (*build)(void *state, const json_t *row, jr_judge_calls *calls);
    /* Parses the response to calls->v[index]. On JR_PARSE_OK sets *value and optionally
     * *detail (a new reference); otherwise writes a one-line reason into why[why_len].
     * Threads: build() runs on the submitting thread while parse() and combine() run on the
     * judge's I/O thread, so the state must not change after open(). */
    jr_parse_rc (*parse)(void *state, const json_t *row, const jr_judge_call *call, int index,
                         const jr_judge_response *resp, double *value, json_t **detail, char *why, size_t why_len);
    /* Combines the results of every call so far (results[i] belongs to calls->v[i]). May append
     * calls to `calls` and return JR_VERDICT_MORE. */
    jr_verdict (*combine)(void *state, const json_t *row, jr_judge_calls *calls, const jr_call_result *results,
                          int n, jr_judge_outcome *out);
} jr_protocol;

/* The protocol named `name`, or NULL. */
const jr_protocol *jr_protocol_find(const char *name);
/* The registered names joined by '|' (for messages), static storage. */
const char *jr_protocol_names(void);

extern const jr_protocol jr_protocol_pointwise;

/* ---- helpers for protocols ---- */

/* Renders `tmpl`, replacing {{field}} with the row's field (strings as is, numbers and other
 * JSON compactly; a missing or null field renders as ""), {{#field}}...{{/field}} with its
 * body only when the field is present, non-null and not "", and {{^field}}...{{/field}} only
 * when it is not (sections do not nest). Returns a malloc'ed string in *out; on error (an
 * unclosed tag) *out is NULL. */
jr_status jr_template_render(const char *tmpl, const json_t *row, char **out);

/* Reads a template file: `path` as given, else relative to `cfg_dir`, else relative to the
 * directory of the judgerl executable's repository (../../ from build/rel/judgerl). */
jr_status jr_template_load(const char *path, const char *cfg_dir, char **out);

/* Removes reasoning from a model's answer: <think>...</think> blocks, and an unclosed <think>
 * with everything after it; a lone leading "...</think>" (templates that open the tag in the
 * prompt) drops everything before it. Returns a new malloc'ed string (NULL on ENOMEM). */
char *jr_judge_strip_reasoning(const char *text);

/* Finds the verdict "[RESULT] n" in `text`, lenient about wrapping (code fences, markdown
 * bold, "[RESULT]: 4", "[RESULT] 4/5", prose around it) and strict about the range: the last
 * [RESULT] marker wins and its number must be an integer in [lo, hi]. Returns 1 and *n when
 * found, else 0 with a reason in why[why_len]. */
int jr_judge_parse_result(const char *text, int lo, int hi, int *n, char *why, size_t why_len);

/* ===================================== client ============================================ */

typedef struct jr_judge jr_judge;

/* A finished sample. */
typedef enum { JR_SCORE_OK = 0, JR_SCORE_UNSCORED = 1 } jr_score_status;

typedef struct jr_judge_result {
    uint64_t ticket;        /* what submit returned */
    void *user;             /* what submit was given */
    char *id;               /* the row's id as text (owned) */
    jr_score_status status;
    double reward;          /* JR_SCORE_OK only; NAN when unscored */
    json_t *scores;         /* per-component scores, or NULL (owned) */
    json_t *detail;         /* protocol detail, or NULL (owned) */
    char *error;            /* why unscored (owned); NULL when ok */
    int attempts;           /* HTTP requests made for the sample, every call and retry */
    int n_calls;            /* calls the protocol made */
    int n_cached;           /* calls answered by the cache */
    double latency_s;       /* submit -> result */
} jr_judge_result;

/* Frees what a result owns; leaves it zeroed. */
void jr_judge_result_free(jr_judge_result *r);

/* Counters, all since open. */
typedef struct jr_judge_stats {
    uint64_t submitted, done, scored, unscored;
    uint64_t requests;       /* HTTP requests sent */
    uint64_t retries;        /* of which were retries (transient failure or parse failure) */
    uint64_t cache_lookups, cache_hits;
    int in_flight;           /* requests on the wire now */
    int queued;              /* calls waiting (rate limit, concurrency, backoff) */
    double unscored_frac;    /* unscored / done (0 when none done) */
} jr_judge_stats;

/* Opens a judge: opens the protocol (o->protocol), the cache, reads the API key from the variable
 * named by o->api_key_env (the key is kept in memory only: never printed, logged, cached or
 * written) and starts one I/O thread that drives every request through libcurl's multi
 * interface. `o` is copied; what it borrows must live until the last jr_judge_add_protocol.
 * On error *out is NULL. */
jr_status jr_judge_open_opts(jr_judge **out, const jr_judge_opts *o);

/* Convenience for commands: jr_judge_opts_from_config, then jr_judge_open_opts. `cfg` must live
 * until the last jr_judge_add_protocol. */
jr_status jr_judge_open(jr_judge **out, const jr_config *cfg);

/* Opens another protocol on the same client (same endpoints, limits and cache); *proto is the
 * handle for jr_judge_submit_proto. The default protocol (judge.protocol) is handle 0. Call
 * before the first submit. */
jr_status jr_judge_add_protocol(jr_judge *j, const char *name, int *proto);

/* Same with a protocol given by its table rather than its registered name (a protocol defined
 * by the caller, e.g. in reward/ or a test). `p` must outlive the judge. */
jr_status jr_judge_add_protocol_impl(jr_judge *j, const jr_protocol *p, int *proto);

/* Queues a row for judging with the default protocol and returns at once: the row is copied,
 * its calls are built now (a row the protocol cannot use fails here, naming the field, and
 * nothing is queued) and sent by the I/O thread as capacity allows. The row needs an "id"
 * (string or integer). `user` is handed back in the result. Thread-safe. */
jr_status jr_judge_submit(jr_judge *j, const json_t *row, void *user, uint64_t *ticket);
jr_status jr_judge_submit_proto(jr_judge *j, int proto, const json_t *row, void *user, uint64_t *ticket);

/* Moves up to `max` finished samples into out[] in completion order, waiting up to timeout_ms
 * (0: do not wait, <0: wait until at least one is done or nothing is pending) for the first.
 * Returns how many were written. The caller frees each with jr_judge_result_free. */
int jr_judge_collect(jr_judge *j, jr_judge_result *out, int max, int timeout_ms);

/* Samples submitted and not yet collected. */
uint64_t jr_judge_pending(jr_judge *j);

/* A snapshot of the counters. */
void jr_judge_stats_get(jr_judge *j, jr_judge_stats *s);

/* When a request was refused in a way no retry can fix (HTTP 401, 403, 404: wrong key, model
 * or URL), the message ("http://.../chat/completions: HTTP 401: <server message>"), else NULL.
 * Valid until close. Callers should stop: every other request will fail the same way. */
const char *jr_judge_fatal(jr_judge *j);

/* The judge's identity as its cache keys carry it: "fingerprint:HEX" (judgerl serve), or per
 * endpoint "URL id=.. root=.. max_model_len=.." from GET /models, then the model name. Valid
 * until close. */
const char *jr_judge_identity_text(const jr_judge *j);

/* The smallest context (max_model_len) an endpoint reported in /models, 0 when unknown. */
long jr_judge_max_model_len(const jr_judge *j);

/* ---- why samples are unscored -------------------------------------------------------------- */

/* Counts unscored reasons so that every message about unscored rows can say the last one and the
 * most frequent one. Reasons are grouped with their digits masked ("HTTP 400: ... 812 tokens" and
 * "... 901 tokens" count as one), the first text of a group is kept. Not thread-safe. */
typedef struct jr_reason_tally jr_reason_tally;
jr_reason_tally *jr_reason_tally_new(void);          /* NULL on ENOMEM */
void jr_reason_tally_add(jr_reason_tally *t, const char *reason);
long jr_reason_tally_count(const jr_reason_tally *t); /* reasons added */
/* "last: R; most frequent (k of n): R2" ("" when none); valid until the next add or free. */
const char *jr_reason_tally_summary(jr_reason_tally *t);
/* {"unscored": n, "last": R, "most_frequent": {"reason": R2, "count": k}, "top": [{reason, count}, ...]} */
json_t *jr_reason_tally_json(const jr_reason_tally *t);
void jr_reason_tally_free(jr_reason_tally *t);
/* The endpoints: how many, and one line per endpoint for the log ("http://.../chat/completions:
 * llamacpp b4759 (GET /v1/models: owned_by llamacpp; GET /props: total_slots 1, ...); 2 in flight,
 * 2 connections, streaming"), valid until close. Callers log it once after open. */
int jr_judge_n_endpoints(const jr_judge *j);
const char *jr_judge_endpoint_info(const jr_judge *j, int i);
/* Requests in flight at most, over every endpoint (each endpoint's concurrency after its kind's
 * default and its max_connections). */
int jr_judge_capacity(const jr_judge *j);

/* Stops the I/O thread (requests in flight are abandoned), closes the cache and frees
 * everything, uncollected results included. Safe on NULL. */
void jr_judge_close(jr_judge *j);

#endif
