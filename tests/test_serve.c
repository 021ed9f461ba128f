/* test_serve.c - the OpenAI-compatible server over real HTTP on 127.0.0.1 (libcurl as the client):
 * routes, response shapes, streaming, n, log-probs, guided choice, limits and error statuses */
#include "harness.h"

#include <curl/curl.h>
#include <jansson.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "judgerl/bytetok.h"
#include "judgerl/kvcache.h"
#include "judgerl/model.h"
#include "judgerl/serve.h"

/* ---- a tiny random model with the byte tokenizer -------------------------------------------- */

#define NV JR_BYTETOK_VOCAB
static char piece[256][2];
static const char *tok_bytes[NV];
static int32_t tok_len[NV];
static const int32_t eos_ids[1] = {JR_BYTETOK_EOS};

static jr_status bt_encode(void *tok, const char *text, size_t len, int32_t **ids, int *n) {
    (void)tok;
    size_t k;
    jr_status st = jr_bytetok_encode(text, len, 0, ids, &k);
    *n = (int)k;
    return st;
}

/* <|role|>content<|eos|> per message, then <|assistant|> (specials never parsed from content). */
static jr_status bt_chat(void *tok, int n, const char *const *roles, const char *const *contents, int32_t **ids, int *n_ids) {
    (void)tok;
    size_t total = 1;
    for (int i = 0; i < n; i++) total += strlen(contents[i]) + 2;
    int32_t *o = malloc(total * sizeof *o);
    if (!o) return JR_ENOMEM;
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        o[k++] = !strcmp(roles[i], "system") ? JR_BYTETOK_SYSTEM : !strcmp(roles[i], "user") ? JR_BYTETOK_USER : JR_BYTETOK_ASSISTANT;
        for (const unsigned char *p = (const unsigned char *)contents[i]; *p; p++) o[k++] = *p;
        o[k++] = JR_BYTETOK_EOS;
    }
    o[k++] = JR_BYTETOK_ASSISTANT;
    *ids = o;
    *n_ids = (int)k;
    return JR_OK;
}

static char base[64];

/* ---- HTTP with libcurl ---------------------------------------------------------------------- */

typedef struct { char *p; size_t n; } buf;

static size_t on_data(char *d, size_t sz, size_t nm, void *ud) {
    buf *b = ud;
    size_t k = sz * nm;
    b->p = realloc(b->p, b->n + k + 1);
    memcpy(b->p + b->n, d, k);
    b->n += k;
    b->p[b->n] = 0;
    return k;
}

static long http_timeout_ms = 60000;

static CURL *mk(const char *method, const char *path, const char *body, size_t blen, const char *auth, buf *out, struct curl_slist **h) {
    CURL *c = curl_easy_init();
    char url[256];
    snprintf(url, sizeof url, "%s%s", base, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (auth) *h = curl_slist_append(*h, auth);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, *h);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)blen);
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, http_timeout_ms);
    return c;
}

/* Sends one request; returns the status (-1 on transport failure); *resp (caller frees) the body. */
static int http(const char *method, const char *path, const char *body, const char *auth, char **resp) {
    buf b = {calloc(1, 1), 0};
    struct curl_slist *h;
    CURL *c = mk(method, path, body, body ? strlen(body) : 0, auth, &b, &h);
    long code = -1;
    if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (resp) *resp = b.p;
    else free(b.p);
    return (int)code;
}

static json_t *post_json(const char *path, const char *body, int *status) {
    char *r;
    *status = http("POST", path, body, NULL, &r);
    json_error_t e;
    json_t *j = json_loads(r, JSON_ALLOW_NUL, &e); /* a random model may write a NUL byte (\u0000) */
    if (!j) printf("  not JSON (%d): %.300s\n", *status, r);
    free(r);
    return j;
}

/* The content/text of choice i of a non-stream response. */
static const char *choice_text(json_t *j, int i, int chat) {
    json_t *ch = json_array_get(json_object_get(j, "choices"), (size_t)i);
    return json_string_value(chat ? json_object_get(json_object_get(ch, "message"), "content") : json_object_get(ch, "text"));
}

static jr_model model;
static jr_lm lm;
static jr_server *srv;
static int port;

/* The model's size and the server's deadlines; start() uses the small defaults. */
typedef struct { int hidden, layers, ctx, max_tokens; jr_serve_opts o; } server_shape;

