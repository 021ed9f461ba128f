/* judge_cfg.c - the judge's table of options (judge.*) and its typed options (jr_judge_opts) */
#include <pthread.h>
#include <string.h>

#include "judge/dialect.h"
#include "judgerl/dist.h"
#include "judgerl/judge.h"
#include "judgerl/protocols.h"

static const jr_cfg_field endpoint_cfg[] = {
    {"url", JR_CFG_STRING, NULL, "base URL of an OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1", NULL, NULL, 0, 0},
    {"model", JR_CFG_STRING, NULL, "model name sent in each request (part of the cache key)", NULL, NULL, 0, 0},
    {"concurrency", JR_CFG_INT, "0", "requests in flight on this endpoint (0 = judge.concurrency)", NULL, NULL, 0, 65536},
    {"kind", JR_CFG_ENUM, "auto", "the server: auto (detected from /v1/models, /version, /props, /api/version), vllm, llamacpp, sglang, ollama, openai, judgerl; decides how judge.constraint is sent and the defaults of judge.stream and judge.concurrency", "auto|vllm|llamacpp|sglang|ollama|openai|judgerl", NULL, 0, 0},
    {"max_connections", JR_CFG_INT, "0", "HTTP connections to this endpoint (CURLMOPT_MAX_HOST_CONNECTIONS); requests in flight never exceed it (0 = the endpoint's concurrency)", NULL, NULL, 0, 65536},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

const jr_cfg_field jr_judge_cfg[] = {
    {"judge.protocol", JR_CFG_STRING, "pointwise", "how a row becomes judge calls and a score (pointwise; more protocols register in src/judge/protocol.c)", NULL, NULL, 0, 0},
    {"judge.template", JR_CFG_STRING, "null", "prompt template file; null = the protocol's shipped template under templates/", NULL, NULL, 0, 0},
    {"judge.api", JR_CFG_ENUM, "chat", "chat: POST {url}/chat/completions; completions: POST {url}/completions", "chat|completions", NULL, 0, 0},
    {"judge.endpoints", JR_CFG_OBJLIST, "[]", "servers of one judge [{url, model, concurrency}]; requests go to the least loaded", NULL, endpoint_cfg, 0, 0},
    {"judge.api_key_env", JR_CFG_STRING, "null", "name of the environment variable holding the API key (never the key); null = no Authorization header", NULL, NULL, 0, 0},
    {"judge.stream", JR_CFG_ANY, "auto", "ask for server-sent events: true, false, or auto (true for llama.cpp, whose plain answers are slow; false otherwise)", NULL, NULL, 0, 0},
    {"judge.constraint", JR_CFG_ANY, "null", "constrain the judge's answers: {choice: [...]}, {regex: \"...\"} or {json_schema: {...}}, sent in each server kind's own fields; an answer outside it is a parse failure", NULL, NULL, 0, 0},
    {"judge.temperature", JR_CFG_FLOAT, "0.0", "sampling temperature of the judge", NULL, NULL, 0, 2},
    {"judge.max_tokens", JR_CFG_INT, "512", "max_tokens of each judge answer", NULL, NULL, 1, 1e7},
    {"judge.extra_body", JR_CFG_ANY, "{}", "fields merged into every request body, e.g. {chat_template_kwargs: {enable_thinking: false}}", NULL, NULL, 0, 0},
    {"judge.timeout_s", JR_CFG_FLOAT, "60.0", "total time allowed for one request (connect + answer)", NULL, NULL, 0.001, 1e6},
    {"judge.connect_timeout_s", JR_CFG_FLOAT, "10.0", "time allowed to connect", NULL, NULL, 0.001, 1e6},
    {"judge.max_attempts", JR_CFG_INT, "5", "HTTP attempts per call on transient failures (connect errors, timeouts, resets, 408, 409, 429, 5xx, unparsable bodies)", NULL, NULL, 1, 1000},
    {"judge.parse_attempts", JR_CFG_INT, "3", "answers asked per call when the verdict cannot be parsed; then the sample is unscored", NULL, NULL, 1, 100},
    {"judge.backoff_base_s", JR_CFG_FLOAT, "1.0", "retry n waits uniform(0, min(backoff_max_s, backoff_base_s * 2^(n-1))) (full jitter)", NULL, NULL, 0, 1e6},
    {"judge.backoff_max_s", JR_CFG_FLOAT, "60.0", "cap of the backoff before jitter", NULL, NULL, 0, 1e6},
    {"judge.retry_after_max_s", JR_CFG_FLOAT, "300.0", "longest Retry-After honoured (a retry waits at least the server's Retry-After, up to this)", NULL, NULL, 0, 1e6},
    {"judge.concurrency", JR_CFG_INT, "0", "requests in flight per endpoint; 0 = auto: llama.cpp's total_slots + 1 (its HTTP threads are -np + 2), else 64", NULL, NULL, 0, 65536},
    {"judge.rpm", JR_CFG_FLOAT, "0.0", "requests per minute per endpoint (token bucket); 0 = unlimited", NULL, NULL, 0, 1e9},
    {"judge.tpm", JR_CFG_FLOAT, "0.0", "tokens per minute per endpoint (token bucket: prompt bytes/4 + max_tokens, corrected by the server's usage); 0 = unlimited", NULL, NULL, 0, 1e12},
    {"judge.cache", JR_CFG_ANY, "true", "true: judge_cache.sqlite in the run's directory (train) or beside the output (grade); false; or the path of an SQLite file (a cache shared across runs). Keys carry the judge's identity (docs/JUDGE.md)", NULL, NULL, 0, 0},
    {"judge.max_unscored_frac", JR_CFG_FLOAT, "0.1", "stop cleanly when more than this share of rows (grade) or of a step's samples (train) is unscored", NULL, NULL, 0, 1},
    {"judge.seed", JR_CFG_INT, "0", "seed of the retry jitter", NULL, NULL, 0, 0},
    /* pointwise protocol */
    {"judge.pointwise.scale", JR_CFG_INT, "5", "score range 1..scale: 5 (Prometheus absolute) or 10", NULL, NULL, 2, 100},
    {"judge.pointwise.system", JR_CFG_STRING, "You are a fair judge assistant tasked with providing clear, objective feedback based on specific criteria, ensuring each assessment reflects the absolute standards set for performance.", "system message of each pointwise call (empty = none)", NULL, NULL, 0, 0},
    {"judge.pointwise.normalize", JR_CFG_BOOL, "false", "reward = (score - 1) / (scale - 1) instead of the raw score", NULL, NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

/* ---- typed options ------------------------------------------------------------------------- */

/* The judge.* fields of o from c. */
static void fill_judge(jr_judge_opts *o, const jr_config *c) {
    o->source = c->source;
    o->protocol = jr_cfg_str(c, "judge.protocol");
    o->template_path = jr_cfg_str(c, "judge.template");
    const char *api = jr_cfg_str(c, "judge.api");
    o->chat = !api || strcmp(api, "completions");
    json_t *eps = jr_cfg_json(c, "judge.endpoints");
    o->n_endpoints = 0;
    for (size_t i = 0; i < json_array_size(eps) && i < JR_JUDGE_MAX_ENDPOINTS; i++, o->n_endpoints++) {
        json_t *e = json_array_get(eps, i);
        o->endpoints[i].url = json_string_value(json_object_get(e, "url"));
        o->endpoints[i].model = json_string_value(json_object_get(e, "model"));
        o->endpoints[i].concurrency = (int)json_integer_value(json_object_get(e, "concurrency"));
        int kind = jr_server_kind_parse(json_string_value(json_object_get(e, "kind")));
        o->endpoints[i].kind = kind > 0 ? (jr_server_kind)kind : JR_KIND_AUTO;
        o->endpoints[i].max_connections = (int)json_integer_value(json_object_get(e, "max_connections"));
    }
    if (json_array_size(eps) > JR_JUDGE_MAX_ENDPOINTS) o->n_endpoints = -1; /* reported by the caller */
    o->api_key_env = jr_cfg_str(c, "judge.api_key_env");
    json_t *sv = jr_cfg_json(c, "judge.stream"); /* true, false or "auto"; anything else: refused at open */
    o->stream = json_is_boolean(sv) ? json_is_true(sv) : json_is_string(sv) && !strcmp(json_string_value(sv), "auto") ? -1 : -2;
    json_t *cv = jr_cfg_json(c, "judge.constraint");
    o->constraint = json_is_null(cv) ? NULL : cv;
    o->temperature = jr_cfg_float(c, "judge.temperature");
    o->max_tokens = (int)jr_cfg_int(c, "judge.max_tokens");
    json_t *eb = jr_cfg_json(c, "judge.extra_body");
    o->extra_body = json_is_null(eb) ? NULL : eb;
    o->timeout_s = jr_cfg_float(c, "judge.timeout_s");
    o->connect_timeout_s = jr_cfg_float(c, "judge.connect_timeout_s");
    o->max_attempts = (int)jr_cfg_int(c, "judge.max_attempts");
    o->parse_attempts = (int)jr_cfg_int(c, "judge.parse_attempts");
    o->backoff_base_s = jr_cfg_float(c, "judge.backoff_base_s");
    o->backoff_max_s = jr_cfg_float(c, "judge.backoff_max_s");
    o->retry_after_max_s = jr_cfg_float(c, "judge.retry_after_max_s");
    o->concurrency = (int)jr_cfg_int(c, "judge.concurrency");
    o->rpm = jr_cfg_float(c, "judge.rpm");
    o->tpm = jr_cfg_float(c, "judge.tpm");
    o->ranks = jr_dist_size();
    o->rank = jr_dist_rank();
    json_t *cache = jr_cfg_json(c, "judge.cache");
    o->cache = !json_is_false(cache) && !json_is_null(cache);
    o->cache_path = json_string_value(cache);
    if (json_is_string(cache) && !json_string_length(cache)) o->cache_path = NULL;
    if (jr_cfg_has(c, "run.out_dir")) o->cache_dir = jr_cfg_str(c, "run.out_dir");
    o->max_unscored_frac = jr_cfg_float(c, "judge.max_unscored_frac");
    o->seed = (uint64_t)jr_cfg_int(c, "judge.seed");
    o->pointwise.scale = (int)jr_cfg_int(c, "judge.pointwise.scale");
    o->pointwise.normalize = jr_cfg_bool(c, "judge.pointwise.normalize");
    o->pointwise.system = jr_cfg_str(c, "judge.pointwise.system");
}

static int is(const jr_config *c, const char *key, const char *value) {
    const char *v = jr_cfg_str(c, key);
    return v && !strcmp(v, value);
}

/* The judge.NAME.* fields of the protocols in protocols.h. */
static void fill_protocols(jr_judge_opts *o, const jr_config *c) {
    o->reference.template_path = jr_cfg_str(c, "judge.reference.template");
    o->reference.system = jr_cfg_str(c, "judge.reference.system");
    o->reference.correct = jr_cfg_float(c, "judge.reference.correct");
    o->reference.incorrect = jr_cfg_float(c, "judge.reference.incorrect");
    o->reference.shortcircuit = jr_cfg_bool(c, "judge.reference.shortcircuit");
    o->rubric.batched = is(c, "judge.rubric.mode", "batched");
    o->rubric.template_path = jr_cfg_str(c, "judge.rubric.template");
    o->rubric.batch_template = jr_cfg_str(c, "judge.rubric.batch_template");
    o->rubric.fallback = jr_cfg_bool(c, "judge.rubric.fallback");
    o->rubric.not_present = is(c, "judge.rubric.on_failure", "not_present");
    o->rubric.clip_sample = jr_cfg_bool(c, "judge.rubric.clip_sample");
    o->pairwise.template_path = jr_cfg_str(c, "judge.pairwise.template");
    o->pairwise.system = jr_cfg_str(c, "judge.pairwise.system");
    o->pairwise.other_field = jr_cfg_str(c, "judge.pairwise.other_field");
    o->pairwise.swap = jr_cfg_bool(c, "judge.pairwise.swap");
    o->pairwise.win = jr_cfg_float(c, "judge.pairwise.win");
    o->pairwise.tie = jr_cfg_float(c, "judge.pairwise.tie");
    o->pairwise.loss = jr_cfg_float(c, "judge.pairwise.loss");
    o->label.template_path = jr_cfg_str(c, "judge.label.template");
    o->label.system = jr_cfg_str(c, "judge.label.system");
    o->label.labels = jr_cfg_json(c, "judge.label.labels");
    o->label.values = jr_cfg_json(c, "judge.label.values");
    o->label.confidence = is(c, "judge.label.confidence", "logprobs") ? 1 : is(c, "judge.label.confidence", "verbal") ? 2 : 0;
    o->label.top_logprobs = (int)jr_cfg_int(c, "judge.label.top_logprobs");
    o->label.threshold = jr_cfg_float(c, "judge.label.threshold");
    o->label.max_logprob_gap = jr_cfg_float(c, "judge.label.max_logprob_gap");
    o->label.accept_unreliable = is(c, "judge.label.unreliable", "accept");
    o->verif.template_path = jr_cfg_str(c, "judge.verif.template");
    o->verif.system = jr_cfg_str(c, "judge.verif.system");
    o->verif.all_pass = is(c, "judge.verif.rule_reduction", "all_pass");
}

static jr_config defaults;
static pthread_once_t defaults_once = PTHREAD_ONCE_INIT;
static void load_defaults(void) {
    const jr_cfg_field *const tables[] = {jr_judge_cfg, jr_protocols_cfg, NULL};
    if (jr_config_load_string(&defaults, "", "<judge defaults>", 0, NULL, tables)) memset(&defaults, 0, sizeof defaults);
}

void jr_judge_opts_init(jr_judge_opts *o) {
    memset(o, 0, sizeof *o);
    pthread_once(&defaults_once, load_defaults);
    fill_judge(o, &defaults);
    fill_protocols(o, &defaults);
    o->source = NULL;
    (void)jr_cfg_check(&defaults); /* the tables are ours: nothing can be missing */
}

jr_status jr_judge_opts_from_config(jr_judge_opts *o, const jr_config *c) {
    jr_judge_opts_init(o);
    fill_judge(o, c);
    if (jr_cfg_has(c, "judge.reference")) fill_protocols(o, c);
    jr_status st = jr_cfg_check(c);
    if (st) return st;
    if (o->n_endpoints < 0)
        return jr_fail(JR_EINVAL, "%s: judge.endpoints: more than %d endpoints", c->source, JR_JUDGE_MAX_ENDPOINTS);
    if (o->stream == -2) return jr_fail(JR_EINVAL, "%s: judge.stream: expected true, false or auto", c->source);
    return JR_OK;
}
