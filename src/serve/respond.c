/* respond.c - JSON bodies of the OpenAI API: completions, chunks, log-probs, usage, errors */
#include "serve/respond.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "judgerl/utf8.h"

json_t *jr_json_text(const char *s, size_t n) {
    jr_strbuf b = {0};
    jr_utf8_append_lossy(&b, s, n);
    json_t *j = b.oom ? NULL : json_stringn(b.p ? b.p : "", b.n);
    jr_strbuf_free(&b);
    return j;
}

static const char *error_type(int status) {
    switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 413: return "invalid_request_error";
    case 429: return "rate_limit_error";
    case 503: return "service_unavailable";
    default: return status >= 500 ? "internal_error" : "invalid_request_error";
    }
}

char *jr_error_body(int status, const char *message, const char *code) {
    json_t *e = json_pack("{s:{s:o,s:s,s:n,s:o}}", "error", "message", jr_json_text(message, strlen(message)), "type",
                          error_type(status), "param", "code", code ? json_string(code) : json_null());
    if (!e) return NULL;
    char *s = json_dumps(e, JSON_COMPACT);
    json_decref(e);
    return s;
}

static double lp_value(float x) { return isfinite(x) ? (double)x : -9999.0; }

static const char *tok_bytes(const jr_gen_vocab *v, int32_t id, size_t *len) {
    if (id < 0 || id >= v->tb.n || !v->tb.bytes[id]) { *len = 0; return ""; }
    *len = (size_t)v->tb.len[id];
    return v->tb.bytes[id];
}

static json_t *bytes_array(const char *b, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, json_integer((unsigned char)b[i]));
    return a;
}

static json_t *chat_entry(const jr_gen_vocab *v, int32_t id, float lp) {
    size_t n;
    const char *b = tok_bytes(v, id, &n);
    return json_pack("{s:o,s:f,s:o}", "token", jr_json_text(b, n), "logprob", lp_value(lp), "bytes", bytes_array(b, n));
}

json_t *jr_chat_logprobs(const jr_gen_seq *s, const jr_gen_vocab *v, int from, int to) {
    json_t *content = json_array();
    for (int k = from; k < to; k++) {
        json_t *e = chat_entry(v, s->tokens[k], s->raw_logprobs ? s->raw_logprobs[k] : 0);
        json_t *top = json_array();
        for (int c = 0; c < s->top_k; c++) {
            int32_t id = s->top_ids[(size_t)k * (size_t)s->top_k + (size_t)c];
            if (id >= 0) json_array_append_new(top, chat_entry(v, id, s->top_lps[(size_t)k * (size_t)s->top_k + (size_t)c]));
        }
        json_object_set_new(e, "top_logprobs", top);
        json_array_append_new(content, e);
    }
    return json_pack("{s:o}", "content", content);
}

json_t *jr_text_logprobs(const jr_gen_seq *s, const jr_gen_vocab *v, int from, int to, size_t offset0) {
    json_t *tokens = json_array(), *lps = json_array(), *tops = json_array(), *offs = json_array();
    for (int k = from; k < to; k++) {
        size_t n;
        const char *b = tok_bytes(v, s->tokens[k], &n);
        json_array_append_new(tokens, jr_json_text(b, n));
        json_array_append_new(lps, json_real(lp_value(s->raw_logprobs ? s->raw_logprobs[k] : 0)));
        json_array_append_new(offs, json_integer((json_int_t)(offset0 + s->tok_off[k])));
        if (s->top_k > 0) {
            json_t *d = json_object();
            for (int c = 0; c < s->top_k; c++) {
                int32_t id = s->top_ids[(size_t)k * (size_t)s->top_k + (size_t)c];
                if (id < 0) continue;
                const char *tb = tok_bytes(v, id, &n);
                json_t *key = jr_json_text(tb, n);
                if (key && !json_object_get(d, json_string_value(key)))
                    json_object_set_new(d, json_string_value(key), json_real(lp_value(s->top_lps[(size_t)k * (size_t)s->top_k + (size_t)c])));
                json_decref(key);
            }
            json_array_append_new(tops, d);
        } else {
            json_array_append_new(tops, json_null());
        }
    }
    return json_pack("{s:o,s:o,s:o,s:o}", "tokens", tokens, "token_logprobs", lps, "top_logprobs", tops, "text_offset", offs);
}

json_t *jr_usage(int prompt_tokens, int completion_tokens) {
    return json_pack("{s:i,s:i,s:i}", "prompt_tokens", prompt_tokens, "completion_tokens", completion_tokens, "total_tokens",
                     prompt_tokens + completion_tokens);
}