static int start_shaped(int parallel, int max_queue, const char *key, const server_shape *sh) {
    for (int i = 0; i < 256; i++) { piece[i][0] = (char)i; tok_bytes[i] = piece[i]; tok_len[i] = 1; }
    jr_model_config c;
    jr_model_config_init(&c, JR_ARCH_LLAMA);
    c.hidden_size = sh->hidden; c.num_hidden_layers = sh->layers; c.num_attention_heads = 4; c.num_key_value_heads = 2;
    c.head_dim = sh->hidden / 4; c.intermediate_size = 2 * sh->hidden; c.vocab_size = NV + 2;
    c.max_position_embeddings = sh->ctx > 512 ? sh->ctx : 512;
    if (jr_model_init_random(&model, &c, 3, 0.2f)) return -1;
    if (jr_kv_lm_open(&lm, &model, parallel, sh->ctx)) return -1;
    jr_serve_opts o = sh->o;
    o.host = "127.0.0.1";
    o.port = 0;
    o.api_key = key;
    o.model_name = "tiny";
    o.parallel = parallel;
    o.max_tokens = sh->max_tokens;
    o.max_queue = max_queue;
    o.max_body = 64 * 1024;
    if (jr_server_start(&srv, &o)) return -1;
    port = jr_server_port(srv);
    snprintf(base, sizeof base, "http://127.0.0.1:%d", port);
    /* before the model is set: loading */
    char *r = NULL;
    int h = http("GET", "/health", NULL, NULL, &r), c503 = http("POST", "/v1/completions", "{}", key ? "Authorization: Bearer sekret" : NULL, NULL);
    if (h != 503 || c503 != 503 || !strstr(r, "loading")) { printf("  /health before the model: %d, completions %d\n", h, c503); free(r); return -1; }
    free(r);
    jr_serve_backend b = {0};
    b.lm = &lm;
    b.vocab.tb = (jr_token_bytes){NV, tok_bytes, tok_len};
    b.vocab.eos = eos_ids;
    b.vocab.n_eos = 1;
    b.encode = bt_encode;
    b.encode_chat = bt_chat;
    return jr_server_set_backend(srv, &b) ? -1 : 0;
}

static int start(int parallel, int max_queue, const char *key) {
    server_shape sh = {32, 2, 384, 300, {0}};
    return start_shaped(parallel, max_queue, key, &sh);
}

static void stop(void) {
    jr_server_stop(srv, 5);
    jr_kv_lm_close(&lm);
    jr_model_free(&model);
}

/* ---- cases ---------------------------------------------------------------------------------- */

TEST(health_models_metrics) {
    char *r;
    CHECK(http("GET", "/health", NULL, NULL, NULL) == 200);
    CHECK(http("GET", "/v1/models", NULL, NULL, &r) == 200);
    CHECK(strstr(r, "\"id\":\"tiny\"") != NULL);
    free(r);
    CHECK(http("GET", "/metrics", NULL, NULL, &r) == 200);
    CHECK(strstr(r, "judgerl_requests_total{status=\"200\"}") && strstr(r, "judgerl_request_latency_seconds_bucket"));
    free(r);
}

TEST(chat_non_stream_shape_and_usage) {
    int st;
    json_t *j = post_json("/v1/chat/completions",
                          "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":12,\"seed\":5}", &st);
    CHECK(st == 200 && j);
    if (!j) return;
    CHECK_STR(json_string_value(json_object_get(j, "object")), "chat.completion");
    json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
    CHECK_STR(json_string_value(json_object_get(json_object_get(ch, "message"), "role")), "assistant");
    CHECK(choice_text(j, 0, 1) != NULL);
    const char *fr = json_string_value(json_object_get(ch, "finish_reason"));
    CHECK(fr && (!strcmp(fr, "stop") || !strcmp(fr, "length")));
    json_t *u = json_object_get(j, "usage");
    /* <|user|> h i <|eos|> <|assistant|> = 5 prompt tokens */
    CHECK(json_integer_value(json_object_get(u, "prompt_tokens")) == 5);
    int ct = (int)json_integer_value(json_object_get(u, "completion_tokens"));
    CHECK(ct >= 1 && ct <= 12);
    CHECK(json_integer_value(json_object_get(u, "total_tokens")) == 5 + ct);
    json_decref(j);
}

/* Concatenates the content deltas of an SSE body; checks framing and the [DONE] line. */
static char *sse_join(const char *body, int chat, int index, int *ok, int *n_chunks, json_t **usage) {
    char *out = calloc(1, 1);
    size_t n = 0;
    *ok = 1;
    *n_chunks = 0;
    const char *p = body;
    int done = 0;
    while (*p) {
        const char *e = strstr(p, "\n\n");
        if (!e || strncmp(p, "data: ", 6)) { *ok = 0; break; }
        if (!strncmp(p, "data: [DONE]", 12)) { done = 1; p = e + 2; continue; }
        if (done) *ok = 0;
        json_error_t err;
        json_t *j = json_loadb(p + 6, (size_t)(e - p - 6), 0, &err);
        if (!j) { *ok = 0; break; }
        (*n_chunks)++;
        json_t *u = json_object_get(j, "usage");
        if (usage && u && json_is_object(u)) *usage = json_incref(u);
        json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
        if (ch && json_integer_value(json_object_get(ch, "index")) == index) {
            json_t *t = chat ? json_object_get(json_object_get(ch, "delta"), "content") : json_object_get(ch, "text");
            if (json_is_string(t)) {
                size_t k = json_string_length(t);
                out = realloc(out, n + k + 1);
                memcpy(out + n, json_string_value(t), k);
                n += k;
                out[n] = 0;
            }
        }
        json_decref(j);
        p = e + 2;
    }
    if (!done) *ok = 0;
    return out;
}

