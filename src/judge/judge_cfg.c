/* judge_cfg.c - the judge's table of options (judge.*); protocols add their judge.NAME.* rows here */
#include "judgerl/judge.h"

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
    {"judge.cache", JR_CFG_ANY, "true", "true (~/.cache/judgerl/judge.sqlite, or $JUDGERL_CACHE_DIR/judge.sqlite), false, or the path of an SQLite file", NULL, NULL, 0, 0},
    {"judge.max_unscored_frac", JR_CFG_FLOAT, "0.1", "stop cleanly when more than this share of rows (grade) or of a step's samples (train) is unscored", NULL, NULL, 0, 1},
    {"judge.seed", JR_CFG_INT, "0", "seed of the retry jitter", NULL, NULL, 0, 0},
    /* pointwise protocol */
    {"judge.pointwise.scale", JR_CFG_INT, "5", "score range 1..scale: 5 (Prometheus absolute) or 10", NULL, NULL, 2, 100},
    {"judge.pointwise.system", JR_CFG_STRING, "You are a fair judge assistant tasked with providing clear, objective feedback based on specific criteria, ensuring each assessment reflects the absolute standards set for performance.", "system message of each pointwise call (empty = none)", NULL, NULL, 0, 0},
    {"judge.pointwise.normalize", JR_CFG_BOOL, "false", "reward = (score - 1) / (scale - 1) instead of the raw score", NULL, NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};