TEST(stream_equals_non_stream_with_the_same_seed) {
    const char *fmt = "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"tell me\"}],\"max_tokens\":40,"
                      "\"seed\":77,\"temperature\":1.0,\"stream\":%s%s}";
    char body[512];
    snprintf(body, sizeof body, fmt, "false", "");
    int st;
    json_t *j = post_json("/v1/chat/completions", body, &st);
    CHECK(st == 200 && j);
    snprintf(body, sizeof body, fmt, "true", ",\"stream_options\":{\"include_usage\":true}");
    char *r;
    CHECK(http("POST", "/v1/chat/completions", body, NULL, &r) == 200);
    int ok, nch;
    json_t *usage = NULL;
    char *joined = sse_join(r, 1, 0, &ok, &nch, &usage);
    CHECK_MSG(ok, "bad SSE framing: %.300s", r);
    CHECK(nch >= 2);
    if (j) CHECK_STR(joined, choice_text(j, 0, 1));
    CHECK(usage && json_integer_value(json_object_get(usage, "completion_tokens")) ==
                       json_integer_value(json_object_get(json_object_get(j, "usage"), "completion_tokens")));
    json_decref(usage);
    free(joined);
    free(r);
    json_decref(j);
}

TEST(n_choices_and_text_completions_logprobs) {
    int st;
    json_t *j = post_json("/v1/chat/completions",
                          "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":3,\"max_tokens\":8,"
                          "\"logprobs\":true,\"top_logprobs\":2,\"temperature\":1.2}", &st);
    CHECK(st == 200 && json_array_size(json_object_get(j, "choices")) == 3);
    for (int i = 0; i < 3 && j; i++) {
        json_t *ch = json_array_get(json_object_get(j, "choices"), (size_t)i);
        CHECK(json_integer_value(json_object_get(ch, "index")) == i);
        json_t *content = json_object_get(json_object_get(ch, "logprobs"), "content");
        CHECK(json_array_size(content) >= 1);
        json_t *e = json_array_get(content, 0);
        CHECK(json_number_value(json_object_get(e, "logprob")) <= 0);
        CHECK(json_array_size(json_object_get(e, "top_logprobs")) == 2);
        CHECK(json_is_array(json_object_get(e, "bytes")));
    }
    json_decref(j);
    j = post_json("/v1/completions", "{\"model\":\"tiny\",\"prompt\":\"Once upon\",\"max_tokens\":6,\"logprobs\":3,\"ignore_eos\":true}", &st);
    CHECK(st == 200 && j);
    json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
    json_t *lp = json_object_get(ch, "logprobs");
    CHECK(json_array_size(json_object_get(lp, "tokens")) == 6 && json_array_size(json_object_get(lp, "token_logprobs")) == 6);
    CHECK(json_array_size(json_object_get(lp, "text_offset")) == 6 && json_is_object(json_array_get(json_object_get(lp, "top_logprobs"), 0)));
    CHECK_STR(json_string_value(json_object_get(j, "object")), "text_completion");
    CHECK_STR(json_string_value(json_object_get(ch, "finish_reason")), "length");
    CHECK(json_integer_value(json_object_get(json_object_get(j, "usage"), "prompt_tokens")) == 9);
    json_decref(j);
}

TEST(guided_choice_and_regex_from_a_random_model) {
    for (int k = 0; k < 6; k++) {
        int st;
        json_t *j = post_json("/v1/chat/completions",
                              "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"verdict?\"}],\"temperature\":1.5,"
                              "\"n\":2,\"guided_choice\":[\"PASS\",\"FAIL\",\"PARTIAL\"]}", &st);
        CHECK(st == 200);
        for (int i = 0; i < 2 && j; i++) {
            const char *t = choice_text(j, i, 1);
            CHECK_MSG(t && (!strcmp(t, "PASS") || !strcmp(t, "FAIL") || !strcmp(t, "PARTIAL")), "got '%s'", t ? t : "(null)");
        }
        json_decref(j);
    }
    int st;
    json_t *j = post_json("/v1/completions", "{\"model\":\"tiny\",\"prompt\":\"score:\",\"guided_regex\":\"[1-9]/10\"}", &st);
    const char *t = j ? choice_text(j, 0, 0) : NULL;
    CHECK_MSG(st == 200 && t && strlen(t) == 4 && t[0] >= '1' && t[0] <= '9' && !strcmp(t + 1, "/10"), "got '%s'", t ? t : "(null)");
    json_decref(j);
}

/* vLLM >= 0.10.2's dialect: structured_outputs {choice | regex}; under a constraint the reported
 * log-probs are those of the constrained distribution the token was drawn from (every top
 * alternative is an allowed token and their probabilities sum to at most 1). */
TEST(structured_outputs_and_constrained_logprobs) {
    for (int k = 0; k < 4; k++) {
        int st;
        json_t *j = post_json("/v1/chat/completions",
                              "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"verdict?\"}],\"temperature\":1.5,"
                              "\"logprobs\":true,\"top_logprobs\":5,\"structured_outputs\":{\"choice\":[\"Yes\",\"No\",\"Maybe\"]}}", &st);
        const char *t = j ? choice_text(j, 0, 1) : NULL;
        CHECK_MSG(st == 200 && t && (!strcmp(t, "Yes") || !strcmp(t, "No") || !strcmp(t, "Maybe")), "got '%s'", t ? t : "(null)");
        json_t *e = json_array_get(json_object_get(json_object_get(json_array_get(json_object_get(j, "choices"), 0), "logprobs"), "content"), 0);
        json_t *top = json_object_get(e, "top_logprobs");
        /* the byte tokenizer: the first byte is one of Y, N, M */
        CHECK(json_array_size(top) == 3);
        double sum = 0;
        for (size_t i = 0; i < json_array_size(top); i++) {
            const char *tok = json_string_value(json_object_get(json_array_get(top, i), "token"));
            CHECK_MSG(tok && (!strcmp(tok, "Y") || !strcmp(tok, "N") || !strcmp(tok, "M")), "alternative '%s'", tok ? tok : "(null)");
            sum += exp(json_number_value(json_object_get(json_array_get(top, i), "logprob")));
        }
        CHECK_NEAR(sum, 1.0, 1e-4, 0);
        json_decref(j);
    }
    int st;
    json_t *j = post_json("/v1/completions", "{\"model\":\"tiny\",\"prompt\":\"score:\",\"structured_outputs\":{\"regex\":\"[1-9]/10\"}}", &st);
    const char *t = j ? choice_text(j, 0, 0) : NULL;
    CHECK_MSG(st == 200 && t && strlen(t) == 4 && !strcmp(t + 1, "/10"), "got '%s'", t ? t : "(null)");
    json_decref(j);
    /* a JSON schema, in each of its three request forms, always gives JSON of its shape */
    const char *schema = "{\"type\":\"object\",\"properties\":{\"explanation\":{\"type\":\"string\",\"maxLength\":20},"
                         "\"criteria_met\":{\"type\":\"boolean\"}},\"required\":[\"explanation\",\"criteria_met\"]}";
    const char *forms[] = {"\"structured_outputs\":{\"json\":%s}", "\"guided_json\":%s",
                           "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"v\",\"schema\":%s}}"};
    for (int k = 0; k < 6; k++) {
        char field[600], body[900];
        snprintf(field, sizeof field, forms[k % 3], schema);
        snprintf(body, sizeof body, "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"grade\"}],\"temperature\":1.2,%s}", field);
        j = post_json("/v1/chat/completions", body, &st);
        t = j ? choice_text(j, 0, 1) : NULL;
        json_t *v = t ? json_loads(t, 0, NULL) : NULL;
        CHECK_MSG(st == 200 && v && json_is_string(json_object_get(v, "explanation")) && json_is_boolean(json_object_get(v, "criteria_met")) &&
                      json_object_size(v) == 2, "form %d: %d '%s'", k % 3, st, t ? t : "(null)");
        json_decref(v);
        json_decref(j);
    }
    struct { const char *body, *needle; } bad[] = {
        {"\"structured_outputs\":{\"choice\":[\"a\"]},\"guided_choice\":[\"b\"]", "give only one"},
        {"\"structured_outputs\":{\"json\":{\"type\":\"object\",\"patternProperties\":{}}}", "structured_outputs.json: json_schema: keyword 'patternProperties'"},
        {"\"response_format\":{\"type\":\"json_object\"}", "response_format: must be"},
        {"\"guided_json\":{\"type\":\"string\"},\"guided_regex\":\"a\"", "give only one"},
        {"\"structured_outputs\":{\"choice\":[\"a\"],\"regex\":\"b\"}", "give only one"},
        {"\"structured_outputs\":[1]", "must be an object"},
        {"\"structured_outputs\":{\"choice\":[]}", "structured_outputs.choice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char body[512], *r;
        snprintf(body, sizeof body, "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],%s}", bad[i].body);
        int code = http("POST", "/v1/chat/completions", body, NULL, &r);
        CHECK_MSG(code == 400 && strstr(r, bad[i].needle), "case %zu: %d %.200s", i, code, r);
        free(r);
    }
}

/* With the byte tokenizer every byte is a token: a stream of multi-byte characters must still
 * arrive whole in each chunk (a split character would show as U+FFFD). */
TEST(stream_never_splits_utf8_and_stop_token_ids) {
    const char *body = "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream\":true,"
                       "\"temperature\":1.5,\"guided_choice\":[\"\u65e5\u672c\u8a9e\u306e\u6587\",\"\u00e9t\u00e9 \u2713\"]}";
    for (int k = 0; k < 4; k++) {
        char *r;
        CHECK(http("POST", "/v1/chat/completions", body, NULL, &r) == 200);
        int ok, nch;
        char *joined = sse_join(r, 1, 0, &ok, &nch, NULL);
        CHECK(ok);
        CHECK_MSG(!strcmp(joined, "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe6\x96\x87") ||
                  !strcmp(joined, "\xc3\xa9t\xc3\xa9 \xe2\x9c\x93"), "got '%s' in %d chunks", joined, nch);
        free(joined);
        free(r);
    }
    /* stop_token_ids: the byte 'a' (id 97) forced by a bias ends the completion at once */
    int st;
    json_t *j = post_json("/v1/completions", "{\"model\":\"tiny\",\"prompt\":\"q\",\"logit_bias\":{\"97\":100},"
                          "\"stop_token_ids\":[97],\"max_tokens\":10}", &st);
    json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
    CHECK(st == 200 && choice_text(j, 0, 0) && !strcmp(choice_text(j, 0, 0), ""));
    CHECK_STR(json_string_value(json_object_get(ch, "finish_reason")), "stop");
    CHECK(json_integer_value(json_object_get(json_object_get(j, "usage"), "completion_tokens")) == 1);
    json_decref(j);
}

TEST(malformed_requests_get_their_status_and_the_server_stays_up) {
    struct { const char *path, *body; int status; const char *needle; } cases[] = {
        {"/v1/chat/completions", "{\"model\":\"tiny\",\"messages\":[", 400, "invalid JSON"},
        {"/v1/chat/completions", "[1,2]", 400, "JSON object"},
        {"/v1/chat/completions", "{\"model\":\"tiny\",\"messages\":\"hi\"}", 400, "messages"},
        {"/v1/chat/completions", "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"max_tokens\":-1}", 400, "max_tokens"},
        {"/v1/chat/completions", "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"temperature\":\"hot\"}", 400, "temperature"},
        {"/v1/chat/completions", "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"n\":99}", 400, "\"n:"},
        {"/v1/chat/completions", "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"max_tokens\":5000}", 400, "max_tokens"},
        {"/v1/chat/completions", "{\"model\":\"gpt-5\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"}]}", 404, "does not exist"},
        {"/v1/chat/completions", "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"guided_regex\":\"(\"}", 400, "guided_regex"},
        {"/v1/completions", "{\"model\":\"tiny\",\"prompt\":[1,2,99999]}", 400, "prompt"},
        {"/v1/completions", "{\"model\":\"tiny\",\"prompt\":\"a\",\"logprobs\":true}", 400, "logprobs"},
        {"/v1/nothing", "{}", 404, "no route"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *r;
        int st = http("POST", cases[i].path, cases[i].body, NULL, &r);
        json_t *j = json_loads(r, 0, NULL);
        json_t *msg = json_object_get(json_object_get(j, "error"), "message");
        CHECK_MSG(st == cases[i].status && json_is_string(msg), "case %zu: status %d body %.200s", i, st, r);
        if (json_is_string(msg) && strcmp(cases[i].needle, "\"n:") == 0) CHECK(strncmp(json_string_value(msg), "n:", 2) == 0);
        else if (json_is_string(msg)) CHECK_MSG(strstr(json_string_value(msg), cases[i].needle), "case %zu: %s", i, json_string_value(msg));
        json_decref(j);
        free(r);
    }
    /* context: a prompt of 380 bytes + 10 tokens does not fit 384 positions */
    char big[1024];
    memset(big, 'a', 380);
    big[380] = 0;
    char body[1200];
    snprintf(body, sizeof body, "{\"model\":\"tiny\",\"prompt\":\"%s\",\"max_tokens\":10}", big);
    char *r;
    CHECK(http("POST", "/v1/completions", body, NULL, &r) == 400 && strstr(r, "maximum context length"));
    free(r);
    /* oversized body: 413 */
    size_t n = 100 * 1024;
    char *huge = malloc(n + 1);
    memset(huge, ' ', n);
    huge[n] = 0;
    huge[0] = '{';
    huge[n - 1] = '}';
    CHECK(http("POST", "/v1/chat/completions", huge, NULL, &r) == 413);
    free(r);
    free(huge);
    CHECK(http("GET", "/v1/chat/completions", NULL, NULL, NULL) == 405);
    CHECK(http("GET", "/health", NULL, NULL, NULL) == 200);
    int st;
    json_t *j = post_json("/v1/completions", "{\"model\":\"tiny\",\"prompt\":\"still up\",\"max_tokens\":3}", &st);
    CHECK(st == 200);
    json_decref(j);
}

typedef struct { const char *body; int status; char *resp; } conc;
static const char *auth_header;

static void *conc_main(void *a) {
    conc *c = a;
    c->status = http("POST", "/v1/completions", c->body, auth_header, &c->resp);
    return NULL;
}


/* The catastrophic pattern of the issue ((a+)+b, the model pushed to 'a' by logit_bias) returns a
 * 400 naming the cause in well under 2 s (PCRE2's match limit), and the server stays up. */
TEST(catastrophic_guided_regex_returns_400_quickly) {
    /* the server runs in this process: its CPU time for the request does not depend on the machine's
     * load, so the 2 s bound is checked on CPU time (wall time only against a hang) */
    struct timespec t0, t1, c0, c1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    char *r = NULL;
    int st = http("POST", "/v1/completions",
                  "{\"model\":\"tiny\",\"prompt\":\"x\",\"max_tokens\":40,\"guided_regex\":\"(a+)+b\",\"ignore_eos\":true,"
                  "\"logit_bias\":{\"97\":100}}", NULL, &r);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    double cpu = (double)(c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) * 1e-9;
    /* refused by the match limit ("backtracks"), or on a loaded machine by the per-step budget first */
    CHECK_MSG(st == 400 && r && (strstr(r, "backtrack") || strstr(r, "too costly")), "status %d: %.300s", st, r ? r : "");
    CHECK_MSG(cpu < 2.0 && took < 30.0, "took %.2f s of CPU, %.2f s of wall time", cpu, took);
    free(r);
    CHECK(http("POST", "/v1/completions", "{\"model\":\"tiny\",\"prompt\":\"ok\",\"max_tokens\":3,\"guided_regex\":\"[ab]+\"}", NULL, NULL) == 200);
}

/* A logit_bias id outside the vocabulary is a 400 naming it, not silently ignored. */
TEST(logit_bias_out_of_range_is_400) {
    char *r = NULL;
    int st = http("POST", "/v1/completions", "{\"model\":\"tiny\",\"prompt\":\"x\",\"max_tokens\":2,\"logit_bias\":{\"1000000000\":5}}", NULL, &r);
    CHECK_MSG(st == 400 && r && strstr(r, "logit_bias: token id 1000000000 is not below the vocabulary size"), "%d %.300s", st, r ? r : "");
    free(r);
    char body[200];
    snprintf(body, sizeof body, "{\"model\":\"tiny\",\"prompt\":\"x\",\"max_tokens\":2,\"logit_bias\":{\"%d\":5}}", NV - 1);
    CHECK(http("POST", "/v1/completions", body, NULL, NULL) == 200);
}

TEST(seeded_same_alone_and_concurrent_and_queue_full_429) {
    const char *mine = "{\"model\":\"tiny\",\"prompt\":\"seeded\",\"max_tokens\":30,\"seed\":42,\"ignore_eos\":true}";
    int st;
    json_t *alone = post_json("/v1/completions", mine, &st);
    CHECK(st == 200);
    enum { K = 12 };
    conc c[K];
    pthread_t th[K];
    char bodies[K][200];
    for (int k = 0; k < K; k++) {
        if (k == 5) c[k].body = mine;
        else {
            snprintf(bodies[k], sizeof bodies[k], "{\"model\":\"tiny\",\"prompt\":\"other %d\",\"max_tokens\":%d,\"ignore_eos\":true}", k, 20 + 7 * k);
            c[k].body = bodies[k];
        }
        pthread_create(&th[k], NULL, conc_main, &c[k]);
    }
    int n429 = 0, n200 = 0;
    for (int k = 0; k < K; k++) {
        pthread_join(th[k], NULL);
        if (c[k].status == 429) n429++;
        if (c[k].status == 200) n200++;
        if (k == 5 && c[k].status == 200) {
            json_t *j = json_loads(c[k].resp, 0, NULL);
            CHECK_STR(choice_text(j, 0, 0), choice_text(alone, 0, 0));
            json_decref(j);
        }
        free(c[k].resp);
    }
    /* 4 slots and a queue of 8: 12 requests at once never all wait; none may fail otherwise */
    CHECK_MSG(n200 + n429 == K, "200: %d, 429: %d", n200, n429);
    json_decref(alone);
}

TEST(api_key_required_on_v1_routes) {
    const char *body = "{\"model\":\"tiny\",\"prompt\":\"k\",\"max_tokens\":2}";
    char *r;
    CHECK(http("POST", "/v1/completions", body, NULL, &r) == 401 && strstr(r, "invalid_api_key"));
    free(r);
    CHECK(http("POST", "/v1/completions", body, "Authorization: Bearer wrong", NULL) == 401);
    CHECK(http("POST", "/v1/completions", body, "Authorization: Bearer sekret-", NULL) == 401);
    CHECK(http("GET", "/v1/models", NULL, NULL, NULL) == 401);
    CHECK(http("POST", "/v1/completions", body, "Authorization: Bearer sekret", NULL) == 200);
    CHECK(http("GET", "/v1/models", NULL, "Authorization: Bearer sekret", NULL) == 200);
    CHECK(http("GET", "/health", NULL, NULL, NULL) == 200);
}

TEST(queue_full_gets_429) {
    enum { K = 8 };
    conc c[K];
    pthread_t th[K];
    for (int k = 0; k < K; k++) {
        c[k].body = "{\"model\":\"tiny\",\"prompt\":\"long\",\"max_tokens\":300,\"ignore_eos\":true}";
        c[k].resp = NULL;
        pthread_create(&th[k], NULL, conc_main, &c[k]);
    }
    int n429 = 0, n200 = 0;
    for (int k = 0; k < K; k++) {
        pthread_join(th[k], NULL);
        n429 += c[k].status == 429;
        n200 += c[k].status == 200;
        if (c[k].status == 429) CHECK(strstr(c[k].resp, "rate_limit_error") != NULL);
        free(c[k].resp);
    }
    CHECK_MSG(n429 >= 1 && n200 >= 1 && n200 + n429 == K, "200: %d, 429: %d", n200, n429);
}


/* ---- robustness: a long generation, deadlines, drain, disconnects, slow clients ------------- */

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char *long_body = "{\"model\":\"tiny\",\"prompt\":\"x\",\"n\":4,\"max_tokens\":2000,\"ignore_eos\":true}";

/* A value of /metrics (-1 when /metrics did not answer or lacks it). */
static double metric(const char *name) {
    char *r = NULL, key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    int st = http("GET", "/metrics", NULL, NULL, &r);
    const char *p = st == 200 ? strstr(r, key) : NULL;
    double v = p ? atof(p + strlen(key)) : -1;
    free(r);
    return v;
}

/* judgerl_requests_in_flight from /metrics (-1 when /metrics did not answer). */
static int in_flight(void) { return (int)metric("judgerl_requests_in_flight"); }

static int wait_in_flight(int want, double seconds) {
    double until = mono() + seconds;
    int n;
    while ((n = in_flight()) != want && mono() < until) usleep(20000);
    return n == want;
}

/* A long request on its own thread; timeout_ms bounds it against a hang; setting hang_up makes the
 * client close its connection (a state the test chooses, not a time). */
typedef struct { long timeout_ms; int status; char *resp; double took; volatile int hang_up; } long_call;

static int hang_up_when_asked(void *a, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
    (void)dt; (void)dn; (void)ut; (void)un;
    return ((long_call *)a)->hang_up; /* non-zero: curl aborts the transfer and closes the connection */
}

static void *long_main(void *a) {
    long_call *c = a;
    CURL *h;
    buf b = {calloc(1, 1), 0};
    struct curl_slist *hd;
    double t0 = mono();
    h = mk("POST", "/v1/completions", long_body, strlen(long_body), NULL, &b, &hd);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, hang_up_when_asked);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    long code = -1;
    if (curl_easy_perform(h) == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    c->status = (int)code;
    c->resp = b.p;
    c->took = mono() - t0;
    return NULL;
}

/* With a 4 x 2,000-token generation running, /health and /metrics answer at once (the batching
 * thread does not hold the server lock across a decode step); a client that hangs up has its
 * request cancelled (it never finishes: no completion tokens are counted for it). The client hangs
 * up once the checks are done (a state, not a time window: a fast CPU cannot finish first). */
TEST(health_answers_during_a_long_generation_and_disconnect_cancels) {
    long_call lc = {120000, 0, NULL, 0, 0};
    double tokens0 = metric("judgerl_completion_tokens_total");
    pthread_t th;
    pthread_create(&th, NULL, long_main, &lc);
    CHECK_MSG(wait_in_flight(1, 30), "the long request never started");
    double worst = 0, lat[5];
    long saved = http_timeout_ms;
    http_timeout_ms = 2000;
    for (int k = 0; k < 5; k++) {
        double t0 = mono();
        CHECK(http("GET", "/health", NULL, NULL, NULL) == 200);
        lat[k] = mono() - t0;
        if (lat[k] > worst) worst = lat[k];
        usleep(50000);
    }
    http_timeout_ms = saved;
    /* the median of 5 (one may lose the CPU to another process on a loaded machine) */
    for (int a = 0; a < 5; a++)
        for (int b = a + 1; b < 5; b++)
            if (lat[b] < lat[a]) { double t = lat[a]; lat[a] = lat[b]; lat[b] = t; }
    CHECK_MSG(lat[2] < 0.1, "/health took %.3f s (median of 5; worst %.3f s) while the generation ran", lat[2], worst);
    CHECK_MSG(in_flight() == 1, "the generation should still be running (make it longer)");
    lc.hang_up = 1;
    pthread_join(th, NULL);
    CHECK_MSG(lc.status == -1, "the client hung up, yet got %d after %.1f s (if 200: the generation is too short on "
              "this CPU; make the model larger)", lc.status, lc.took);
    free(lc.resp);
    /* the hung-up request is cancelled, not run to its end: the slots come back, no tokens counted */
    CHECK_MSG(wait_in_flight(0, 60), "the request of the client that hung up still runs");
    double tokens1 = metric("judgerl_completion_tokens_total");
    CHECK_MSG(tokens0 >= 0 && tokens1 == tokens0, "completion tokens %.0f -> %.0f: the request ran to its end", tokens0, tokens1);
}

TEST(request_timeout_gives_504_and_cancels) {
    long_call lc = {30000, 0, NULL, 0, 0};
    long_main(&lc);
    CHECK_MSG(lc.status == 504 && lc.resp && strstr(lc.resp, "request timeout"), "status %d: %.200s", lc.status, lc.resp ? lc.resp : "");
    CHECK_MSG(lc.took < 5, "the 1 s request timeout answered after %.1f s", lc.took);
    free(lc.resp);
    CHECK(wait_in_flight(0, 2));
}

static double drain_took;
static void *stop_main(void *a) {
    double t0 = mono();
    jr_server_stop(srv, *(double *)a);
    drain_took = mono() - t0;
    return NULL;
}

/* SIGTERM's drain: new requests get 503 at once; running ones are cancelled (503) at the end of the
 * drain timeout, so the server stops in bounded time. (Stops the server.) */
TEST(drain_answers_503_at_once_and_ends_at_its_deadline) {
    long_call lc = {30000, 0, NULL, 0, 0};
    pthread_t th, ts;
    pthread_create(&th, NULL, long_main, &lc);
    CHECK_MSG(wait_in_flight(1, 5), "the long request never started");
    double drain = 1.5;
    pthread_create(&ts, NULL, stop_main, &drain);
    usleep(200000);
    double t0 = mono();
    long saved = http_timeout_ms;
    http_timeout_ms = 3000;
    char *r = NULL;
    int st = http("POST", "/v1/completions", "{\"model\":\"tiny\",\"prompt\":\"late\",\"max_tokens\":2}", NULL, &r);
    double took = mono() - t0;
    http_timeout_ms = saved;
    CHECK_MSG(st == 503 && r && strstr(r, "shutting down"), "during the drain: %d %.200s", st, r ? r : "");
    CHECK_MSG(took < 1.0, "the 503 came after %.2f s", took);
    free(r);
    pthread_join(ts, NULL);
    pthread_join(th, NULL);
    /* bounded by the drain timeout plus one decode step and the connection threads' exit (a wide margin:
     * a loaded machine under ASan may take seconds for that step) */
    CHECK_MSG(drain_took < drain + 15, "stop took %.1f s with a %.1f s drain timeout", drain_took, drain);
    CHECK_MSG(lc.status == 503 && lc.resp && strstr(lc.resp, "drain"), "the running request: %d %.200s", lc.status, lc.resp ? lc.resp : "");
    free(lc.resp);
    jr_kv_lm_close(&lm);
    jr_model_free(&model);
}

/* A TCP connection from a given loopback address (127.0.0.x) to the server; -1 on failure. */
static int connect_from(const char *src) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    inet_pton(AF_INET, src, &a.sin_addr);
    struct sockaddr_in d = {0};
    d.sin_family = AF_INET;
    d.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, "127.0.0.1", &d.sin_addr);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) || connect(fd, (struct sockaddr *)&d, sizeof d)) { close(fd); return -1; }
    return fd;
}

/* 1 when the server closed the connection within `seconds` (recv sees end-of-file or a reset). */
static int closed_by_server(int fd, double seconds, int trickle) {
    struct timeval tv = {0, 200000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    double until = mono() + seconds;
    while (mono() < until) {
        char c[256];
        ssize_t k = recv(fd, c, sizeof c, 0);
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return 1;
        if (trickle && send(fd, "X", 1, MSG_NOSIGNAL) < 0) return 1;
    }
    return 0;
}

/* 300 slowloris connections (headers never finished) from one client address do not stop a normal
 * request from another: the per-client cap refuses most of them and the header deadline closes
 * the rest; a connection trickling one header byte at a time is closed at the deadline. */
TEST(slowloris_connections_do_not_lock_out_a_normal_request) {
    enum { K = 300 };
    int fds[K], opened = 0;
    int probe = connect_from("127.0.0.2");
    if (probe < 0) SKIP("cannot bind a socket to 127.0.0.2 here");
    close(probe);
    for (int k = 0; k < K; k++) {
        fds[k] = connect_from("127.0.0.2");
        if (fds[k] >= 0) {
            opened++;
            send(fds[k], "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Slow: ", 48, MSG_NOSIGNAL);
        }
    }
    CHECK(opened > 250);
    usleep(200000);
    long saved = http_timeout_ms;
    http_timeout_ms = 10000;
    char *r = NULL;
    double t0 = mono();
    int st = http("POST", "/v1/completions", "{\"model\":\"tiny\",\"prompt\":\"normal\",\"max_tokens\":4}", NULL, &r);
    http_timeout_ms = saved;
    CHECK_MSG(st == 200 && r && strstr(r, "\"choices\""), "the normal request: %d after %.1f s %.200s", st, mono() - t0, r ? r : "");
    free(r);
    /* the header deadline (1 s here) closes a connection that sends one byte every 200 ms */
    int fd = connect_from("127.0.0.3");
    CHECK(fd >= 0);
    if (fd >= 0) {
        send(fd, "GET /health HTTP/1.1\r\n", 22, MSG_NOSIGNAL);
        CHECK_MSG(closed_by_server(fd, 6, 1), "a trickling connection was not closed at the header deadline");
        close(fd);
    }
    /* a body that never comes (Content-Length: 100, no bytes) is closed at the body deadline */
    fd = connect_from("127.0.0.4");
    if (fd >= 0) {
        const char *h = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n";
        send(fd, h, strlen(h), MSG_NOSIGNAL);
        CHECK_MSG(closed_by_server(fd, 6, 0), "a connection that never sent its body was not closed at the body deadline");
        close(fd);
    }
    for (int k = 0; k < K; k++)
        if (fds[k] >= 0) close(fds[k]);
}

int main(void) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (start(4, 8, NULL)) { printf("FAIL - start: %s\n", jr_errmsg()); return 1; }
    RUN(health_models_metrics);
    RUN(chat_non_stream_shape_and_usage);
    RUN(stream_equals_non_stream_with_the_same_seed);
    RUN(n_choices_and_text_completions_logprobs);
    RUN(guided_choice_and_regex_from_a_random_model);
    RUN(structured_outputs_and_constrained_logprobs);
    RUN(stream_never_splits_utf8_and_stop_token_ids);
    RUN(malformed_requests_get_their_status_and_the_server_stays_up);
    RUN(catastrophic_guided_regex_returns_400_quickly);
    RUN(logit_bias_out_of_range_is_400);
    RUN(seeded_same_alone_and_concurrent_and_queue_full_429);
    stop();
    /* one slot, a queue of one, and an API key */
    if (start(1, 1, "sekret")) { printf("FAIL - start: %s\n", jr_errmsg()); return 1; }
    RUN(api_key_required_on_v1_routes);
    auth_header = "Authorization: Bearer sekret";
    RUN(queue_full_gets_429);
    stop();
    auth_header = NULL;
    /* a model large enough that 4 x 2,000 tokens take many seconds even on a fast CPU (about 8 s on
     * a 2-core Zen 5; the windows below are 1-2.5 s and a running request is cancelled at their
     * end); tight connection deadlines */
    server_shape big = {384, 8, 2100, 2000, {0}};
    big.o.header_timeout = 1;
    big.o.body_timeout = 1;
    big.o.max_per_client = 16;
    if (start_shaped(4, 8, NULL, &big)) { printf("FAIL - start: %s\n", jr_errmsg()); return 1; }
    RUN(health_answers_during_a_long_generation_and_disconnect_cancels);
    RUN(slowloris_connections_do_not_lock_out_a_normal_request);
    RUN(drain_answers_503_at_once_and_ends_at_its_deadline);
    big.o.request_timeout = 1;
    if (start_shaped(4, 8, NULL, &big)) { printf("FAIL - start: %s\n", jr_errmsg()); return 1; }
    RUN(request_timeout_gives_504_and_cancels);
    stop();
    curl_global_cleanup();
    return jt_done();
}
